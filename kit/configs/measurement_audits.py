"""Config of notebooks/06_measurement_audits.ipynb (seed 003: measurement-theory audits)."""

from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kit.core.params import BaseConfig, Fraction, Positive, distinct


class SecondModel(BaseModel):
    """A second model the SAE audits (M07, M08, M09, M10-M13, EX24, EX34) run on beside ``model``,
    with its own SAEs in the same four roles; every other field (prompt sources, sizes, nulls) is
    shared. The circuit family stays on ``circuit_model``/``model`` only."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    model: str
    """The second model (e.g. ``real/qwen2.5-coder-0.5b-instruct``); not ``model`` itself."""
    sae_arch_a: str
    """Its SAE in ``sae_arch_a``'s role (an SAE of this model)."""
    sae_arch_b: str
    """Its SAE in ``sae_arch_b``'s role (another architecture, same hook and width)."""
    sae_small: str
    """Its SAE in ``sae_small``'s role (M11's narrower one)."""
    sae_large: str
    """Its SAE in ``sae_large``'s role (M11's wider one)."""
    hook: str | None = None
    """Hook its SAEs read; ``None``: the SAE's own metadata."""
    n_prompts_per_task: int | None = Field(None, ge=4, le=2000)
    """Prompts per source on this model (fewer than ``n_prompts_per_task`` keeps a larger model's
    time in budget); ``None``: ``n_prompts_per_task``."""


class Config(BaseConfig):
    model: str = "zoo/base-m"
    """Model audited (a zoo name, ``real/smollm2-135m-instruct`` in the real profiles, or ``gpt2``
    in the paper profile)."""
    sae_arch_a: str | None = None
    """First SAE of M07 (and the SAE of M08, M10, M12, EX24, EX34); ``None``: chosen from the
    world's SAEs."""
    sae_arch_b: str | None = None
    """Second SAE of M07: another architecture at the same hook and width; ``None``: chosen
    automatically."""
    sae_small: str | None = None
    """Narrower SAE of M11; ``None``: chosen automatically (same architecture as ``sae_large``)."""
    sae_large: str | None = None
    """Wider SAE of M11; ``None``: chosen automatically."""
    hook: str | None = None
    """Hook the SAEs read (``blocks.{L}.hook_resid_post``...); ``None``: the SAE's own metadata."""
    sae_tasks: list[str] = Field(
        default_factory=lambda: ["add", "code", "facts", "boolean", "dyck", "sort", "count", "ioi"],
        min_length=2,
    )
    """Prompt sources of the SAE audits and M13 (token-level activations): world task names,
    shipped benchmark names (their test prompts, offline: ``asdiv``, ``bbh/web_of_lies``), or
    ``hf:<dataset>[@<config>]:<split>:<column>`` Hugging Face datasets (network; e.g.
    ``hf:NeelNanda/pile-10k:train:text`` for M13's diverse text); ``<dataset>`` may be a local
    directory of data files (``./tests/fixtures/hf/pile-mini``, read offline)."""
    hf_max_chars: int = Field(400, ge=16, le=100000)
    """``hf:`` sources: each text is cut to this many characters (a prompt, not a document)."""
    n_prompts_per_task: int = Field(40, ge=4, le=2000)
    """Prompts per task for the SAE audits and M14."""
    n_features: int = Field(100, ge=4, le=5000)
    """Features sampled (alive ones) for M08 and M10."""
    weightlens_top_k: int = Field(10, ge=1, le=100)
    """Top-k tokens compared in M08 and EX34."""
    weightlens_side: Literal["next", "current"] = "current"
    """M08: credit an activation to the token it fires on (``current``, the page) or to the next
    token (``next``: what ``W_dec @ W_U`` predicts)."""
    prism_top_n: int = Field(10, ge=2, le=100)
    """M10: top-activating contexts per feature."""
    prism_window: int = Field(4, ge=1, le=64)
    """M10: tokens mean-pooled into a context embedding (ending at the activating token)."""
    prism_threshold: float = Field(0.5, gt=0, le=2)
    """M10: cosine-distance cut of the agglomerative clustering."""
    matryoshka_top_k: int = Field(3, ge=2, le=50)
    """M11: correlated large features examined per small feature."""
    matryoshka_min_corr: float = Field(0.3, gt=0, lt=1)
    """M11: correlation for a large feature to count as a partner / best match."""
    matryoshka_absorption: Literal["all", "matched"] = "all"
    """M11: absorption rate over all large features (the page) or over matched ones only."""
    matryoshka_chunk: int = Field(8192, ge=1, le=1_000_000)
    """M11: large-SAE features encoded and correlated per block, on the SAE's device (memory ~
    tokens x this, never tokens x the large SAE's width; the result does not depend on it)."""
    mismatch_threshold: float = Field(2.0, gt=0, le=10)
    """M12: |k - k_fit| / k_fit above this flags a token (the page runs 2.0)."""
    m13_directions: int = Field(32, ge=2, le=1000)
    """M13: most frequent tokens whose mean residual directions enter the interference score."""
    probe_tasks: tuple[str, str] = ("add", "code")
    """EX24: the two prompt sources (among ``sae_tasks``) the sparse probe separates."""
    probe_k: int = Field(1, ge=1, le=100)
    """EX24: features the sparse probe may use (SAEBench's k)."""
    n_reseeds: int = Field(10, ge=2, le=100)
    """EX24: reseeds per configuration."""
    nla_features: int = Field(30, ge=2, le=1000)
    """EX34: features sampled."""
    nla_top_k: int = Field(20, ge=2, le=500)
    """EX34: top activations whose principal direction is compared with the decoder direction."""
    circuit_model: str | None = None
    """Model of the circuit family (MIB, EX1, EX2, EX11 and EX25's circuit part), when it is not
    ``model``: e.g. a deeper zoo member with a multi-head IOI circuit; ``None``: ``model``."""
    ioi_task: str = "ioi"
    """World task of IOI prompts (items carry ``io``, ``s``, ``name_group``)."""
    ioi_split: Literal["test", "fresh"] = "test"
    """Split of the IOI prompts."""
    n_ioi: int = Field(80, ge=8, le=2000)
    """IOI prompts for circuit discovery and the circuit audits."""
    circuit: Literal["discover", "wang2023"] = "discover"
    """Circuit heads: discovered by mean-ablation patching, or Wang et al.'s GPT-2 IOI heads."""
    circuit_frac: float = Field(0.2, gt=0, le=1)
    """Discovery: keep heads whose patching score is at least this fraction of the best."""
    max_circuit_heads: int = Field(8, ge=1, le=200)
    """Discovery: at most this many heads."""
    circuit_layers: list[int] | None = None
    """Discovery: patch only the heads of these layers (one forward pass per head: a cost cap, used
    by ``realsmoke``); ``None``: every layer (270 heads on SmolLM2)."""
    circuit_edges: Literal["auto", "on", "off"] = "auto"
    """Score every edge of the head graph (what MIB's faithfulness curve ranks; 35,776 edges for 30
    layers x 9 heads) by ``edge_scores``: ``on``, ``off`` (MIB is then not testable, saying why) or
    ``auto``: on when the estimated cost of the scores and the curve (``kit.audits.cost``, printed)
    is within ``edge_budget_s`` or cannot be estimated offline."""
    edge_scores: Literal["patching", "attribution"] = "patching"
    """How the edges are scored: ``patching`` (one forward pass over the IOI batch per edge, exact)
    or ``attribution`` (edge attribution patching, as MIB's EAP baseline: the same score to first
    order, from one forward and one backward pass whatever the number of edges;
    ``kit.audits.circuits.edge_attribution_scores``)."""
    edge_budget_s: float = Field(3600.0, gt=0)
    """Seconds MIB may take by the estimate (the edge scores, then the curve with its random
    rankings): above it ``auto`` turns edges off and ``on`` is refused."""
    mib_thresholds: list[Fraction] = Field(
        default_factory=lambda: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
        min_length=2,
    )
    """MIB: fractions of edges kept (increasing, in (0, 1])."""
    weber_scales: list[Positive] = Field(
        default_factory=lambda: [0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 1.0], min_length=2
    )
    """EX11: head output scales relative to the baseline (must include 1.0)."""
    weber_baselines: list[Positive] = Field(default_factory=lambda: [1.0, 0.5], min_length=1)
    """EX11: baseline intensities (the full output and half of it)."""
    jnd_threshold: float = Field(0.05, gt=0, lt=1)
    """EX11: relative logit-diff change that counts as noticeable (either direction)."""
    dif_name_groups: dict[str, list[str]] | None = None
    """EX2: name categories (>= 2) substituted into the IOI prompts; ``None``: the world's
    frequent/rare groups. Names that are not single tokens of the model are dropped (counted)."""
    n_null_seeds: int = Field(3, ge=1, le=200)
    """Draws of the costly null controls (untrained SAE copies, EX11's random circuits). A claim
    needs >= 20 draws to be decided (the smallest empirical p-value is 1/(n+1)); with fewer it
    says "inconclusive: n draws"."""
    n_null_draws: int = Field(100, ge=1, le=10000)
    """Draws of the cheap null controls: EX1's random circuits, MIB's random edge rankings, EX2's
    and M14's shuffled labels, EX25's shuffled ids (>= 20 for a 95% test; 100 by default)."""
    circuit_holdout: float = Field(0.5, gt=0, lt=1)
    """Share of the IOI prompts (of each name group) held out: the circuit is found (head and edge
    patching, mean-ablation means) on the rest and audited (MIB, EX1, EX2, EX11, EX25) on these."""
    m09_d_sae: int = Field(256, ge=8, le=65536)
    """M09: width of the SAE trained and distilled here."""
    m09_cycles: int = Field(4, ge=2, le=20)
    """M09: distillation cycles."""
    m09_l1: float = Field(0.3, gt=0, le=100)
    """M09: SAELens's L1 coefficient (activations scaled to mean norm sqrt(d_in)); 1e-3 gives a
    dense SAE."""
    m09_core_frac: float = Field(0.1, gt=0, lt=1)
    """M09: fraction of features marked core each cycle (top by gradient x activation)."""
    m09_steps: int = Field(300, ge=1, le=100000)
    """M09: Adam steps per cycle."""
    m09_max_tokens: int = Field(8000, ge=64)
    """M09: token activations used (subsampled with the seed)."""
    ex25_runs: int = Field(5, ge=2, le=50)
    """EX25: runs (seeds) per pipeline."""
    ex25_subsample: float = Field(0.8, gt=0, le=1)
    """EX25: fraction of prompts each run sees."""
    ex25_tasks: list[str] = Field(
        default_factory=lambda: ["add", "code", "facts", "boolean", "sort"], min_length=3
    )
    """EX25: tasks of the MUI pipeline audit (>= 3, so rank coherence is defined)."""
    ex25_items: int = Field(40, ge=4, le=2000)
    """EX25: items per task in the MUI pipeline audit."""
    safety_tasks: tuple[str, str] | None = ("facts", "code")
    """M14: (positive, contrast) prompt sources (world tasks, benchmark names or ``hf:`` specs, e.g.
    harmful vs harmless instructions); the tiny world has no safety data, two tasks stand in.
    ``None``: M14 is not run and its claim says not testable (no safety contrast offline)."""
    sve_stability_runs: int = Field(5, ge=2, le=100)
    """M14: prompt-subset reruns for the stability score."""
    second_model: SecondModel | None = None
    """The SAE audits rerun on a second model with its own SAEs (``model``, ``sae_arch_a``,
    ``sae_arch_b``, ``sae_small``, ``sae_large``, optional ``hook`` and ``n_prompts_per_task``),
    their verdicts set beside ``model``'s; ``None``: one model."""

    @model_validator(mode="after")
    def _check(self):
        from kit.audits.sources import dataset_path, parse_source
        from kit.world.tasks import TASKS

        for name in ["probe_tasks", "safety_tasks", "sae_tasks"]:
            for t in getattr(self, name) or ():
                # a local directory must exist
                dataset_path(parse_source(t, field=name), field=name)
        bad = [t for t in self.ex25_tasks if t not in TASKS]
        if bad:
            raise ValueError(
                f"ex25_tasks: unknown task(s) {bad}; allowed values: {', '.join(TASKS)}"
            )
        if not set(self.probe_tasks) <= set(self.sae_tasks):
            raise ValueError(
                f"probe_tasks {list(self.probe_tasks)} must be among sae_tasks {self.sae_tasks}"
            )
        if self.dif_name_groups is not None and (
            len(self.dif_name_groups) < 2 or any(len(v) < 2 for v in self.dif_name_groups.values())
        ):
            raise ValueError(
                "dif_name_groups: need >= 2 groups of >= 2 names each, got "
                f"{ {k: len(v) for k, v in self.dif_name_groups.items()} }"
            )
        if self.ioi_task not in TASKS:
            raise ValueError(f"ioi_task={self.ioi_task!r}; allowed values: {', '.join(TASKS)}")
        if any(b <= a for a, b in zip(self.mib_thresholds, self.mib_thresholds[1:])) or not (
            0 < self.mib_thresholds[0] and self.mib_thresholds[-1] <= 1
        ):
            raise ValueError(
                f"mib_thresholds must increase strictly within (0, 1], got {self.mib_thresholds}"
            )
        if 1.0 not in self.weber_scales:
            raise ValueError(
                f"weber_scales must include 1.0 (the baseline), got {self.weber_scales}"
            )
        for field in (
            "sae_tasks",
            "ex25_tasks",
            "mib_thresholds",
            "weber_scales",
            "weber_baselines",
            "circuit_layers",
        ):
            distinct(field, getattr(self, field) or [])
        return self

    def requirements(self) -> list[str]:
        """An SAE of the audited model per role, EX2's names in the circuit model's tokenizer, edge
        patching within its budget when forced on."""
        errors = [e for e in (self._check_saes(), self._check_second(), self._check_names()) if e]
        plan = self.edge_plan()
        if self.circuit_layers is not None:
            from kit.audits.cost import model_shape

            shape = model_shape(self.circuit_model_name(), self.world)
            bad = [L for L in self.circuit_layers if L < 0 or (shape and L >= shape.n_layers)]
            if bad or not self.circuit_layers:
                allowed = f"0..{shape.n_layers - 1}" if shape else ">= 0"
                errors.append(
                    f"field 'circuit_layers': {bad or 'empty'} not layers of "
                    f"{self.circuit_model_name()}; allowed values: {allowed}, or null (all)"
                )
        if self.circuit_edges == "on" and not plan.on:
            cheaper = " or edge_scores: attribution" if self.edge_scores == "patching" else ""
            errors.append(
                f"field 'circuit_edges': 'on' but {plan.reason}; raise edge_budget_s{cheaper} to "
                "run them, or set circuit_edges: auto or off"
            )
        return errors

    def not_testable(self) -> dict[str, str]:
        """The audits this config cannot run, each with its cause, computed from the fields (what
        the notebook prints and the claims say): M14 without a safety contrast, MIB without edge
        patching (:meth:`edge_plan`)."""
        out = {}
        if self.safety_tasks is None:
            out["M14"] = (
                "no harmful vs harmless instruction set offline (safety_tasks is unset; the "
                "paper profile reads AdvBench vs Alpaca from the hub)"
            )
        plan = self.edge_plan()
        if not plan.on:
            out["MIB"] = f"edge {self.edge_scores} was not run: {plan.reason}"
        return out

    def circuit_model_name(self) -> str:
        return self.circuit_model or self.model

    def second_config(self) -> "Config | None":
        """This config with ``second_model`` in ``model``'s place (its SAEs, hook and prompts per
        source; every other field shared), what the SAE audits of the second model read; ``None``
        without a second model."""
        s = self.second_model
        if s is None:
            return None
        return self.model_copy(
            update=dict(
                model=s.model,
                sae_arch_a=s.sae_arch_a,
                sae_arch_b=s.sae_arch_b,
                sae_small=s.sae_small,
                sae_large=s.sae_large,
                hook=s.hook,
                n_prompts_per_task=s.n_prompts_per_task or self.n_prompts_per_task,
                second_model=None,
            )
        )

    def edge_plan(self) -> "EdgePlan":
        """Whether circuit discovery scores edges, and why (the estimate the notebook prints): the
        edges scored by ``edge_scores`` on the IOI prompts (all ``n_ioi``: an upper bound on the
        discovery part), then MIB's curve on the audited part with ``n_null_draws`` random
        rankings."""
        from kit.audits.cost import (
            edge_attribution_cost,
            edge_patching_cost,
            mib_curve_cost,
            model_shape,
        )

        shape = model_shape(self.circuit_model_name(), self.world)
        scoring = edge_attribution_cost if self.edge_scores == "attribution" else edge_patching_cost
        cost = scoring(shape, self.n_ioi, self.device)
        n_audit = max(2, round(self.n_ioi * self.circuit_holdout))
        seeds = tuple(self.seed + 1 + i for i in range(self.n_null_draws))  # as the audit's
        curve_s, curve_how = mib_curve_cost(
            shape, n_audit, tuple(self.mib_thresholds), seeds, self.device
        )
        cost = replace(cost, curve_seconds=curve_s, curve_how=curve_how)
        return decide_edges(self.circuit_edges, self.edge_budget_s, cost, self.edge_scores)

    def _check_saes(self) -> str:
        """An SAE for every role, of the audited model: named ones must belong to it, unnamed ones
        are chosen among the world's SAEs of a zoo member (a hub model's cannot be chosen)."""
        roles = {
            "sae_arch_a": self.sae_arch_a,
            "sae_arch_b": self.sae_arch_b,
            "sae_small": self.sae_small,
            "sae_large": self.sae_large,
        }
        return self._check_saes_of(self.model, roles, "model")

    def _check_second(self) -> str:
        """``second_model``: another model than ``model``, and SAEs of its own in every role."""
        s = self.second_model
        if s is None:
            return ""
        if s.model.split("@")[0] == self.model.split("@")[0]:
            return (
                f"field 'second_model.model': {s.model!r} is the audited model (model); name "
                "another model, or set second_model: null"
            )
        roles = {
            f"second_model.{f}": getattr(s, f)
            for f in ("sae_arch_a", "sae_arch_b", "sae_small", "sae_large")
        }
        return self._check_saes_of(s.model, roles, "second_model.model")

    def _check_saes_of(self, model: str, roles: dict[str, str | None], model_field: str) -> str:
        """``roles`` (field -> SAE name) all SAEs of ``model`` (named by ``model_field``): the first
        problem, naming its field, or ""."""
        for field, name in roles.items():
            if why := _check_real_sae(field, name, self.world):
                return why
            owner = _sae_owner(name)
            if owner is not None and owner != model.split("@")[0]:
                return (
                    f"field {field!r}: {name!r} is an SAE of {owner}, not of "
                    f"{model_field}={model!r}; name an SAE trained on the audited model"
                )
        from kit.models.sources import form_of

        if not form_of(model).world_member:
            missing = [f for f, n in roles.items() if n is None]
            if missing:
                return (
                    f"fields {', '.join(missing)}: required for {model_field}={model!r} (SAEs are "
                    "chosen automatically only among a tiny-world member's); name an SAE of this "
                    "model each"
                )
            return ""
        from kit.audits.suite import choose_saes
        from kit.world import saes

        try:
            choose_saes(list(saes(self.world)), model, *roles.values())
        except ValueError as e:
            return f"fields {', '.join(roles)}: {e}"
        return ""

    def _check_names(self) -> str:
        """EX2's name groups: >= 2 single-token names per group in the circuit model's tokenizer
        (read without its weights; skipped when the tokenizer is not available offline)."""
        if self.dif_name_groups is None:
            return ""
        from kit.audits.sources import offline_tokenizer, single_token_names

        name = self.circuit_model_name()
        tokenizer = offline_tokenizer(name)
        if tokenizer is None:
            return ""
        kept = {g: single_token_names(tokenizer, v) for g, v in self.dif_name_groups.items()}
        short = {g: len(v) for g, v in kept.items() if len(v) < 2}
        if short:
            return (
                f"field 'dif_name_groups': fewer than 2 single-token names of {name}'s "
                f"tokenizer in {short} (single-token: {kept}); EX2 needs >= 2 per group: add "
                "names that are one token of this model"
            )
        return ""


def _sae_owner(name: str | None) -> str | None:
    """The model an SAE name says it was trained on (``zoo-sae/base-m/...`` -> ``zoo/base-m``,
    ``twin-sae/gpt2/...`` -> ``twin/gpt2``); None when the name does not say (hub releases)."""
    for prefix, model in (("zoo-sae/", "zoo/"), ("twin-sae/", "twin/"), ("real-sae/", "real/")):
        if name is not None and name.startswith(prefix):
            return model + name.removeprefix(prefix).split("/")[0]
    return None


def _check_real_sae(field: str, name: str | None, world: str) -> str:
    """A ``real-sae/...`` name that parses and whose layer exists in its model (read from the
    model's config, without weights); "" when fine or not such a name."""
    from kit.audits.real_saes import RealSAESpec, is_real_sae

    if not is_real_sae(name):
        return ""
    try:
        spec = RealSAESpec.from_name(name)
    except ValueError as e:
        return f"field {field!r}: {e}"
    from kit.audits.cost import model_shape

    shape = model_shape(spec.model_name, world)
    if shape is not None and spec.layer >= shape.n_layers:
        return (
            f"field {field!r}: {name!r} reads layer {spec.layer}; {spec.model_name} has layers "
            f"0..{shape.n_layers - 1}"
        )
    return ""


@dataclass(frozen=True)
class EdgePlan:
    on: bool
    reason: str
    method: str = "patching"
    """``edge_scores``: how the edges are (or would be) scored."""

    def what_runs(self) -> str:
        """What MIB rests on, in words (for its claim): the scoring, its cost and the budget."""
        return f"edges scored by {self.method}: {self.reason}"


def decide_edges(mode: str, budget_s: float, cost, method: str = "patching") -> EdgePlan:
    """``circuit_edges`` (``auto``/``on``/``off``) against ``edge_budget_s`` and the estimate of
    scoring the edges by ``method`` and running the curve (``cost.total``)."""
    from kit.audits.cost import duration

    if mode == "off":
        return EdgePlan(False, "off (circuit_edges: off)", method)
    total = cost.total
    if total is not None and total > budget_s:
        return EdgePlan(
            False,
            f"edge {method} is {cost.text()}, over edge_budget_s = {duration(budget_s)}",
            method,
        )
    why = "within" if total is not None else "unknown, so not limited by"
    return EdgePlan(True, f"on ({cost.text()}; {why} edge_budget_s = {duration(budget_s)})", method)
