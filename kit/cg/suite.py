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
    label_source: str = ""
    """Where the concept labels come from (:func:`kit.cg.labels.sae_labels`)."""

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
               device: str = "cpu", encoder=None, labeller=None) -> dict[str, Suite]:
    """One :class:`Suite` per SAE over the real benchmarks and published responses.

    Labels: ``labeller`` (a :class:`kit.cg.labels.Labeller`; default the top-context words with
    stop-words and punctuation filtered) over each SAE's stored top-activating contexts.

    The encoder runs once per text; every SAE encodes its activations (cached on disk).
    Response sets: the first ``n_response_items`` items of each file; their texts are prompt +
    response when ``include_responses`` (the paper does so for LMSYS-Chat only). A benchmark with a
    response set is covered through that set's prompts (the first set's items; every set of one
    benchmark must list the same items), so coverage and performance read the same items.
    """
    from kit.cg import saes as cg_saes
    from kit.cg.labels import TopContextLabeller
    from kit.data import responses as cg_responses
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
    labeller = labeller or TopContextLabeller()
    contexts = {n: cg_saes.minilm_sae_contexts(n) for n in sae_names}
    suites = {n: Suite(n, labeller(contexts[n]), {}, texts, contexts=contexts[n],
                       label_source=f"local: {labeller.name} (MiniLM SAE training text)") for n in sae_names}
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
                              cfg.seed, cfg.device, cfg.include_responses, dtype=cfg.dtype,
                              max_batch_tokens=cfg.max_batch_tokens, gen_batch_size=cfg.gen_batch_size,
                              labels=cfg.labels, label_texts=cfg.label_texts)
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


UNSCORED = ("lmsys_arena", "vectara_hallucination")
"""Benchmarks with no rule-based scorer (a battle's winner, a factual-consistency judge): in the paper's
setting they count for coverage (X_bench) only; X_model averages over the scored benchmarks."""


def benchmark_split(name: str) -> tuple[str, str]:
    """``(split, source)`` the suite reads of benchmark ``name``: the local test split, or for the
    hub-only benchmarks (:data:`kit.data.benchmarks.HUB_ONLY`, network) their validation split
    (their test answers are not public), else their only one."""
    from kit.data.benchmarks import HUB_ONLY, SPLITS

    family = name.split("/", 1)[0]
    if family in HUB_ONLY:
        return ("validation" if "validation" in SPLITS[family] else SPLITS[family][0]), "hf"
    return "test", "local"


def benchmark_items(name: str, n: int, seed: int = 0) -> list[tuple[str, object]]:
    """(scoring name, Item) pairs: ``n`` seeded items of :func:`benchmark_split` (``bbh`` pools
    :data:`BBH_SUITE_TASKS`)."""
    from kit.data.benchmarks import load_benchmark

    rng = random.Random(f"{seed}/{name}")
    if name == "bbh":
        per = max(1, n // len(BBH_SUITE_TASKS))
        out = []
        for task in BBH_SUITE_TASKS:
            items = load_benchmark(f"bbh/{task}", "test")
            out += [(f"bbh/{task}", it) for it in rng.sample(items, min(per, len(items)))]
        return out[:n]
    split, source = benchmark_split(name)
    items = load_benchmark(name, split, source=source)
    return [(name, it) for it in rng.sample(items, min(n, len(items)))]


def _item_rows(model, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids (BOS first) of each text, cut to ``max_length`` and the model's context, with one
    warning naming how many texts were cut."""
    import warnings

    limit = min(int(max_length), int(model.cfg.n_ctx))
    rows = [model.to_tokens(t, prepend_bos=True)[0].tolist() for t in texts]
    cut = sum(len(r) > limit for r in rows)
    if cut:
        warnings.warn(f"{cut} of {len(rows)} texts are longer than {limit} tokens (max_length / the model's "
                      "context) and were cut to their first tokens", stacklevel=3)
    return [r[:limit] for r in rows]


def _forward_batches(model, hook: str, rows: Sequence[list[int]], batch: Sequence[int]):
    """Activations at ``hook`` of the rows ``batch``, right-padded into one forward pass: per row
    its real tokens only (causal attention: right padding changes no real position)."""
    import torch

    layer = int(hook.split(".")[1]) if hook.startswith("blocks.") else None
    tok = getattr(model, "tokenizer", None)
    pad = tok.pad_token_id if tok is not None and tok.pad_token_id is not None else 0  # any id: causal attention keeps padding from real positions
    width = max(len(rows[i]) for i in batch)
    tokens = torch.full((len(batch), width), int(pad), dtype=torch.long)
    for r, i in enumerate(batch):
        tokens[r, :len(rows[i])] = torch.tensor(rows[i], dtype=torch.long)
    _, cache = tl.run_with_cache(model, tokens.to(model.cfg.device), [hook],
                                 stop_at_layer=None if layer is None else layer + 1)
    return [cache[hook][r, :len(rows[i])] for r, i in enumerate(batch)]


def hooked_item_concepts(model, sae, texts: Sequence[str], max_length: int = 512, max_batch_tokens: int = 8192,
                         cache=None) -> sp.csr_matrix:
    """Eq. 1 under a ``HookedTransformer`` and its own SAE: activations at
    ``sae.cfg.metadata.hook_name`` over each text's tokens (BOS excluded), averaged per text.

    Texts run in right-padded batches of at most ``max_batch_tokens`` padded tokens
    (:func:`kit.models.internals.token_budget_batches`), each cut to ``max_length`` tokens and the
    model's context (with a warning). With ``cache`` (a :class:`kit.models.cache.ItemCache` keyed by
    model, SAE and settings), each finished batch's sparse rows are kept under the text's hash, so a
    rerun reads them and a killed run resumes. Returns CSR items x d_sae."""
    import hashlib

    import torch

    from kit.cg.metrics import segment_mean
    from kit.models.cache import map_items
    from kit.models.internals import token_budget_batches

    if not texts:
        raise ValueError("texts is empty: no datapoint to read concepts from")
    hook = sae.cfg.metadata.hook_name
    tl.check_hooks(model, [hook], field="SAE hook_name")
    rows = _item_rows(model, texts, max_length)

    def compute(batch: list[int]) -> list[dict]:
        out = []
        with torch.inference_mode():
            for acts in _forward_batches(model, hook, rows, batch):
                acts = acts[1:] if acts.shape[0] > 1 else acts
                feats = sae.encode(acts.to(sae.W_enc.device, sae.W_enc.dtype)).float().cpu()
                mean = segment_mean(feats, [feats.shape[0]])[0]
                nz = torch.nonzero(mean).flatten()
                out.append({"i": nz.tolist(), "v": mean[nz].tolist()})
        return out

    ids = [hashlib.sha256(t.encode()).hexdigest()[:24] for t in texts]
    values = map_items(ids, compute, token_budget_batches([len(r) for r in rows], max_batch_tokens), cache=cache)
    indptr = np.concatenate([[0], np.cumsum([len(v["i"]) for v in values])]).astype(np.int64)
    indices = np.asarray([j for v in values for j in v["i"]], dtype=np.int32)
    data = np.asarray([x for v in values for x in v["v"]], dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(texts), sae.cfg.d_sae))


def hooked_contexts(model, sae, texts: Sequence[str], n_top: int = 8, context: int = 4, max_length: int = 512,
                    max_batch_tokens: int = 8192) -> list[list[dict]]:
    """Per concept of ``sae``, its ``n_top`` strongest token activations over ``texts`` under
    ``model``: ``[{"value", "word", "context"}]`` by decreasing value (the input of a
    :mod:`kit.cg.labels` labeller; empty for a concept that never fires on these texts)."""
    import torch

    from kit.models.internals import token_budget_batches

    hook = sae.cfg.metadata.hook_name
    tl.check_hooks(model, [hook], field="SAE hook_name")
    rows = _item_rows(model, texts, max_length)
    d_sae = sae.cfg.d_sae
    best_val = torch.full((d_sae, n_top), -1.0)
    best_ref = torch.full((d_sae, n_top, 2), -1, dtype=torch.long)
    with torch.inference_mode():
        for batch in token_budget_batches([len(r) for r in rows], max_batch_tokens):
            for i, acts in zip(batch, _forward_batches(model, hook, rows, batch)):
                if acts.shape[0] < 2:
                    continue
                feats = sae.encode(acts[1:].to(sae.W_enc.device, sae.W_enc.dtype)).float().cpu()  # BOS excluded
                val, pos = feats.T.topk(min(n_top, feats.shape[0]), dim=1)
                ref = torch.stack([torch.full_like(pos, i), pos + 1], -1)
                cand_val, cand_ref = torch.cat([best_val, val], 1), torch.cat([best_ref, ref], 1)
                order = cand_val.topk(n_top, dim=1).indices
                best_val = cand_val.gather(1, order)
                best_ref = cand_ref.gather(1, order[..., None].expand(-1, -1, 2))
    tok = model.tokenizer
    pieces: dict[int, list[str]] = {}
    out: list[list[dict]] = []
    for c in range(d_sae):
        found = []
        for v, (t, p) in zip(best_val[c].tolist(), best_ref[c].tolist()):
            if v <= 0 or t < 0:
                continue
            if t not in pieces:
                pieces[t] = [tok.decode([x]) for x in rows[t]]
            ps = pieces[t]
            left, right = "".join(ps[max(1, p - context):p]), "".join(ps[p + 1:p + 1 + context])
            found.append({"value": round(float(v), 4), "word": ps[p].strip(), "context": f"{left}[{ps[p]}]{right}"})
        out.append(found)
    return out


def model_responses(name: str, items: dict[str, list[tuple[str, object]]], settings, device: str = "cpu",
                    dtype: str | None = None, batch_size: int = 16) -> dict[str, tuple[list[str], np.ndarray]]:
    """``{benchmark: (responses, correct)}`` of model ``name`` on ``items`` (from
    :func:`benchmark_items`): batched generation by its Hugging Face copy with a KV cache and its chat
    template (:func:`kit.models.generate.generate_responses`), cached per (model directory,
    benchmark, settings) under the items' ids, scored by :func:`kit.data.scorers.score`. The copy
    stays held (:func:`kit.models.generate.hf_model`) until :func:`kit.models.generate.release`."""
    from kit.data.scorers import score
    from kit.models import generate
    from kit.models.cache import ItemCache
    from kit.models.load import model_dir

    path = model_dir(name)
    out = {}
    for b, pairs in items.items():
        ids = [f"{n}/{getattr(it, 'id', j)}" for j, (n, it) in enumerate(pairs)]
        responses = generate.generate_responses(path, [it.prompt for _, it in pairs], settings, device=device,
                                                dtype=dtype, batch_size=batch_size,
                                                cache=ItemCache(str(path), b, {**settings.as_dict(), "dtype": dtype}),
                                                ids=ids)
        out[b] = (responses, np.array([score(n, it, r) for (n, it), r in zip(pairs, responses)], dtype=float))
    return out


def model_suites(models: Sequence[str], model_saes: Sequence[str], benchmarks: Sequence[str], n_items: int,
                 max_new_tokens: int, max_length: int = 512, seed: int = 0, device: str = "cuda",
                 include_responses: bool = False, dtype: str | None = None, max_batch_tokens: int = 8192,
                 gen_batch_size: int = 16, labels: str = "auto", label_texts: int = 200) -> dict[str, Suite]:
    """The paper's setting: each model answers ``n_items`` items of every benchmark (greedy, chat
    template, scored by ``kit.data.scorers.score``), so its X_model averages over all of them (those
    of :data:`UNSCORED` count for coverage only);
    each (model, own SAE) pair is one concept space through which every model's datapoints are read
    (the paper's section 4.2.3 reads Llama through Gemma's activations and SAE the same way).
    Returns {SAE name: Suite}.

    One model at a time, each read from disk once: its Hugging Face copy generates (batched, KV
    cache, responses cached per model / benchmark / settings), then that same copy is converted to
    the ``HookedTransformer`` whose activations the SAE reads (token-budget batches, per-item cache),
    then both are freed before the next model. Only ``include_responses`` with several models needs
    every model's responses before any concepts are read: the responses are then generated first (one
    model at a time, cached) and each model is read once more for its concepts.

    ``labels``: how concepts are named (:func:`kit.cg.labels.sae_labels`): ``auto`` = the SAE's
    Neuronpedia explanations when it has a Neuronpedia id and the hub answers, else top-activating
    contexts over ``label_texts`` of the suite's prompts (stop-words and punctuation filtered);
    ``local`` = always the latter; ``neuronpedia`` = fail without them."""
    import gc

    import torch

    import kit
    from kit.cg import labels as cg_labels
    from kit.models import generate
    from kit.models.cache import ItemCache
    from kit.models.identity import name_identity
    from kit.models.load import load_local, model_dir

    if len(models) != len(model_saes) or not models:
        raise ValueError(f"models ({len(models)}) and model_saes ({len(model_saes)}) must pair up one to one")
    items = {b: benchmark_items(b, n_items, seed) for b in benchmarks}
    prompts = {b: [it.prompt for _, it in pairs] for b, pairs in items.items()}
    scored_items = {b: pairs for b, pairs in items.items() if b.split("/", 1)[0] not in UNSCORED}
    if not scored_items:
        raise ValueError(f"benchmarks={list(benchmarks)}: none has a scorer ({', '.join(UNSCORED)} count for "
                         "coverage only); add a scored benchmark")
    settings = generate.GenerationSettings(max_new_tokens=max_new_tokens, seed=seed)
    answered: dict[str, dict[str, tuple[list[str], np.ndarray]]] = {}
    if include_responses and len(models) > 1:
        for m in models:
            answered[m] = model_responses(m, scored_items, settings, device, dtype, gen_batch_size)
            generate.release()

    def texts_of(m: str) -> dict[str, list[str]]:
        return {b: [f"{p}\n\n{r}" if include_responses else p for p, r in zip(prompts[b], answered[m][b][0])]
                for b in scored_items}

    suites: dict[str, Suite] = {}
    for m, sae_name in zip(models, model_saes):
        answered[m] = model_responses(m, scored_items, settings, device, dtype, gen_batch_size)
        path = model_dir(m)
        hf, _ = generate.hf_model(path, device, dtype)
        model = load_local(path, device=device, dtype=dtype, name=m, hf_model=hf)
        del hf
        generate.release()
        sae = kit.load_sae(sae_name, device=device)
        key = {"max_length": max_length, "dtype": dtype, "what": "cg item concepts"}

        label, ident = f"{path}|{sae_name}", f"{name_identity(str(path))}|{sae_name}"  # files, SAE

        def read(texts: list[str], b: str) -> sp.csr_matrix:
            return hooked_item_concepts(model, sae, texts, max_length, max_batch_tokens,
                                        cache=ItemCache(label, b, key, identity=ident))

        acts = {b: read(t, b) for b, t in prompts.items()}
        label_pool = [p for b in benchmarks for p in prompts[b][:max(1, label_texts // len(benchmarks))]]
        names, source, contexts = cg_labels.sae_labels(sae_name, sae.cfg.d_sae, labels, lambda: hooked_contexts(
            model, sae, label_pool, max_length=max_length, max_batch_tokens=max_batch_tokens))
        s = Suite(sae_name, names, acts, prompts, contexts=contexts, label_source=source)
        if include_responses:
            for other in models:
                if other in answered:
                    s.model_acts[other.split("/")[-1]] = {b: read(t, b) for b, t in texts_of(other).items()}
        suites[sae_name] = s
        del model, sae
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    for s in suites.values():
        for m in models:
            key = m.split("/")[-1]
            if not include_responses:
                s.model_acts[key] = {b: s.acts[b] for b in scored_items}
            s.model_scores[key] = {b: c for b, (_, c) in answered[m].items()}
            s.model_texts[key] = texts_of(m)
            s.model_responses[key] = {b: r for b, (r, _) in answered[m].items()}
    return suites
