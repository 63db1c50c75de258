"""Every form a model name can take, registered once: ``source_of(name)`` says which one a name is.

A model name is a small grammar (``zoo/<member>``, ``twin/<arch>@perturbed-<seed>``,
``<base>+<recipe>``, ``org/name@<revision>``, a ``.gguf`` file...). Each form is one
:class:`ModelSource`: how a name is recognised (a prefix, an exact list or a predicate), the loader
``kit.load_model`` calls, the identity caches key on, the names it knows, a one-line description and
an example. What callers want to know about a name ("is it a member of the tiny world?", "is it a
random initialisation?") is an attribute of its form, so nothing outside this registry (and the
tiny world's own source module) tests name prefixes::

    source_of("zoo/base-m").world_member        # True: built by the world, keyed by its build
    source_of("random/gpt2-small").random_init  # True
    source_of("twin/llama@perturbed-1").key     # 'twin-perturbed'

Forms are registered where their code lives: the generic ones (random shapes, encoders, real
fine-tunes, twins, ``real/``, GGUF files, local directories, hub ids) beside their loaders in
:mod:`kit.models.load`; the tiny world's (``zoo/``, its checkpoints, ``extra/``) by
:mod:`kit.world.sources`. This module imports neither: ``kit.models`` imports its loaders, and the
package root names the world's module as a provider (:mod:`kit.core.providers`), imported on the
first lookup.

SAE names are a grammar too (``zoo-sae/...``, ``minilm-sae/...``, ``twin-sae/...``, a directory,
``<release>/<sae_id>``): :class:`SaeSource` forms in a second table, ``sae_source_of(name)``,
registered the same way (the world registers ``zoo-sae/``).

A name is matched against the forms in ``rank`` order (exact names, then prefixed forms with a
qualifier such as ``@step-``, then plain prefixes, then paths, then hub ids), first match wins.
``python -m kit models`` prints the table (``--markdown`` for the docs).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from kit.core import providers

EXACT, QUALIFIED, PREFIXED, PATH, HUB_REVISION, HUB = 0, 1, 2, 3, 4, 5
"""Ranks: the order forms are tried in (an exact name before a prefix, a prefix before a path, a
path before a hub id)."""


class UnknownModelError(ValueError):
    """A name of no registered form (or of a form whose loader finds no such model)."""


@dataclass(frozen=True)
class LoadRequest:
    """What ``kit.load_model`` was asked besides the name (each loader reads the fields it uses,
    exactly as the branch of ``load_model`` it replaces did)."""

    device: str = "cpu"
    world: str | None = None
    dtype: str | None = None
    revision: str | None = None
    device_map: str | None = None
    process_weights: bool = False
    gguf: str | None = None
    n_ctx: int | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


def looks_local(name: str) -> bool:
    """A name that can only be a path (absolute, ``./``, ``~``, ``.gguf``, more than one ``/``): a
    missing one is reported as a missing path, not as a hub failure. Hub ids are ``org/name``."""
    return (
        name.startswith(("/", "./", "../", "~", ".\\"))
        or name in (".", "..")
        or name.endswith(".gguf")
        or name.count("/") > 1
        or "\\" in name
    )


@dataclass(frozen=True)
class ModelSource:
    """One form of model name."""

    key: str
    """Short stable id (``zoo``, ``twin-perturbed``, ``hub``...)."""
    form: str
    """The form as a reader writes it: ``zoo/<member>``."""
    family: str
    """Forms of one kind of model share it (``twin`` for ``twin/<arch>`` and its revisions)."""
    example: str
    """A name of this form (``source_of(example)`` is this form)."""
    description: str
    """One line: what a name of this form is."""
    load: Callable[[str, LoadRequest], Any]
    """``load(name, request)``: the model (``kit.load_model`` calls it)."""
    rank: int = PREFIXED
    prefix: str | None = None
    """Names start with it; ``matches`` (if given) must hold too."""
    matches: Callable[[str], bool] | None = None
    identity: Callable[[str, str | None], str] | None = None
    """``identity(name, world)``: what caches key on (``kit.models.identity.name_identity``); None:
    an existing local path by its content, anything else by the name
    (:func:`kit.models.identity.path_or_name`)."""
    names: Callable[[str | None], list[str]] | None = None
    """``names(world)``: the names of this form that exist; None for an open form (hub ids)."""
    checked: bool = False
    """A config naming one not in ``names(world)`` is refused before anything loads
    (``kit.core.params.name_errors``)."""
    noun: str = "model"
    """What a name of the form is, in an error message (``zoo member``)."""
    hf_dir: Callable[[str, str | None], Path] | None = None
    """``hf_dir(name, revision)``: the local Hugging Face directory (``kit.models.load.model_dir``);
    None: the form has none (it loads with ``kit.load_model`` only)."""
    tiny_world: bool = False
    """Speaks the tiny world's vocabulary and answers its tasks (``zoo/``, ``extra/``)."""
    world_member: bool = False
    """A member the world's build made (``zoo/...``): content-addressed by its build key, with its
    SAEs, tokenizer and shape in the world's spec."""
    random_init: bool = False
    """Randomly initialised weights of a real shape (speed measurements)."""
    pretrained: bool = False
    """A published pretrained model's weights (``real/``, hub ids, the MiniLM encoder); a fine-tune
    made here (``<base>+<recipe>``) is not one."""
    owner: str = ""
    """The module that registered it."""

    def match(self, name: str) -> bool:
        if self.prefix is not None and not name.startswith(self.prefix):
            return False
        return self.matches is None or bool(self.matches(name))

    def rest(self, name: str) -> str:
        """``name`` without the form's prefix (``zoo/base-m`` -> ``base-m``)."""
        return name[len(self.prefix) :] if self.prefix and name.startswith(self.prefix) else name


def _refuse(name: str, request: LoadRequest) -> Any:
    return source_of(name)  # raises: no form matches


NO_FORM = ModelSource(
    key="none",
    family="none",
    form="",
    example="",
    description="no registered form",
    load=_refuse,
    matches=lambda name: False,
)
"""What :func:`form_of` answers for a name of no form (never registered, never matches)."""

_FORMS: dict[str, ModelSource] = {}


def _add(table: dict, source, what: str):
    """Put ``source`` in ``table`` under its key (a module re-imported registers its forms again:
    the newer one wins); two modules claiming one key fail naming both."""
    old = table.get(source.key)
    if old is not None and old.owner != source.owner:
        raise ValueError(
            f"{what} {source.key!r} is registered by {old.owner} already; "
            f"{source.owner} must use another key"
        )
    table[source.key] = source
    return source


def _in_order(table: dict) -> list:
    """``table``'s forms in matching order: by rank, then in registration order."""
    providers.ensure()
    order = list(table)
    return sorted(table.values(), key=lambda s: (s.rank, order.index(s.key)))


def register(source: ModelSource) -> ModelSource:
    """Add ``source`` (a module re-imported registers its forms again: the newer one wins); two
    modules claiming one key fail naming both."""
    return _add(_FORMS, source, "model source")


def sources() -> list[ModelSource]:
    """Every registered form, in matching order."""
    return _in_order(_FORMS)


def source(key: str) -> ModelSource:
    """The form registered as ``key``."""
    providers.ensure()
    if key not in _FORMS:
        raise ValueError(f"model source {key!r} unknown; allowed: {', '.join(_FORMS)}")
    return _FORMS[key]


def find(name: Any) -> ModelSource | None:
    """The form of ``name``; None when no form matches (or ``name`` is not a non-empty string)."""
    if not isinstance(name, str) or not name:
        return None
    return next((s for s in sources() if s.match(name)), None)


def form_of(name: Any) -> ModelSource:
    """The form of ``name``, or :data:`NO_FORM` (every attribute False) when none matches: for
    questions about names that may be labels, not model names (``form_of(m).world_member``)."""
    return find(name) or NO_FORM


def prefixed(name: Any) -> ModelSource | None:
    """The form of ``name`` among the prefixed forms only (no path or hub predicate runs): for
    scanning arbitrary strings, e.g. every field of a config."""
    if not isinstance(name, str) or not name:
        return None
    return next((s for s in sources() if s.prefix is not None and s.match(name)), None)


def source_of(name: Any, field: str = "model") -> ModelSource:
    """The form of ``name``; a name of no form fails naming ``field`` and every form."""
    found = find(name)
    if found is None:
        raise UnknownModelError(
            f"{field}={name!r} is not a model name; allowed forms: "
            + "; ".join(f"{s.form} (e.g. {s.example})" for s in sources())
        )
    return found


def table(markdown: bool = False) -> str:
    """The forms with an example each, as text (or a Markdown table)."""
    rows = [(s.key, s.form, s.example, s.description) for s in sources()]
    if markdown:
        lines = ["| key | form | example | what it is |", "|---|---|---|---|"]
        lines += [f"| {k} | `{f}` | `{e}` | {d} |" for k, f, e, d in rows]
        return "\n".join(lines)
    w = [max(len(r[i]) for r in [*rows, ("key", "form", "example", "")]) for i in range(3)]
    head = f"{'key':{w[0]}}  {'form':{w[1]}}  {'example':{w[2]}}  what it is"
    body = [f"{k:{w[0]}}  {f:{w[1]}}  {e:{w[2]}}  {d}" for k, f, e, d in rows]
    return "\n".join([head, "-" * len(head), *body])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m kit models [--markdown] [--list KEY] [--world W]``."""
    ap = argparse.ArgumentParser(
        prog="python -m kit models", description="the forms a model name can take"
    )
    ap.add_argument("--markdown", action="store_true", help="a Markdown table (for the docs)")
    ap.add_argument("--list", metavar="KEY", help="the names of one form that exist (its key)")
    ap.add_argument("--world", default=None, help="the tiny world whose members are listed")
    args = ap.parse_args(list(argv) if argv is not None else None)
    if args.list:
        s = source(args.list)
        if s.names is None:
            print(f"{s.form}: an open form (no list of names); e.g. {s.example}")
            return 1
        print("\n".join(s.names(args.world)))
        return 0
    print(table(markdown=args.markdown))
    return 0


# ---------------------------------------------------------------------- SAE names
@dataclass(frozen=True)
class SaeSource:
    """One form of SAE name (``kit.load_sae`` asks :func:`sae_source_of` for it)."""

    key: str
    """Short stable id (``zoo-sae``, ``release``...)."""
    form: str
    """The form as a reader writes it: ``zoo-sae/<member>/<arch>-<width>``."""
    example: str
    description: str
    load: Callable[[str, str, str | None], Any]
    """``load(name, device, world)``: the sae_lens SAE."""
    rank: int = PREFIXED
    prefix: str | None = None
    matches: Callable[[str], bool] | None = None
    model: Callable[[str], str] | None = None
    """``model(name)``: the model whose activations the SAE reads, when the name says it
    (``zoo-sae/base-m/...`` -> ``zoo/base-m``); None: read it from the SAE's metadata."""
    labelled: Callable[[str, str | None], tuple[Any, list[str], str]] | None = None
    """``labelled(name, world)``: ``(sae, one label per feature, where the labels come from)`` for
    kit's own SAEs (:func:`kit.models.sae_export.sae_with_labels`); None: no labels of ours."""
    neuronpedia_model: str | None = None
    """The Neuronpedia-style model id of every SAE of the form, when one model (``minilm-sae/``)."""
    published: bool = False
    """A sae_lens pretrained release (it may have a Neuronpedia id of its own)."""
    names: Callable[[str | None], list[str]] | None = None
    """``names(world)``: every SAE of the form, when they can be listed offline (the tiny world's):
    a config's SAE names are checked against it before a run starts."""
    owner: str = ""

    def match(self, name: str) -> bool:
        if self.prefix is not None and not name.startswith(self.prefix):
            return False
        return self.matches is None or bool(self.matches(name))

    def rest(self, name: str) -> str:
        """``name`` without the form's prefix (``twin-sae/llama/h`` -> ``llama/h``)."""
        return name[len(self.prefix) :] if self.prefix and name.startswith(self.prefix) else name


_SAE_FORMS: dict[str, SaeSource] = {}


def register_sae(source: SaeSource) -> SaeSource:
    """Add an SAE-name form (as :func:`register` does for model names)."""
    return _add(_SAE_FORMS, source, "SAE source")


def sae_sources() -> list[SaeSource]:
    """Every registered SAE-name form, in matching order."""
    return _in_order(_SAE_FORMS)


def find_sae(name: Any) -> SaeSource | None:
    """The form of SAE name ``name``; None when none matches (or it is not a non-empty string)."""
    if not isinstance(name, str) or not name:
        return None
    return next((s for s in sae_sources() if s.match(name)), None)


def sae_prefixed(name: Any) -> SaeSource | None:
    """The form of SAE name ``name`` among the prefixed forms only (as :func:`prefixed` for model
    names: for scanning arbitrary strings)."""
    if not isinstance(name, str) or not name:
        return None
    return next((s for s in sae_sources() if s.prefix is not None and s.match(name)), None)


def sae_source_of(name: Any, field: str = "sae") -> SaeSource:
    """The form of SAE name ``name``; a name of no form fails naming ``field`` and every form."""
    found = find_sae(name)
    if found is None:
        raise ValueError(
            f"{field}={name!r} is not an SAE name; allowed forms: "
            + "; ".join(f"{s.form} (e.g. {s.example})" for s in sae_sources())
        )
    return found
