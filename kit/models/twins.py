"""Tiny random *twins* of the papers' architectures, as real Hugging Face directories.

``python -m kit twins build`` writes, for each architecture in :data:`kit.models.twin_specs.TWINS`
(the specs live there), a directory that ``transformers`` (and ``kit.load_model``) load exactly
like a downloaded checkpoint: ``config.json``, ``model.safetensors``, ``tokenizer.json`` +
``tokenizer_config.json`` (with a chat template for the causal ones), ``generation_config.json``.
Decoder twins also get sae_lens-format SAE directories (``cfg.json`` + ``sae_weights.safetensors``)
on ``blocks.{L}.hook_resid_post``.

Why: the real-model path (HF config -> TransformerLens config, raw weights, chat templates, batched
generation, sae_lens loading) must run in tests without a download. A twin has the real
architecture (gated MLP, GQA, Gemma-2's soft-caps and sliding windows, OLMo-2's post-norms...) at
a size that runs in milliseconds. Weights are random (seeded), so only *code paths* and *numbers
against a reference computed on the same weights* are meaningful on a twin, never accuracy.

Names: ``twin/<arch>`` (``kit.load_model``), ``twin-sae/<arch>/blocks.<L>.hook_resid_post``
(``kit.load_sae``). Everything is deterministic: two builds give byte-identical weight files.

Revisions: ``twin/<arch>@<revision>`` (e.g. ``twin/olmo2@step1``) is the twin of a hub checkpoint
revision (``allenai/OLMo-2-1124-7B@stage1-step...``): the same architecture and tokenizer with
weights drawn from a seed derived from the revision (:func:`revision_seed`), so each revision is a
different model, reproducibly. Revision twins have no SAEs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, cast

from kit.models.twin_specs import (
    _CAUSAL_SPECIALS,
    _CORPUS,
    _CTX,
    _D,
    _ENCODER_SPECIALS,
    _VOCAB,
    CHAT_TEMPLATE,
    ENCODER_TWINS,
    TWIN_D_SAE,
    TWINS,
    VERSION,
)


def twins_root() -> Path:
    """``<KIT_CACHE_DIR>/twins/v<VERSION>-<hash of the specs>``."""
    from kit.core.paths import cache_dir

    spec = json.dumps(
        {
            "v": VERSION,
            "twins": TWINS,
            "chat": CHAT_TEMPLATE,
            "corpus": _CORPUS,
            "d_sae": TWIN_D_SAE,
        },
        sort_keys=True,
    )
    return cache_dir() / "twins" / f"v{VERSION}-{hashlib.sha256(spec.encode()).hexdigest()[:10]}"


def revision_seed(revision: str) -> int:
    """Weight seed of the twin of ``revision``: a hash of the name (never 0, the plain twin's
    seed)."""
    if not isinstance(revision, str) or not revision:
        raise ValueError(
            f"revision={revision!r}: a twin revision must be a non-empty string (e.g. 'step1')"
        )
    return 1 + int(hashlib.sha256(revision.encode()).hexdigest()[:8], 16) % (2**31 - 2)


def twin_path(arch: str, build: bool = True, revision: str | None = None) -> Path:
    """Directory of ``twin/<arch>`` (or of ``twin/<arch>@<revision>``: weights seeded by
    :func:`revision_seed`); built on first use unless ``build=False``."""
    if arch not in TWINS:
        raise ValueError(
            f"twin/{arch}: unknown architecture; allowed: {', '.join('twin/' + a for a in TWINS)}"
        )
    if revision is not None:
        seed = revision_seed(revision)
        if "/" in revision or revision in (".", ".."):
            raise ValueError(
                f"twin/{arch}@{revision}: a twin revision cannot contain '/' (it names a directory)"
            )
        path = twins_root() / f"{arch}@{revision}"
        if not (path / "config.json").exists():
            if not build:
                raise FileNotFoundError(
                    f"twin/{arch}@{revision} is not built (it is built on first use)"
                )
            build_twin(arch, seed=seed, revision=revision)
        return path
    path = twins_root() / arch
    if not (path / "config.json").exists():
        if not build:
            raise FileNotFoundError(f"twin/{arch} is not built; run: python -m kit twins build")
        build_twin(arch)
    return path


PERTURBED = "perturbed-"
"""Revision prefix of a twin's perturbed copies: ``twin/<arch>@perturbed-<seed>``."""
PERTURB_FRACTION = 0.05
PERTURB_SCALE = 0.5


def perturbed_path(arch: str, revision: str) -> Path:
    """Directory of ``twin/<arch>@perturbed-<seed>``: the twin with a seeded ``PERTURB_FRACTION`` of
    each layer's MLP neurons changed (their input rows and output column get seeded noise of
    ``PERTURB_SCALE`` x the weights' std), everything else byte-identical. It stands in for a sparse
    fine-tune of the twin (notebook 03's contaminated and clean variants) in ``dryrun`` profiles;
    differently seeded revisions change different neurons. Built on first use, cached."""
    if not revision.startswith(PERTURBED) or not revision[len(PERTURBED) :].isdigit():
        raise ValueError(
            f"twin/{arch}@{revision}: unknown twin revision; allowed: {PERTURBED}<seed> (e.g. "
            f"twin/{arch}@{PERTURBED}1)"
        )
    if arch not in TWINS or arch in ENCODER_TWINS:
        raise ValueError(
            f"twin/{arch}@{revision}: perturbed revisions exist for the causal twins only: "
            f"{', '.join('twin/' + a for a in TWINS if a not in ENCODER_TWINS)}"
        )
    path = twins_root() / f"{arch}@{revision}"
    if not (path / "config.json").exists():
        _build_perturbed(arch, int(revision[len(PERTURBED) :]), path)
    return path


def perturbed_neurons(arch: str, seed: int) -> list[tuple[int, int]]:
    """The (layer, neuron) pairs ``twin/<arch>@perturbed-<seed>`` changes (seeded, sorted)."""
    import torch

    fields = TWINS[arch]
    n_layers, d_mlp = (
        fields.get("num_hidden_layers", fields.get("n_layer")),
        fields.get("intermediate_size", fields.get("n_inner")),
    )
    n_layers, d_mlp = cast(int, n_layers), cast(int, d_mlp)  # both set for every twin
    k = max(1, round(PERTURB_FRACTION * d_mlp))
    g = torch.Generator().manual_seed(1000 + seed)
    return sorted(
        (L, int(i)) for L in range(n_layers) for i in torch.randperm(d_mlp, generator=g)[:k]
    )


def _build_perturbed(arch: str, seed: int, path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    base = twin_path(arch)
    model: Any = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32).eval()
    g = torch.Generator().manual_seed(seed)
    neurons = perturbed_neurons(arch, seed)
    with torch.no_grad():
        for L, i in neurons:
            # Conv1D: c_fc.weight [d_model, d_mlp], c_proj.weight [d_mlp, d_model]
            if arch == "gpt2":
                mlp = model.transformer.h[L].mlp
                ins, outs = [mlp.c_fc.weight[:, i]], [mlp.c_proj.weight[i, :]]
            else:
                mlp = model.model.layers[L].mlp
                ins, outs = (
                    [mlp.gate_proj.weight[i, :], mlp.up_proj.weight[i, :]],
                    [mlp.down_proj.weight[:, i]],
                )
            for w in ins + outs:
                w.add_(PERTURB_SCALE * w.std() * torch.randn(w.shape, generator=g))
    with _atomic_dir(path) as tmp:
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(base).save_pretrained(tmp)


def sae_path(arch: str, hook: str) -> Path:
    """Directory of the SAE ``twin-sae/<arch>/<hook>`` (built with its twin)."""
    twin_path(arch)
    path = twins_root() / f"{arch}-sae" / hook
    if not (path / "cfg.json").exists():
        allowed = sorted(p.name for p in (twins_root() / f"{arch}-sae").glob("*"))
        raise ValueError(
            f"SAE twin-sae/{arch}/{hook}: unknown hook; allowed: "
            f"{', '.join(allowed) or '(none: encoder twin)'}"
        )
    return path


def _tokenizer(arch: str):
    """A byte-level BPE (WordPiece for BERT) trained on ``_CORPUS``, wrapped for
    ``transformers``."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )
    from transformers import PreTrainedTokenizerFast

    if arch == "bert":
        specials = _ENCODER_SPECIALS["bert"]
        # tokenizers' WordPiece trainer breaks ties by hash order (two builds differ): the
        # vocabulary is written out instead, sorted: every character, alone and as a "##" suffix,
        # and every word.
        pre = pre_tokenizers.BertPreTokenizer()
        words = {w for line in _CORPUS.splitlines() for w, _ in pre.pre_tokenize_str(line)}
        chars = sorted(set("".join(words)))
        vocab = specials + chars + ["##" + c for c in chars] + sorted(words - set(chars))
        tok = Tokenizer(
            models.WordPiece(vocab={t: i for i, t in enumerate(vocab)}, unk_token="[UNK]")
        )
        tok.normalizer = normalizers.BertNormalizer(lowercase=False)
        tok.pre_tokenizer = pre
        tok.decoder = decoders.WordPiece()
        cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
        )
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            unk_token="[UNK]",
            pad_token="[PAD]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            mask_token="[MASK]",
            model_max_length=_CTX,
        )
    specials = _ENCODER_SPECIALS["roberta"] if arch == "roberta" else _CAUSAL_SPECIALS
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        _CORPUS.splitlines(),
        trainers.BpeTrainer(
            vocab_size=_VOCAB,
            special_tokens=specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    if arch == "roberta":
        sep, cls = (cast(int, tok.token_to_id(t)) for t in ("</s>", "<s>"))  # trained specials
        tok.post_processor = processors.RobertaProcessing(("</s>", sep), ("<s>", cls))
        return PreTrainedTokenizerFast(
            tokenizer_object=tok,
            bos_token="<s>",
            eos_token="</s>",
            unk_token="<unk>",
            pad_token="<pad>",
            cls_token="<s>",
            sep_token="</s>",
            mask_token="<mask>",
            model_max_length=_CTX,
        )
    if arch != "gpt2":  # Llama-style tokenizers prepend <s>; GPT-2's does not
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", tok.token_to_id("<s>"))]
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        model_max_length=_CTX,
        chat_template=CHAT_TEMPLATE,
    )


def _config(arch: str, tokenizer):
    from transformers import AutoConfig

    fields = dict(TWINS[arch])
    model_type = fields.pop("model_type")
    ids = dict(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id
        if tokenizer.bos_token_id is not None
        else tokenizer.cls_token_id,
        eos_token_id=tokenizer.eos_token_id
        if tokenizer.eos_token_id is not None
        else tokenizer.sep_token_id,
    )
    # multimodal: the vocabulary is the text model's; image tokens lie past it
    if "text_config" in fields:
        fields["text_config"] = {**fields["text_config"], **ids, "initializer_range": 0.2}
        ids = dict(
            image_token_index=len(tokenizer),
            boi_token_index=len(tokenizer) + 1,
            eoi_token_index=len(tokenizer) + 2,
        )
    # A wide init makes activations and logits far from uniform, so rankings (MUI's top-k) have no
    # ties.
    return AutoConfig.for_model(model_type, initializer_range=0.2, **ids, **fields)


def n_layers(config) -> int:
    """Decoder layers of a twin's config (GPT-2's ``n_layer``, a multimodal model's text config)."""
    config = getattr(config, "text_config", None) or config
    return (
        getattr(config, "num_hidden_layers", None)
        or getattr(config, "n_layer", None)
        or config.num_layers
    )


def build_twin(
    arch: str, root: Path | None = None, seed: int = 0, revision: str | None = None
) -> Path:
    """Write ``twin/<arch>`` (and its SAEs) under ``root`` (default :func:`twins_root`); atomic per
    directory. With ``revision``: ``<arch>@<revision>`` with weights from ``seed``, without SAEs."""
    import torch
    from transformers import AutoModel, AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # "Writing model shards" bars for a 100 kB file
    root = Path(root) if root is not None else twins_root()
    tokenizer = _tokenizer(arch)
    config = _config(arch, tokenizer)
    torch.manual_seed(seed)
    auto = AutoModel if arch in ENCODER_TWINS else AutoModelForCausalLM
    model = auto.from_config(config, dtype=torch.float32).eval()
    name = arch if revision is None else f"{arch}@{revision}"
    with _atomic_dir(root / name) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
    if revision is not None:
        return root / name
    if arch not in ENCODER_TWINS:
        for layer in range(n_layers(config)):
            _write_sae(
                root / f"{arch}-sae" / f"blocks.{layer}.hook_resid_post",
                f"twin/{arch}",
                layer,
                d_in=_D,
                seed=seed + 1 + layer,
            )
    return root / arch


def _write_sae(path: Path, model_name: str, layer: int, d_in: int, seed: int) -> None:
    """A random standard (ReLU) SAE in sae_lens's on-disk format."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(seed)
    W_enc = torch.randn(d_in, TWIN_D_SAE, generator=g) / d_in**0.5
    weights = {
        "W_enc": W_enc,
        "b_enc": torch.zeros(TWIN_D_SAE),
        "W_dec": W_enc.T.contiguous(),
        "b_dec": torch.zeros(d_in),
    }
    cfg = {
        "architecture": "standard",
        "d_in": d_in,
        "d_sae": TWIN_D_SAE,
        "dtype": "float32",
        "device": "cpu",
        "apply_b_dec_to_input": True,
        "normalize_activations": "none",
        "reshape_activations": "none",
        # sae_lens reads metadata only when the training version is set (else: its older flat
        # format).
        "metadata": {
            "sae_lens_version": "6.54.12",
            "sae_lens_training_version": "6.54.12",
            "model_name": model_name,
            "hook_name": f"blocks.{layer}.hook_resid_post",
            "prepend_bos": True,
            "context_size": 128,
        },
    }
    with _atomic_dir(path) as tmp:
        (tmp / "cfg.json").write_text(json.dumps(cfg, indent=1))
        save_file(weights, str(tmp / "sae_weights.safetensors"))


def build_all(archs: list[str] | None = None, root: Path | None = None) -> list[Path]:
    """Build every twin (or ``archs``); existing ones are kept (the directory is content-keyed)."""
    out = []
    for arch in archs or list(TWINS):
        path = (Path(root) if root else twins_root()) / arch
        out.append(path if (path / "config.json").exists() else build_twin(arch, root=root))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kit twins", description="tiny random twins of real architectures"
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser(
        "build", help="write the twins (HF directories + sae_lens SAEs) into the cache"
    )
    b.add_argument("--arch", nargs="*", choices=list(TWINS), help="only these (default: all)")
    sub.add_parser("list", help="print each twin's name and directory")
    args = parser.parse_args(argv)
    if args.cmd == "build":
        for path in build_all(args.arch):
            print(f"twin/{path.name}: {path}")
        return 0
    for arch in TWINS:
        path = twins_root() / arch
        print(f"twin/{arch}: {path}{'' if (path / 'config.json').exists() else ' (not built)'}")
    return 0


@contextmanager
def _atomic_dir(target: Path) -> Iterator[Path]:
    """Write a directory under a temporary name, then rename it into place: a killed build
    leaves no half-written twin that later loads would trust."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield tmp
        if target.exists():  # built meanwhile by another process: same content, keep theirs
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
