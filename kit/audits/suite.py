"""Notebook 06's steps: load what a config names and run each metric family on it.

Each step returns ``AuditResult``s plus whatever its figures need, so the notebook stays a
sequence of calls. Works for the tiny world (``zoo/...`` + ``zoo-sae/...``), for the real profiles
(``real/smollm2-135m-instruct`` + ``real-sae/...`` SAEs trained here on its own activations,
:mod:`kit.audits.real_saes`) and for the paper profile (``gpt2`` + ``gpt2-small-res-jb/...`` SAEs,
Wang et al.'s heads). Here: the SAEs and prompts, the SAE family, M09, EX25, M14 and which audits
a config can run; the circuit family (IOI items, the circuit and its audits) is
:mod:`kit.audits.circuit_family`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from kit.core.progress import progress_bar
from kit.models import tl
from kit.models.identity import cache_identity

from . import circuits, sae_validity, saebench, safety, stability, step_cache, superposition
from .activations import TokenActivations, sae_features, sae_hook, token_activations
from .circuit_family import CircuitContext
from .result import AuditInputs, AuditResult, not_run

_SAE_NAME = re.compile(r"^(?P<prefix>.*/)(?P<arch>[a-z_]+?)-(?P<width>\d+)$")


def choose_saes(
    available: list[str],
    model: str,
    arch_a: str | None = None,
    arch_b: str | None = None,
    small: str | None = None,
    large: str | None = None,
) -> dict[str, str]:
    """Pick the four SAE roles from world SAE names like ``zoo-sae/base-m/topk-512``:
    ``arch_a``/``arch_b`` two architectures at one width (M07), ``small``/``large`` one
    architecture at two widths (M11). Explicit names win; otherwise chosen among the SAEs of
    ``model``'s member (``zoo/base-m`` -> ``zoo-sae/base-m/...``)."""
    from kit.models.sources import form_of

    form = form_of(model)
    member = form.rest(model) if form.world_member else model
    mine = [n for n in available if f"/{member}/" in n and _SAE_NAME.match(n)]
    parsed = [(n, m["arch"], int(m["width"])) for n in mine if (m := _SAE_NAME.match(n))]
    out: dict[str, str] = {}
    if not (arch_a and arch_b):
        pairs = [(a, b) for a in parsed for b in parsed if a[2] == b[2] and a[1] < b[1]]
        if not pairs and not (arch_a and arch_b):
            raise ValueError(
                f"no two SAEs of different architectures at one width for {model} among "
                f"{available}; "
                "set sae_arch_a and sae_arch_b"
            )
        a, b = sorted(pairs, key=lambda p: p[0][2])[0]
        arch_a, arch_b = arch_a or a[0], arch_b or b[0]
    if not (small and large):
        pairs = [(a, b) for a in parsed for b in parsed if a[1] == b[1] and a[2] < b[2]]
        if not pairs:
            raise ValueError(
                f"no two SAEs of one architecture at two widths for {model} among {available}; "
                "set sae_small and sae_large"
            )
        a, b = pairs[0]
        small, large = small or a[0], large or b[0]
    out.update(arch_a=arch_a, arch_b=arch_b, small=small, large=large)
    return out


def task_prompts(tasks: list[str], n: int, max_chars: int = 400) -> tuple[list[str], list[str]]:
    """Prompts of each source (a world task's test items, or an ``hf:`` dataset column, see
    :mod:`kit.audits.sources`) and each prompt's source."""
    from .sources import source_prompts

    prompts, labels = [], []
    for t in tasks:
        p = source_prompts(t, n, max_chars=max_chars, field="sae_tasks")
        prompts += p
        labels += [t] * len(p)
    return prompts, labels


# ------------------------------------------------------------------ SAE family
@dataclass
class SAEContext:
    model_name: str
    hook: str
    saes: dict[str, Any]
    names: dict[str, str]
    ta: TokenActivations
    labels: list[str]
    extra: dict[str, Any] = field(default_factory=dict)
    model_identity: str | None = None
    """The model's content identity (:func:`kit.models.identity.cache_identity`): the audit
    cache's key; None: the steps are computed every time."""

    @property
    def acts(self) -> torch.Tensor:
        return self.ta.acts[self.hook]

    def cache_key(
        self, roles: tuple[str, ...] | None = None
    ) -> tuple[list[torch.Tensor], dict[str, Any]]:
        """The tensors and plain inputs that make these activations (and the SAEs of ``roles``;
        None: all) part of an audit cache key (:func:`kit.audits.step_cache.step_path`)."""
        ta = self.ta
        saes = {r: self.saes[r] for r in (sorted(self.saes) if roles is None else roles)}
        tensors = [ta.token_ids, ta.prompt_index, ta.position, *step_cache.sae_tensors(saes)]
        names = {r: self.names[r] for r in saes}
        return tensors, {
            "model": self.model_name,  # results name it
            "hook": self.hook,
            "labels": self.labels,
            "saes": names,
        }

    def cache_path(self, step: str, cfg, roles: tuple[str, ...] | None = None) -> Path | None:
        """Where ``step``'s results on these activations (and SAEs) are cached."""
        tensors, extra = self.cache_key(roles)
        return step_cache.step_path(step, [self.model_identity], cfg, tensors, extra)

    def inputs(self, *roles: str, **extra: Any) -> AuditInputs:
        return AuditInputs(
            model=self.model_name,
            hook=self.hook,
            sae=[self.names[r] for r in roles],
            task="+".join(sorted(set(self.labels))),
            n=self.ta.n_tokens,
            extra=extra,
        )


def sae_context(
    model,
    model_name: str,
    saes: dict[str, Any],
    names: dict[str, str],
    prompts: list[str],
    labels: list[str],
    hook: str | None = None,
    all_layers: bool = True,
) -> SAEContext:
    """Token activations of ``prompts`` at the SAEs' hook (and every layer's resid_post for M13)."""
    hook = hook or sae_hook(next(iter(saes.values())))
    hooks = [hook] + (
        [f"blocks.{L}.hook_resid_post" for L in range(model.cfg.n_layers)] if all_layers else []
    )
    hooks = list(dict.fromkeys(hooks))
    ta = token_activations(model, prompts, hooks)
    ident = cache_identity(model)
    return SAEContext(model_name, hook, saes, names, ta, labels, model_identity=ident)


def run_sae_audits(ctx: SAEContext, model, cfg) -> tuple[list[AuditResult], dict[str, Any]]:
    """M07, M08, M10, M11, M12, M13, EX24, EX34 on the context's real SAE features, with their
    nulls; cached by content (:mod:`kit.audits.step_cache`)."""
    value = step_cache.cached(
        ctx.cache_path("sae", cfg),
        lambda: {"results": step_cache.dump_results(_sae_audits(ctx, model, cfg))},
        step_cache.results_schema(metrics=("M11", "M13")),
    )
    out = step_cache.load_results(value["results"])
    m11, m13 = (next(r for r in out if r.metric == m) for m in ("M11", "M13"))
    return out, {"m11": m11, "m13": m13}


@dataclass
class SAEFamily:
    """The SAE audits of one model (:func:`sae_family`): M07, M08, M10, M11, M12 (both SAEs),
    M13, EX24, EX34 (``results``, :func:`run_sae_audits`' order), M09, the activations they read
    and the figures' inputs."""

    model_name: str
    names: dict[str, str]
    """The SAE of each role."""
    ctx: SAEContext
    results: list[AuditResult]
    art: dict[str, Any]
    m09: AuditResult

    @property
    def all_results(self) -> list[AuditResult]:
        """``results`` then M09 (the order of the notebook's summary)."""
        return [*self.results, self.m09]


def sae_family(
    model, model_name: str, names: dict[str, str], saes: dict[str, Any], cfg
) -> SAEFamily:
    """The SAE audits of ``model`` with ``saes`` (roles as :func:`load_saes` returns them): the
    prompts of ``cfg.sae_tasks``, their activations, :func:`run_sae_audits` and :func:`run_m09`.
    The one call per model: the audited model's and ``second_model``'s
    (:func:`second_model_family`)."""
    prompts, labels = task_prompts(cfg.sae_tasks, cfg.n_prompts_per_task, cfg.hf_max_chars)
    ctx = sae_context(model, model_name, saes, names, prompts, labels, hook=cfg.hook)
    results, art = run_sae_audits(ctx, model, cfg)
    return SAEFamily(model_name, names, ctx, results, art, run_m09(ctx, cfg))


def second_model_family(cfg) -> SAEFamily | None:
    """:func:`sae_family` on ``cfg.second_model`` (loaded, its SAEs trained on first use for
    ``real-sae/`` names) with every other field of ``cfg``; ``None`` without a second model."""
    second = cfg.second_config()
    if second is None:
        return None
    from kit.models import load_model

    model = load_model(second.model, device=second.device, world=second.world)
    names, saes = load_saes(second, model)
    return sae_family(model, second.model, names, saes, second)


def _sae_audits(ctx: SAEContext, model, cfg) -> list[AuditResult]:
    r = _sae_metrics(ctx.saes, ctx, model, cfg)
    roles = {
        "M07": ("arch_a", "arch_b"),
        "M08": ("arch_a",),
        "M10": ("arch_a",),
        "M11": ("small", "large"),
        "EX34": ("arch_a",),
    }
    extra = {
        "M08": {"side": cfg.weightlens_side, "top_k": cfg.weightlens_top_k},
        "M10": {"window": cfg.prism_window},
        "M11": {"absorption": cfg.matryoshka_absorption},
        "M12": {"threshold": cfg.mismatch_threshold},
    }
    for metric, rs in r.items():
        for res, role in zip(rs, roles.get(metric, ("arch_a", "arch_b"))):
            res.inputs = ctx.inputs(*roles.get(metric, (role,)), **extra.get(metric, {}))
    for res, role in zip(r["M12"], ("arch_a", "arch_b")):
        res.name = f"Adaptive sparsity ({ctx.names[role].split('/')[-1]})"
    layer_hooks = [h for h in ctx.ta.acts if h.endswith("hook_resid_post")]
    m13 = superposition.superposition_regime(
        {h: ctx.ta.acts[h] for h in layer_hooks},
        ctx.ta.token_ids,
        n_directions=cfg.m13_directions,
        seed=cfg.seed,
        inputs=AuditInputs(
            model=ctx.model_name, hook="blocks.*.hook_resid_post", n=ctx.ta.n_tokens
        ),
    )
    m11 = r["M11"][0]
    out = r["M07"] + r["M08"] + r["M10"] + [m11] + r["M12"] + [m13, ex24(ctx, cfg)] + r["EX34"]
    attach_untrained_nulls(out, ctx, model, cfg)
    return out


def _sae_metrics(saes: dict[str, Any], ctx: SAEContext, model, cfg) -> dict[str, list[AuditResult]]:
    """M07, M08, M10, M11, M12 (both SAEs), EX34 on ``saes`` (the same calls as
    :func:`run_sae_audits`)."""
    acts, seed = ctx.acts, cfg.seed
    W_U = tl.unembed(model).detach()
    target = ctx.ta.next_ids if cfg.weightlens_side == "next" else ctx.ta.token_ids
    return {
        "M07": [sae_validity.architecture_duality(saes["arch_a"], saes["arch_b"], acts)],
        "M08": [
            sae_validity.weightlens(
                saes["arch_a"],
                acts,
                target,
                W_U,
                top_k=cfg.weightlens_top_k,
                n_features=cfg.n_features,
                seed=seed,
            )
        ],
        "M10": [
            sae_validity.prism(
                saes["arch_a"],
                acts,
                ctx.ta.prompt_index,
                ctx.ta.position,
                n_features=cfg.n_features,
                top_n=cfg.prism_top_n,
                window=cfg.prism_window,
                threshold=cfg.prism_threshold,
                seed=seed,
            )
        ],
        "M11": [
            sae_validity.matryoshka(
                saes["small"],
                saes["large"],
                acts,
                top_k=cfg.matryoshka_top_k,
                min_corr=cfg.matryoshka_min_corr,
                absorption=cfg.matryoshka_absorption,
                chunk=cfg.matryoshka_chunk,
            )
        ],
        "M12": [
            sae_validity.adaptive_sparsity(saes[r], acts, threshold=cfg.mismatch_threshold)
            for r in ("arch_a", "arch_b")
        ],
        "EX34": [
            sae_validity.nla_sae_convergence(
                saes["arch_a"],
                acts,
                W_U,
                n_features=min(cfg.n_features, cfg.nla_features),
                top_k=cfg.nla_top_k,
                top_tokens=cfg.weightlens_top_k,
                seed=seed,
            )
        ],
    }


def attach_untrained_nulls(results: list[AuditResult], ctx: SAEContext, model, cfg) -> None:
    """Null of M07, M08, M10, M11, M12, EX34: the same metric on untrained copies of every SAE
    (:func:`kit.audits.saebench.random_like`), ``cfg.n_null_seeds`` seeds; in place."""
    runs: dict[str, list[list[AuditResult]]] = {}
    for i in progress_bar(range(cfg.n_null_seeds), desc="untrained-SAE nulls", unit="seed"):
        seed = cfg.seed + 1 + i
        rand = {
            role: saebench.random_like(sae, seed=seed + 1000 * k)
            for k, (role, sae) in enumerate(ctx.saes.items())
        }
        for metric, rs in _sae_metrics(rand, ctx, model, cfg).items():
            runs.setdefault(metric, []).append(rs)
    seen: dict[str, int] = {}
    for r in results:
        if r.metric not in runs:
            continue
        j = seen.get(r.metric, 0)
        seen[r.metric] = j + 1
        nulls = [rs[j] for rs in runs[r.metric]]
        r.with_null(
            [n.value for n in nulls],
            f"untrained copies of the SAEs (random_like), {len(nulls)} seeds",
            passed=None if r.diagnostic else all(n.passed for n in nulls),
        )


def ex24(ctx: SAEContext, cfg) -> AuditResult:
    """EX24 with SAEBench's k-sparse probe on the prompts' last-token SAE features: trained SAE
    vs an untrained copy of it (``random_like``), ``n_reseeds`` reseeds each."""
    a, b = cfg.probe_tasks
    rows = ctx.ta.last_token_rows()
    labels = np.asarray(ctx.labels)
    keep = np.flatnonzero((labels == a) | (labels == b))
    if len(keep) < 10:
        raise ValueError(
            f"probe_tasks {cfg.probe_tasks}: need prompts of both tasks among "
            f"{sorted(set(ctx.labels))}"
        )
    y = (labels[keep] == b).astype(int)
    x = ctx.acts[rows[keep]]
    sae = ctx.saes["arch_a"]
    trained = _probe_runs(sae, x, y, cfg)
    control = _probe_runs(saebench.random_like(sae, seed=cfg.seed), x, y, cfg)
    return saebench.saebench_audit(
        trained,
        control,
        metric_name=f"{cfg.probe_k}-sparse probe accuracy ({a} vs {b})",
        inputs=ctx.inputs(
            "arch_a", control="untrained copy", k=cfg.probe_k, n_reseeds=cfg.n_reseeds
        ),
    )


def _probe_runs(sae, x, y, cfg) -> list[float]:
    """Sparse-probe accuracy of ``sae``'s features of ``x`` over ``cfg.n_reseeds`` reseeds."""
    return saebench.probe_reseeds(
        sae_features(sae, x), y, cfg.n_reseeds, k=cfg.probe_k, seed=cfg.seed
    )


def testability(cfg) -> pd.DataFrame:
    """One row per audit of seed 003: ``metric``, ``testable`` and the ``cause`` when it is not,
    from :meth:`Config.not_testable` (the same causes the claims print)."""
    from .claims import DIRECTION

    causes = cfg.not_testable()
    metrics = [*DIRECTION, "EX24"]
    return pd.DataFrame(
        {
            "metric": metrics,
            "testable": [m not in causes for m in metrics],
            "cause": [causes.get(m, "") for m in metrics],
        }
    )


# ------------------------------------------------------------------ stability / safety
def run_m09(ctx: SAEContext, cfg) -> AuditResult:
    """M09: SAEs retrained on the context's activations (cached by content)."""
    value = step_cache.cached(
        ctx.cache_path("m09", cfg, roles=()),
        lambda: {"results": step_cache.dump_results([_m09(ctx, cfg)])},
        step_cache.results_schema(n=1),
    )
    return step_cache.load_results(value["results"])[0]


def _m09(ctx: SAEContext, cfg) -> AuditResult:
    acts = ctx.acts
    g = torch.Generator().manual_seed(cfg.seed)
    if acts.shape[0] > cfg.m09_max_tokens:
        acts = acts[torch.randperm(acts.shape[0], generator=g)[: cfg.m09_max_tokens]]
    return stability.core_stability(
        acts,
        d_sae=cfg.m09_d_sae,
        n_cycles=cfg.m09_cycles,
        core_frac=cfg.m09_core_frac,
        steps=cfg.m09_steps,
        l1=cfg.m09_l1,
        seed=cfg.seed,
        device=cfg.device,
        inputs=AuditInputs(
            model=ctx.model_name,
            hook=ctx.hook,
            n=acts.shape[0],
            seeds=[cfg.seed],
            extra={"sae": "SAELens StandardTrainingSAE trained here", "l1": cfg.m09_l1},
        ),
    )


def run_ex25(
    model,
    model_name: str,
    cc: CircuitContext,
    ctx: SAEContext,
    cfg,
    circuit_model=None,
    circuit_model_name: str | None = None,
) -> list[AuditResult]:
    """EX25 on (a) the circuit's per-prompt logit diff with mean-ablation means from seeded
    reference subsamples (on ``circuit_model``, default ``model``), (b) our MUI pipeline per task,
    (c) our CG X_bench per concept. Cached by content (:mod:`kit.audits.step_cache`)."""
    cmodel = model if circuit_model is None else circuit_model
    tensors, extra = ctx.cache_key(("arch_a",))
    c_tensors, c_extra = cc.cache_key()
    path = step_cache.step_path(
        "ex25",
        [ctx.model_identity, cache_identity(cmodel)],
        cfg,
        tensors + c_tensors,
        {**extra, "circuit": c_extra, "names": [model_name, circuit_model_name]},
    )
    value = step_cache.cached(
        path,
        lambda: {
            "results": step_cache.dump_results(
                _ex25(model, model_name, cc, ctx, cfg, cmodel, circuit_model_name)
            )
        },
    )
    return step_cache.load_results(value["results"])


def _ex25(
    model, model_name: str, cc: CircuitContext, ctx: SAEContext, cfg, cmodel, circuit_model_name
) -> list[AuditResult]:
    seeds = [cfg.seed + i for i in range(cfg.ex25_runs)]
    ids = cc.batch.ids
    pos = {i: k for k, i in enumerate(ids)}

    def circuit_run(seed: int) -> dict[str, float]:
        sub = stability.subsample_ids(ids, cfg.ex25_subsample, seed)
        idx = [pos[i] for i in sub]
        means = circuits.head_means(cmodel, cc.batch.subset(idx))
        keep = set(cc.circuit.heads)
        ld = circuits.run_heads(
            cmodel,
            cc.batch.subset(idx),
            means,
            ablate=[h for h in circuits.all_heads(cmodel) if h not in keep],
        )
        return {i: float(v) for i, v in zip(sub, ld)}

    base = AuditInputs(
        model=circuit_model_name or model_name,
        task=cfg.ioi_task,
        n=len(ids),
        seeds=seeds,
        extra={"subsample": cfg.ex25_subsample},
    )
    out = [
        stability.reproducibility(
            stability.run_seeds(circuit_run, seeds),
            name="circuit logit diff",
            inputs=base,
            n_null=cfg.n_null_draws,
        )
    ]

    from kit.world.tasks import get_task

    items_by_task = {t: get_task(t).items("test", cfg.ex25_items) for t in cfg.ex25_tasks}
    mui = stability.mui_runs(model, items_by_task, seeds, frac=cfg.ex25_subsample)
    mui_in = AuditInputs(
        model=model_name, task="+".join(cfg.ex25_tasks), n=cfg.ex25_items, seeds=seeds
    )
    out.append(
        _skipped("MUI pipeline", mui, mui_in)
        if isinstance(mui, str)
        else stability.reproducibility(
            mui, name="MUI pipeline", inputs=mui_in, n_null=cfg.n_null_draws
        )
    )

    feats = sae_features(ctx.saes["arch_a"], ctx.acts)
    per_item: dict[str, list[np.ndarray]] = {}
    for p in range(int(ctx.ta.prompt_index.max()) + 1):
        m = ctx.ta.prompt_index == p
        per_item.setdefault(ctx.labels[p], []).append(feats[m].mean(0).numpy())
    cg = stability.cg_runs(
        {b: np.stack(v) for b, v in per_item.items()}, seeds, frac=cfg.ex25_subsample
    )
    cg_in = AuditInputs(
        model=model_name,
        hook=ctx.hook,
        sae=[ctx.names["arch_a"]],
        task="+".join(per_item),
        n=len(ctx.labels),
        seeds=seeds,
    )
    if isinstance(cg, str):
        out.append(_skipped("CG pipeline", cg, cg_in))
    else:
        r = stability.reproducibility(
            cg, name="CG X_bench pipeline", inputs=cg_in, n_null=cfg.n_null_draws
        )
        if r.by_construction:
            r.by_construction = "X_bench averages to 1 over concepts: " + r.by_construction
        out.append(r)
    return out


def _skipped(name: str, reason: str, inputs: AuditInputs) -> AuditResult:
    return AuditResult(
        metric="EX25",
        name=f"Reproducibility ({name})",
        value=None,
        values={"skipped": True},
        pass_condition="dev_rate < 0.05 (skipped)",
        passed=True,
        diagnostic=True,
        inputs=inputs,
        notes=f"skipped: {reason}",
    )


def run_m14(model, model_name: str, cfg) -> AuditResult:
    """M14 on prompts of ``safety_tasks[0]`` vs ``[1]``: harmful vs harmless ``hf:`` sources in the
    paper profile; offline, two world tasks stand in (no safety data exists in the tiny world)."""
    from .sources import source_prompts

    if cfg.safety_tasks is None:
        return not_run(
            "M14",
            "Safety SVE",
            cfg.not_testable()["M14"],
            "SVE < 2.0 (needs harmful vs harmless prompts)",
            AuditInputs(model=model_name),
        )
    a, b = cfg.safety_tasks
    pa, pb = (
        source_prompts(t, cfg.n_prompts_per_task, cfg.hf_max_chars, field="safety_tasks")
        for t in (a, b)
    )
    path = step_cache.step_path(
        "m14", [cache_identity(model)], cfg, extra={"name": model_name, "prompts": [pa, pb]}
    )
    value = step_cache.cached(
        path,
        lambda: {"results": step_cache.dump_results([_m14(model, model_name, cfg, pa, pb)])},
        step_cache.results_schema(n=1),
    )
    return step_cache.load_results(value["results"])[0]


def _m14(model, model_name: str, cfg, pa: list[str], pb: list[str]) -> AuditResult:
    hooks = [f"blocks.{L}.hook_resid_post" for L in range(model.cfg.n_layers)]
    a, b = cfg.safety_tasks
    return safety.safety_sve(
        safety.last_token_resid(model, pa, hooks),
        safety.last_token_resid(model, pb, hooks),
        n_stability_runs=cfg.sve_stability_runs,
        n_null=cfg.n_null_draws,
        seed=cfg.seed,
        inputs=AuditInputs(
            model=model_name,
            hook="blocks.*.hook_resid_post",
            task=f"{a} vs {b}",
            n=len(pa) + len(pb),
            seeds=[cfg.seed],
        ),
    )


def load_saes(cfg, model=None) -> tuple[dict[str, str], dict[str, Any]]:
    """The four SAE roles named by ``cfg`` (or chosen among the world's SAEs), loaded;
    ``real-sae/...`` names are trained on ``model`` (the loaded ``cfg.model``) on first use."""
    import kit

    from .real_saes import is_real_sae, load_real_sae

    available: list[str] = []
    from kit.models.sources import form_of

    if form_of(cfg.model).world_member:
        from kit import world

        available = list(world.saes(cfg.world))
    names = choose_saes(
        available, cfg.model, cfg.sae_arch_a, cfg.sae_arch_b, cfg.sae_small, cfg.sae_large
    )
    loaded: dict[str, Any] = {}
    saes = {}
    for role, name in names.items():
        if name in loaded:
            pass
        elif is_real_sae(name):
            if model is None:
                raise ValueError(
                    f"{name} is trained on the audited model: pass it (load_saes(cfg, model))"
                )
            loaded[name] = load_real_sae(name, model, device=cfg.device)
        else:
            loaded[name] = kit.load_sae(name, device=cfg.device, world=cfg.world)
        saes[role] = loaded[name]
    return names, saes
