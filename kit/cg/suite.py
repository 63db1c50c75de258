"""The two Competency Gaps suites the notebook analyses, assembled into plain arrays.

1. **Real suite**: real benchmark prompts (``kit.load_benchmark``) for coverage, and real models'
   per-item correctness from the published responses (:mod:`kit.data.responses`) for model
   performance, both read through MiniLM + our SAEs (:mod:`kit.cg.saes`).
2. **Tiny-world suite**: the tiny world's task suites, a zoo model's exact-match correctness and
   the zoo model's own SAE (model and SAE both ours, like the paper's main setting).

Each suite is a :class:`Suite`: per benchmark, a sparse items x concepts matrix of eq. 1's
``s~`` and the item texts, and per model, per benchmark, the item scores m_b(i) (with their
own activation matrices when the texts include the model's response).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from kit.cg import metrics as cg
from kit.models import tl

BBH_SUITE_TASKS = ("boolean_expressions", "date_understanding", "logical_deduction_three_objects", "navigate",
                   "object_counting", "web_of_lies", "word_sorting", "causal_judgement")
"""BBH tasks pooled (equal shares) into the single ``bbh`` benchmark of the real suite."""


@dataclass
class Suite:
    """Concept activations of a benchmark suite under one SAE, plus model scores."""

    sae: str
    labels: list[str]
    acts: dict[str, sp.csr_matrix]
    """benchmark -> items x concepts (coverage: prompts only)."""
    texts: dict[str, list[str]]
    model_acts: dict[str, dict[str, sp.csr_matrix]] = field(default_factory=dict)
    """model -> benchmark -> items x concepts of the texts the model's score refers to."""
    model_scores: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    model_texts: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    contexts: list[list[dict]] | None = None
    x_bench_denominator: str = "all"
    """Eq. 3's denominator (:func:`kit.cg.metrics.x_bench`): ``all`` (the equation) or ``active`` (the text)."""
    model_responses: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """model -> benchmark -> the model's responses (shown by the explorer; absent for the tiny world)."""

    @property
    def n_concepts(self) -> int:
        return len(self.labels)

    def x_bench(self):
        """Eq. 3 over this suite, with its chosen denominator."""
        from kit.cg import metrics as cg

        return cg.x_bench(self.acts, self.x_bench_denominator)

    def fires(self) -> np.ndarray:
        """Per concept: active on at least one item this suite read (coverage or any model's texts)."""
        mats = [*self.acts.values(), *(a for per in self.model_acts.values() for a in per.values())]
        return np.logical_or.reduce([np.asarray((a > 0).sum(axis=0)).ravel() > 0 for a in mats])

    def dead(self) -> np.ndarray:
        """Dead latents: no activation on the SAE's own training text (label ``(dead)``) *and* none on
        any benchmark text read here. A ``(dead)``-labelled concept that fires on a benchmark is alive."""
        return np.array([lab == "(dead)" for lab in self.labels]) & ~self.fires()


def benchmark_prompts(name: str, n: int, seed: int = 0) -> list[str]:
    """``n`` prompts of a real benchmark (the items of :func:`benchmark_items`)."""
    return [item.prompt for _, item in benchmark_items(name, n, seed)]


def real_suite(sae_names: Sequence[str], benchmarks: Sequence[str], n_items: int, response_sets: Sequence[str],
               n_response_items: int, include_responses: bool = False, max_length: int = 256, seed: int = 0,
               device: str = "cpu", encoder=None) -> dict[str, Suite]:
    """One :class:`Suite` per SAE over the real benchmarks and published responses.

    The encoder runs once per text; every SAE encodes its activations (cached on disk).
    Response sets: the first ``n_response_items`` items of each file; their texts are prompt +
    response when ``include_responses`` (the paper does so for LMSYS-Chat only). A benchmark with a
    response set is covered through that set's prompts (the first set's items; every set of one
    benchmark must list the same items), so coverage and performance read the same items.
    """
    from kit.data import responses as cg_responses
    from kit.cg import saes as cg_saes
    from kit.models.encoders import load_encoder

    encoder = encoder or load_encoder("minilm", device=device)
    for name in sae_names:
        cg_saes.build_minilm_sae(name, device=device, encoder=encoder)
    sets = {n: cg_responses.load_responses(n, limit=n_response_items) for n in response_sets}
    scored = {}
    for n, rs in sets.items():
        first = scored.setdefault(rs.benchmark, rs)
        if first.ids != rs.ids:
            raise ValueError(f"response sets {first.name} and {n} do not list the same {rs.benchmark} items in the "
                             "same order; coverage and performance must read the same items")
    texts = {b: scored[b].texts(include_response=False) if b in scored else benchmark_prompts(b, n_items, seed)
             for b in benchmarks}
    suites = {n: Suite(n, cg_saes.minilm_sae_labels(n), {}, texts, contexts=cg_saes.minilm_sae_contexts(n))
              for n in sae_names}
    for b, t in texts.items():
        acts, _ = cg_saes.item_concepts(encoder, sae_names, t, max_length=max_length, device=device,
                                        desc=f"concepts: {b}")
        for n in sae_names:
            suites[n].acts[b] = acts[n]
    for rs_name, rs in sets.items():
        model = rs_name.split("/", 1)[1]
        rs_texts = rs.texts(include_response=include_responses)
        acts, _ = cg_saes.item_concepts(encoder, sae_names, rs_texts, max_length=max_length, device=device,
                                        desc=f"concepts: {rs_name}")
        for n in sae_names:
            suites[n].model_acts.setdefault(model, {})[rs.benchmark] = acts[n]
            suites[n].model_scores.setdefault(model, {})[rs.benchmark] = rs.scores
            suites[n].model_texts.setdefault(model, {})[rs.benchmark] = rs_texts
            suites[n].model_responses.setdefault(model, {})[rs.benchmark] = list(rs.responses)
    return suites


def prompt_only_acts(sae_names: Sequence[str], response_set: str, n_items: int, max_length: int = 256,
                     device: str = "cpu", encoder=None) -> dict[str, sp.csr_matrix]:
    """Activations of a response set's prompts only (same for every model answering them)."""
    from kit.data import responses as cg_responses
    from kit.cg import saes as cg_saes
    from kit.models.encoders import load_encoder

    encoder = encoder or load_encoder("minilm", device=device)
    rs = cg_responses.load_responses(response_set, limit=n_items)
    acts, _ = cg_saes.item_concepts(encoder, sae_names, rs.texts(include_response=False), max_length=max_length,
                                    device=device, desc="concepts: prompts only")
    return acts


def zoo_suite(model_name: str, sae_name: str, n_items: int, tasks: Sequence[str] | None = None,
              split: str = "test", world: str | None = None, seed: int = 0, device: str = "cpu") -> Suite:
    """The tiny-world suite: ``n_items`` items of each task, the zoo model's exact-match
    correctness as m_b(i), concepts from the model's own SAE over the prompt tokens."""
    import kit
    from kit import world as kw

    from kit.cg.saes import zoo_item_concepts

    model = kit.load_model(model_name, device=device, world=world)
    sae_name = resolve_zoo_sae(model_name, sae_name, world)
    sae = kit.load_sae(sae_name, device=device, world=world)
    tasks = list(tasks) if tasks else list(kw.TASKS)
    acts, texts, scores = {}, {}, {}
    for t in tasks:
        items = kw.get_task(t).items(split, n_items, seed)
        acts[t] = zoo_item_concepts(model, sae, items)
        texts[t] = [it.prompt for it in items]
        scores[t] = np.asarray(kw.evaluate(model, items), dtype=float)
    by_index = kw.sae_labels(sae_name, world=world)  # {feature: label}
    labels = [by_index.get(i, f"feature {i}") for i in range(sae.cfg.d_sae)]
    return Suite(sae_name, labels, acts, texts, {model_name: acts}, {model_name: scores}, {model_name: texts})


def resolve_zoo_sae(model_name: str, sae_name: str, world: str | None = None) -> str:
    """``sae_name``, or for ``"auto"`` the widest TopK SAE of ``model_name`` in the world."""
    from kit import world as kw

    names = kw.saes(world)
    if sae_name != "auto":
        if sae_name not in names:
            raise ValueError(f"zoo_sae={sae_name!r} is not an SAE of world {world!r}; allowed values: auto, {', '.join(names)}")
        return sae_name
    prefix = f"zoo-sae/{model_name.removeprefix('zoo/')}/topk-"
    mine = [n for n in names if n.startswith(prefix)]
    if not mine:
        raise ValueError(f"no TopK SAE of {model_name} in world {world!r}; SAEs: {', '.join(names)}")
    return max(mine, key=lambda n: int(n.rsplit("-", 1)[1]))


def best_match(acts_a: dict[str, sp.csr_matrix], acts_b: dict[str, sp.csr_matrix], concepts: Sequence[int]) -> list[tuple[int, float]]:
    """For each concept of SAE A, the concept of SAE B whose activation profile over the same
    items is most similar (cosine over all items of all benchmarks), with that cosine.

    How the paper's Table 3 pairs concepts of two SAEs, made computable: its pairs were chosen by
    reading labels; ours by co-activation on the same datapoints.
    """
    a = sp.vstack([acts_a[b] for b in acts_a]).tocsc()
    bm = sp.vstack([acts_b[b] for b in acts_a]).tocsc()
    bnorm = np.sqrt(np.asarray(bm.multiply(bm).sum(0)).ravel())
    out = []
    for c in concepts:
        col = a[:, int(c)]
        na = float(np.sqrt(col.multiply(col).sum()))
        if na == 0:
            out.append((-1, float("nan")))
            continue
        sims = np.asarray((col.T @ bm).todense()).ravel() / (na * np.where(bnorm > 0, bnorm, np.inf))
        j = int(np.argmax(sims))
        out.append((j, float(sims[j])))
    return out


def model_x(suite: Suite, model: str) -> np.ndarray:
    """X_model (eq. 5) of one model over the benchmarks it was scored on."""
    return cg.x_model(suite.model_acts[model], suite.model_scores[model])


def build_suites(cfg) -> tuple[list[str], dict[str, Suite]]:
    """(SAE names, {SAE name: Suite}) for a notebook config: the offline MiniLM concept space
    with published responses, or (``concept_space='model'``) the paper's setting."""
    if cfg.concept_space == "minilm":
        names = cfg.sae_names()
        suites = real_suite(names, cfg.benchmarks, cfg.n_items, cfg.response_sets, cfg.n_response_items,
                            include_responses=cfg.include_responses, max_length=cfg.max_length, seed=cfg.seed,
                            device=cfg.device)
    else:
        names = list(cfg.model_saes)
        suites = model_suites(cfg.models, names, cfg.benchmarks, cfg.n_items, cfg.max_new_tokens, cfg.max_length,
                              cfg.seed, cfg.device, cfg.include_responses)
    for suite in suites.values():
        suite.x_bench_denominator = cfg.x_bench_denominator
    return names, suites


def two_model_comparison(cfg, suite: Suite, sae_names: Sequence[str], main_sae: str):
    """Two models' concept profiles on the same ARC items, concepts read from the prompts only.

    Returns (name A, name B, prompt acts, scores A, scores B) or None when the config has no two
    models on ARC. Published responses: the first two ``arc/`` response sets (same items, same
    order, checked); generated: the first two models' scores on the suite's ARC sample.
    """
    if cfg.concept_space == "minilm":
        from kit.data import responses as cg_responses

        arc_sets = [n for n in cfg.response_sets if n.startswith("arc/")]
        if len(arc_sets) < 2:
            return None
        ra = cg_responses.load_responses(arc_sets[0], limit=cfg.n_response_items)
        rb = cg_responses.load_responses(arc_sets[1], limit=cfg.n_response_items)
        if ra.ids != rb.ids:
            raise ValueError(f"{arc_sets[0]} and {arc_sets[1]} do not list the same ARC items in the same order")
        acts = prompt_only_acts(sae_names, arc_sets[0], cfg.n_response_items, cfg.max_length, cfg.device)[main_sae]
        return arc_sets[0], arc_sets[1], acts, ra.scores, rb.scores
    models = [m for m in suite.model_scores if "arc_challenge" in suite.model_scores[m]]
    if len(models) < 2 or "arc_challenge" not in suite.acts:
        return None
    a, b = models[:2]
    return a, b, suite.acts["arc_challenge"], suite.model_scores[a]["arc_challenge"], suite.model_scores[b]["arc_challenge"]


# ----------------------------------------------------------------------------- the paper's setting


def benchmark_items(name: str, n: int, seed: int = 0) -> list[tuple[str, object]]:
    """(scoring name, Item) pairs: ``n`` seeded test items (``bbh`` pools :data:`BBH_SUITE_TASKS`)."""
    from kit.data.benchmarks import load_benchmark

    rng = random.Random(f"{seed}/{name}")
    if name == "bbh":
        per = max(1, n // len(BBH_SUITE_TASKS))
        out = []
        for task in BBH_SUITE_TASKS:
            items = load_benchmark(f"bbh/{task}", "test")
            out += [(f"bbh/{task}", it) for it in rng.sample(items, min(per, len(items)))]
        return out[:n]
    items = load_benchmark(name, "test")
    return [(name, it) for it in rng.sample(items, min(n, len(items)))]


def hooked_item_concepts(model, sae, texts: Sequence[str], max_length: int = 512) -> sp.csr_matrix:
    """Eq. 1 under a ``HookedTransformer`` and its own SAE: activations at
    ``sae.cfg.metadata.hook_name`` over each text's tokens (BOS excluded), one text at a time
    (no padding to mask), averaged per text. Returns CSR items x d_sae."""
    import torch

    from kit.cg.metrics import SparseRows, segment_mean

    hook = sae.cfg.metadata.hook_name
    tl.check_hooks(model, [hook], field="SAE hook_name")
    layer = int(hook.split(".")[1]) if hook.startswith("blocks.") else None
    rows = SparseRows(sae.cfg.d_sae)
    with torch.inference_mode():
        for text in texts:
            tokens = model.to_tokens(text, prepend_bos=True)[:, :max_length]
            _, cache = tl.run_with_cache(model, tokens, [hook],
                                         stop_at_layer=None if layer is None else layer + 1)
            acts = cache[hook][0, 1:] if tokens.shape[1] > 1 else cache[hook][0]
            feats = sae.encode(acts.to(sae.W_enc.device, sae.W_enc.dtype)).float().cpu()
            rows.add(segment_mean(feats, [feats.shape[0]]))
    return rows.to_csr()


def generate_responses(model, prompts: Sequence[str], max_new_tokens: int) -> list[str]:
    """Greedy responses; chat models get their chat template (one user turn)."""
    import torch

    tok = model.tokenizer
    out = []
    with torch.inference_mode():
        for p in prompts:
            if getattr(tok, "chat_template", None):
                ids = tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True,
                                              return_tensors="pt")
                ids = ids["input_ids"] if hasattr(ids, "keys") else ids
            else:
                ids = model.to_tokens(p, prepend_bos=True)
            ids = ids.to(model.cfg.device)
            gen = model.generate(ids, max_new_tokens=max_new_tokens, do_sample=False, verbose=False)
            out.append(tok.decode(gen[0, ids.shape[1]:], skip_special_tokens=True))
    return out


def model_suites(models: Sequence[str], model_saes: Sequence[str], benchmarks: Sequence[str], n_items: int,
                 max_new_tokens: int, max_length: int = 512, seed: int = 0, device: str = "cuda",
                 include_responses: bool = False) -> dict[str, Suite]:
    """The paper's setting (needs network + GPU): each model answers ``n_items`` items of every
    benchmark (greedy, scored by ``kit.data.scorers.score``); each (model, own SAE) pair is one concept
    space, through which every model's prompts (+ responses with ``include_responses``) are read (the
    paper's section 4.2.3 reads Llama through Gemma's activations and SAE the same way). Returns
    {SAE name: Suite}."""
    import kit

    from kit.data.scorers import score

    if len(models) != len(model_saes) or not models:
        raise ValueError(f"models ({len(models)}) and model_saes ({len(model_saes)}) must pair up one to one")
    items = {b: benchmark_items(b, n_items, seed) for b in benchmarks}
    answered: dict[str, dict[str, tuple[list[str], np.ndarray, list[str]]]] = {}
    for m in models:
        model = kit.load_model(m, device=device)
        answered[m] = {}
        for b, pairs in items.items():
            responses = generate_responses(model, [it.prompt for _, it in pairs], max_new_tokens)
            correct = np.array([score(name, it, r) for (name, it), r in zip(pairs, responses)], dtype=float)
            texts = [f"{it.prompt}\n\n{r}" if include_responses else it.prompt for (_, it), r in zip(pairs, responses)]
            answered[m][b] = (texts, correct, responses)
        del model
    suites = {}
    for m, sae_name in zip(models, model_saes):
        model = kit.load_model(m, device=device)
        sae = kit.load_sae(sae_name, device=device)
        prompts = {b: [it.prompt for _, it in pairs] for b, pairs in items.items()}
        s = Suite(sae_name, [f"feature {i}" for i in range(sae.cfg.d_sae)],
                  {b: hooked_item_concepts(model, sae, t, max_length) for b, t in prompts.items()}, prompts)
        for other, per_b in answered.items():
            key = other.split("/")[-1]
            s.model_acts[key] = {b: hooked_item_concepts(model, sae, t, max_length) if include_responses else s.acts[b]
                                 for b, (t, _, _) in per_b.items()}
            s.model_scores[key] = {b: c for b, (_, c, _) in per_b.items()}
            s.model_texts[key] = {b: t for b, (t, _, _) in per_b.items()}
            s.model_responses[key] = {b: r for b, (_, _, r) in per_b.items()}
        suites[sae_name] = s
        del model
    return suites
