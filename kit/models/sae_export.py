"""Export kit's SAEs and their concept labels in the formats other tools read.

:func:`export_sae` writes one folder per SAE::

    <out>/cfg.json, sae_weights.safetensors     sae_lens: SAE.load_from_disk(<out>), also what
                                                sae-dashboard loads (from_local_sae, sae_path=<out>)
    <out>/labels.json                           kit's labels: {"labels": [...], "label_source", ...}
    <out>/neuronpedia/<modelId>/<sourceId>/explanations/batch-<i>.jsonl.gz
                                                Neuronpedia's export layout (its exporter's columns:
                                                modelId, layer = the source id, index, description,
                                                typeName, explanationModelName, authorId; 1024
                                                rows a batch, gzip), one row per labelled feature

``cfg.json`` carries ``metadata.neuronpedia_id = "<modelId>/<sourceId>"``, as sae_lens's own
releases do, so the SAE and its explanations name each other. The same explanation files are what
:func:`kit.models.hub.neuronpedia_explanations` reads from Neuronpedia's public exports.

SAEs: the tiny world's (``zoo-sae/<member>/<arch>-<width>``, :mod:`kit.world.saes`; labels from
the top-activating contexts' task and token) and Competency Gaps' MiniLM SAEs
(``minilm-sae/L<layer>/topk-<width>...``, :mod:`kit.models.minilm_sae`; labels from the most
frequent activating words). Dead features (``(dead)``: never active) get no explanation row. Not
exported: per-feature activation records (Neuronpedia's ``activations/`` and ``features/``
batches, which sae-dashboard computes from a model and a corpus): kit keeps only each concept's top
contexts.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

from kit.core.paths import atomic_dir

NEURONPEDIA_BATCH = 1024
"""Rows per explanations batch file, as Neuronpedia's exporter writes them."""
DEAD = "(dead)"
EXPLANATION_TYPE = "kit-top-contexts"
"""``typeName`` of the exported explanations: labels from top-activating contexts, not an LLM."""


@dataclass(frozen=True)
class SAEExport:
    """What :func:`export_sae` wrote."""

    path: Path
    """The folder: ``cfg.json`` + ``sae_weights.safetensors`` (sae_lens) and ``labels.json``."""
    neuronpedia_id: str
    """``<modelId>/<sourceId>``, also in ``cfg.json``'s metadata."""
    explanations: tuple[Path, ...]
    """Neuronpedia explanation batches (``neuronpedia/<modelId>/<sourceId>/explanations/``)."""
    n_features: int
    n_labelled: int
    """Features with an explanation row (the others are dead)."""


def sae_with_labels(name: str, world: str | None = None):
    """``(sae, labels, label_source)`` of a kit SAE: ``zoo-sae/...`` of ``world`` (default
    ``KIT_WORLD``) or ``minilm-sae/...`` (built on first use). ``labels``: one per feature."""
    from kit.models.sources import find_sae

    form = find_sae(name)
    if form is not None and form.labelled is not None:
        return form.labelled(name, world)
    raise ValueError(
        f"SAE {name!r}: export_sae takes kit's own SAEs, 'zoo-sae/<member>/<arch>-<width>' or "
        "'minilm-sae/L<layer>/topk-<width>...'"
    )


def default_ids(name: str, sae) -> tuple[str, str]:
    """Neuronpedia-style ``(modelId, sourceId)`` of a kit SAE: lower-case model name with hyphens,
    and ``<layer>-kit-<architecture>-<width>`` (Neuronpedia's sources are ``<layer>-<set>``)."""
    meta = sae.cfg.metadata
    model = str(getattr(meta, "model_name", None) or "model")
    world = getattr(meta, "world", None)
    from kit.models.sources import find_sae

    form = find_sae(name)
    if form is not None and form.neuronpedia_model:
        model = form.neuronpedia_model
    elif world:
        from kit.models.sources import form_of

        form = form_of(model)
        model = f"kit-{world}-{form.rest(model) if form.world_member else model}"
    hook = str(getattr(meta, "hook_name", "") or "")
    layer = m.group(1) if (m := re.match(r"blocks\.(\d+)\.", hook)) else "x"
    arch = str(
        sae.cfg.architecture()
        if callable(getattr(sae.cfg, "architecture", None))
        else getattr(sae.cfg, "architecture", "sae")
    )
    clean = lambda s: re.sub(r"[^a-z0-9.-]+", "-", s.lower()).strip("-")  # noqa: E731
    return clean(model), clean(f"{layer}-kit-{arch}-{sae.cfg.d_sae}")


def export_sae(
    name: str,
    out_dir: str | Path,
    *,
    world: str | None = None,
    model_id: str | None = None,
    source_id: str | None = None,
    overwrite: bool = False,
) -> SAEExport:
    """Write SAE ``name`` (a kit SAE: ``zoo-sae/...`` or ``minilm-sae/...``) with its concept
    labels to ``out_dir`` (module doc). ``model_id`` / ``source_id``: the Neuronpedia ids (default
    :func:`default_ids`). The folder is written whole or not at all; an existing one is kept
    unless ``overwrite``. Returns an :class:`SAEExport`."""
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} exists and is not empty; pass overwrite=True to replace it")
    sae, labels, label_source = sae_with_labels(name, world)
    if len(labels) != sae.cfg.d_sae:
        raise ValueError(f"{name}: {len(labels)} labels for {sae.cfg.d_sae} features")
    default_model, default_source = default_ids(name, sae)
    model_id, source_id = model_id or default_model, source_id or default_source
    for field, value in (("model_id", model_id), ("source_id", source_id)):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", value):
            raise ValueError(
                f"{field}={value!r}: letters, digits, '.', '_' and '-' only (a Neuronpedia id)"
            )
    npid = f"{model_id}/{source_id}"
    sae.cfg.metadata.neuronpedia_id = npid
    rows = [
        {
            "modelId": model_id,
            "layer": source_id,
            "index": str(i),
            "description": label,
            "typeName": EXPLANATION_TYPE,
            "explanationModelName": "kit",
            "authorId": None,
        }
        for i, label in enumerate(labels)
        if label and label != DEAD
    ]
    batches = [rows[i : i + NEURONPEDIA_BATCH] for i in range(0, len(rows), NEURONPEDIA_BATCH)]
    relative = Path("neuronpedia") / model_id / source_id / "explanations"
    with atomic_dir(out) as tmp:
        sae.save_model(tmp)
        (tmp / "labels.json").write_text(
            json.dumps(
                {
                    "sae": name,
                    "neuronpedia_id": npid,
                    "label_source": label_source,
                    "hook_name": getattr(sae.cfg.metadata, "hook_name", None),
                    "labels": labels,
                },
                indent=1,
            )
        )
        (tmp / relative).mkdir(parents=True)
        for b, batch in enumerate(batches):
            body = "".join(json.dumps(r) + "\n" for r in batch).encode()
            # mtime 0: the same export is the same bytes
            (tmp / relative / f"batch-{b}.jsonl.gz").write_bytes(
                gzip.compress(body, compresslevel=5, mtime=0)
            )
    return SAEExport(
        path=out,
        neuronpedia_id=npid,
        explanations=tuple(out / relative / f"batch-{b}.jsonl.gz" for b in range(len(batches))),
        n_features=len(labels),
        n_labelled=len(rows),
    )
