"""The paper's own setting for Competency Gaps (section 4.1): the evaluated models' own SAEs read
through their own activations (``concept_space: model``, the ``paper`` and ``dryrun`` profiles).

- :func:`hooked_item_concepts`: eq. 1 under a ``HookedTransformer`` and its sae_lens SAE
  (token-budget batches, per-item cache), :func:`hooked_token_counts` the tokens it averages over;
- :func:`hooked_contexts`: top-activating contexts per concept (local labels);
- :func:`model_responses`: batched generation and scoring of one model on the suite's items;
- :func:`model_suites`: one :class:`kit.cg.suite.Suite` per (model, own SAE), every model scored.
"""

from __future__ import annotations

import gc
import hashlib
import warnings
from typing import TYPE_CHECKING, Sequence

import numpy as np
import scipy.sparse as sp
import torch

from kit.cg.metrics import CSR, segment_mean
from kit.cg.size_control import general_text
from kit.cg.suite import UNSCORED, Suite, benchmark_items
from kit.models import cache as item_cache
from kit.models import tl
from kit.models.identity import name_identity
from kit.models.internals import token_budget_batches

if TYPE_CHECKING:
    from kit.data.items import Item


def _item_rows(model, texts: Sequence[str], max_length: int) -> list[list[int]]:
    """Token ids (BOS first) of each text, cut to ``max_length`` and the model's context, with one
    warning naming how many texts were cut."""
    limit = min(int(max_length), int(model.cfg.n_ctx))
    rows = [model.to_tokens(t, prepend_bos=True)[0].tolist() for t in texts]
    cut = sum(len(r) > limit for r in rows)
    if cut:
        warnings.warn(
            f"{cut} of {len(rows)} texts are longer than {limit} tokens (max_length / the model's "
            "context) and were cut to their first tokens",
            stacklevel=3,
        )
    return [r[:limit] for r in rows]


def hooked_token_counts(model, texts: Sequence[str], max_length: int = 512) -> np.ndarray:
    """Int[ndarray, "n_texts"]: the tokens :func:`hooked_item_concepts` averages each text over (its
    tokens after BOS, cut to ``max_length`` and the model's context; 1 for a text of BOS only)."""
    with warnings.catch_warnings():  # hooked_item_concepts warns about cut texts already
        warnings.simplefilter("ignore")
        return np.array(
            [max(1, len(r) - 1) for r in _item_rows(model, texts, max_length)], dtype=np.int64
        )


def _forward_batches(model, hook: str, rows: Sequence[list[int]], batch: Sequence[int]):
    """Activations at ``hook`` of the rows ``batch``, right-padded into one forward pass: per row
    its real tokens only (causal attention: right padding changes no real position)."""
    layer = int(hook.split(".")[1]) if hook.startswith("blocks.") else None
    tok = getattr(model, "tokenizer", None)
    # any id: causal attention keeps padding from real positions
    pad = tok.pad_token_id if tok is not None and tok.pad_token_id is not None else 0
    width = max(len(rows[i]) for i in batch)
    tokens = torch.full((len(batch), width), int(pad), dtype=torch.long)
    for r, i in enumerate(batch):
        tokens[r, : len(rows[i])] = torch.tensor(rows[i], dtype=torch.long)
    _, cache = tl.run_with_cache(
        model,
        tokens.to(model.cfg.device),
        [hook],
        stop_at_layer=None if layer is None else layer + 1,
    )
    return [cache[hook][r, : len(rows[i])] for r, i in enumerate(batch)]


def hooked_item_concepts(
    model,
    sae,
    texts: Sequence[str],
    max_length: int = 512,
    max_batch_tokens: int = 8192,
    cache=None,
) -> CSR:
    """Eq. 1 under a ``HookedTransformer`` and its own SAE: activations at
    ``sae.cfg.metadata.hook_name`` over each text's tokens (BOS excluded), averaged per text.

    Texts run in right-padded batches of at most ``max_batch_tokens`` padded tokens
    (:func:`kit.models.internals.token_budget_batches`), each cut to ``max_length`` tokens and the
    model's context (with a warning). With ``cache`` (a :class:`kit.models.cache.ItemCache` keyed by
    model, SAE and settings), each finished batch's sparse rows are kept under the text's hash, so a
    rerun reads them and a killed run resumes. Returns CSR items x d_sae."""
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
    values = item_cache.map_items(
        ids, compute, token_budget_batches([len(r) for r in rows], max_batch_tokens), cache=cache
    )
    indptr = np.concatenate([[0], np.cumsum([len(v["i"]) for v in values])]).astype(np.int64)
    indices = np.asarray([j for v in values for j in v["i"]], dtype=np.int32)
    data = np.asarray([x for v in values for x in v["v"]], dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(len(texts), sae.cfg.d_sae))


def hooked_contexts(
    model,
    sae,
    texts: Sequence[str],
    n_top: int = 8,
    context: int = 4,
    max_length: int = 512,
    max_batch_tokens: int = 8192,
) -> list[list[dict]]:
    """Per concept of ``sae``, its ``n_top`` strongest token activations over ``texts`` under
    ``model``: ``[{"value", "word", "context"}]`` by decreasing value (the input of a
    :mod:`kit.cg.labels` labeller; empty for a concept that never fires on these texts)."""
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
                # BOS excluded
                feats = sae.encode(acts[1:].to(sae.W_enc.device, sae.W_enc.dtype)).float().cpu()
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
            left, right = "".join(ps[max(1, p - context) : p]), "".join(ps[p + 1 : p + 1 + context])
            found.append(
                {
                    "value": round(float(v), 4),
                    "word": ps[p].strip(),
                    "context": f"{left}[{ps[p]}]{right}",
                }
            )
        out.append(found)
    return out


def model_responses(
    name: str,
    items: dict[str, list[tuple[str, Item]]],
    settings,
    device: str = "cpu",
    dtype: str | None = None,
    batch_size: int = 16,
) -> dict[str, tuple[list[str], np.ndarray]]:
    """``{benchmark: (responses, correct)}`` of model ``name`` on ``items`` (from
    :func:`benchmark_items`): batched generation by its Hugging Face copy with a KV cache and its
    chat template (:func:`kit.models.generate.generate_responses`), cached per (model directory,
    benchmark, settings) under the items' ids, scored by :func:`kit.data.scorers.score`. The copy
    stays held (:func:`kit.models.generate.hf_model`) until :func:`kit.models.generate.release`."""
    from kit.data.scorers import score
    from kit.models import generate
    from kit.models.load import model_dir

    path = model_dir(name)
    out = {}
    for b, pairs in items.items():
        ids = [f"{n}/{getattr(it, 'id', j)}" for j, (n, it) in enumerate(pairs)]
        responses = generate.generate_responses(
            path,
            [it.prompt for _, it in pairs],
            settings,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            cache=item_cache.ItemCache(str(path), b, {**settings.as_dict(), "dtype": dtype}),
            ids=ids,
        )
        out[b] = (
            responses,
            np.array([score(n, it, r) for (n, it), r in zip(pairs, responses)], dtype=float),
        )
    return out


def model_suites(
    models: Sequence[str],
    model_saes: Sequence[str],
    benchmarks: Sequence[str],
    n_items: int,
    max_new_tokens: int,
    max_length: int = 512,
    seed: int = 0,
    device: str = "cuda",
    include_responses: bool = False,
    dtype: str | None = None,
    max_batch_tokens: int = 8192,
    gen_batch_size: int = 16,
    labels: str = "auto",
    label_texts: int = 200,
    n_text_items: int = 0,
) -> dict[str, Suite]:
    """The paper's setting: each model answers ``n_items`` items of every benchmark (greedy, chat
    template, scored by ``kit.data.scorers.score``), so its X_model averages over all of them (those
    of :data:`UNSCORED` count for coverage only);
    each (model, own SAE) pair is one concept space through which every model's datapoints are read
    (the paper's section 4.2.3 reads Llama through Gemma's activations and SAE the same way).
    Returns {SAE name: Suite}.

    One model at a time, each read from disk once: its Hugging Face copy generates (batched, KV
    cache, responses cached per model / benchmark / settings), then that same copy is converted to
    the ``HookedTransformer`` whose activations the SAE reads (token-budget batches, per-item
    cache), then both are freed before the next model. Only ``include_responses`` with several
    models needs every model's responses before any concepts are read: the responses are then
    generated first (one model at a time, cached) and each model is read once more for its concepts.

    ``labels``: how concepts are named (:func:`kit.cg.labels.sae_labels`): ``auto`` = the SAE's
    Neuronpedia explanations when it has a Neuronpedia id and the hub answers, else top-activating
    contexts over ``label_texts`` of the suite's prompts (stop-words and punctuation filtered);
    ``local`` = always the latter; ``neuronpedia`` = fail without them. ``n_text_items``: held-out
    corpus paragraphs each model reads as general text (``Suite.text_acts``, the coverage claim's
    size-controlled null); 0 = none."""
    import kit
    from kit.cg import labels as cg_labels
    from kit.models import generate
    from kit.models.load import load_local, model_dir

    if len(models) != len(model_saes) or not models:
        raise ValueError(
            f"models ({len(models)}) and model_saes ({len(model_saes)}) must pair up one to one"
        )
    items = {b: benchmark_items(b, n_items, seed) for b in benchmarks}
    prompts = {b: [it.prompt for _, it in pairs] for b, pairs in items.items()}
    scored_items = {b: pairs for b, pairs in items.items() if b.split("/", 1)[0] not in UNSCORED}
    if not scored_items:
        raise ValueError(
            f"benchmarks={list(benchmarks)}: none has a scorer ({', '.join(UNSCORED)} count for "
            "coverage only); add a scored benchmark"
        )
    settings = generate.GenerationSettings(max_new_tokens=max_new_tokens, seed=seed)
    answered: dict[str, dict[str, tuple[list[str], np.ndarray]]] = {}
    if include_responses and len(models) > 1:
        for m in models:
            answered[m] = model_responses(m, scored_items, settings, device, dtype, gen_batch_size)
            generate.release()

    def texts_of(m: str) -> dict[str, list[str]]:
        return {
            b: [
                f"{p}\n\n{r}" if include_responses else p
                for p, r in zip(prompts[b], answered[m][b][0])
            ]
            for b in scored_items
        }

    suites: dict[str, Suite] = {}
    for m, sae_name in zip(models, model_saes):
        answered[m] = model_responses(m, scored_items, settings, device, dtype, gen_batch_size)
        path = model_dir(m)
        hf, _ = generate.hf_model(path, device, dtype)
        model = load_local(path, device=device, dtype=dtype, name=m, hf_model=hf)
        del hf
        generate.release()
        sae = kit.load_sae(sae_name, device=device)
        ikey = {"max_length": max_length, "dtype": dtype, "what": "cg item concepts"}
        label, ident = f"{path}|{sae_name}", f"{name_identity(str(path))}|{sae_name}"  # files, SAE

        def read(texts: list[str], b: str) -> CSR:
            return hooked_item_concepts(
                model,  # noqa: F821 (bound earlier in this loop iteration, deleted at its end)
                sae,  # noqa: F821 (bound earlier in this loop iteration, deleted at its end)
                texts,
                max_length,
                max_batch_tokens,
                cache=item_cache.ItemCache(label, b, ikey, identity=ident),
            )

        acts = {b: read(t, b) for b, t in prompts.items()}
        n_tokens = {b: hooked_token_counts(model, t, max_length) for b, t in prompts.items()}
        label_pool = [
            p for b in benchmarks for p in prompts[b][: max(1, label_texts // len(benchmarks))]
        ]
        names, source, contexts = cg_labels.sae_labels(
            sae_name,
            sae.cfg.d_sae,
            labels,
            lambda: hooked_contexts(
                model,  # noqa: F821 (bound earlier in this loop iteration, deleted at its end)
                sae,  # noqa: F821 (bound earlier in this loop iteration, deleted at its end)
                label_pool,
                max_length=max_length,
                max_batch_tokens=max_batch_tokens,
            ),
        )
        s = Suite(
            sae_name,
            names,
            acts,
            prompts,
            contexts=contexts,
            label_source=source,
            n_tokens=n_tokens,
        )
        if n_text_items:
            general = general_text(n_text_items, seed=seed)
            s.text_acts, s.text_tokens = (
                read(general, "general text"),
                hooked_token_counts(model, general, max_length),
            )
            s.text_source = f"{n_text_items} corpus paragraphs (Gutenberg, tiny Shakespeare)"
        if include_responses:
            for other in models:
                if other in answered:
                    s.model_acts[other.split("/")[-1]] = {
                        b: read(t, b) for b, t in texts_of(other).items()
                    }
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
