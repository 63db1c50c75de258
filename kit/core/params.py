"""Named parameter profiles: ``params/NN_name.yaml`` -> a typed, documented config.

A params file looks like::

    default: tiny
    profiles:
      tiny:            # CPU, offline, minutes (the default)
        world: tiny
        n_items: 200
      smoke:           # what the test suite executes: the micro world, tiny sizes
        inherit: tiny
        world: micro
        n_items: 8
      paper:           # the paper's own models and benchmarks (needs network and GPUs)
        ...

Each notebook's config class lives in ``kit/configs/<name>.py`` (``01_utility_law`` ->
``kit.configs.utility_law``) as a pydantic model named ``Config``; its fields carry a docstring
each. Profiles may ``inherit`` another profile of the same file and override some fields.
Every error names the file, the profile, the field and what is allowed.

The core imports no other kit package, so ``kit.configs`` registers how to find those classes and
how to check the model, SAE, task and benchmark names they mention (:func:`register_configs`;
``import kit`` runs it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kit.core.paths import REPO_ROOT, atomic_write_text

PARAMS_DIR = REPO_ROOT / "params"


MAX_SEED = 2**31 - 1
"""Largest seed: numpy's legacy seeding takes < 2**32, and notebooks add small offsets to it."""
DEVICE_PATTERN = re.compile(r"cpu|mps|cuda(:\d+)?")
DEVICES = "cpu, cuda, cuda:N (N = 0, 1, ...), mps"


class ParamsError(ValueError):
    """A params file, profile or field is invalid; the message says which and what is allowed."""


class BaseConfig(BaseModel):
    """Fields every notebook config has. Subclass it in ``kit/configs/<name>.py`` as ``Config``."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    world: Literal["tiny", "micro"] = "tiny"
    """Embedded world that ``zoo/...`` names load from (``micro`` is the test suite's small one)."""
    seed: int = Field(0, ge=0, le=MAX_SEED)
    """Seed for every RNG the notebook touches (python, numpy, torch): 0 .. 2**31 - 1."""
    device: str = "cpu"
    """Torch device for models (``cpu``, ``cuda``, ``cuda:1``..., ``mps``)."""
    engine: Literal["inline", "local", "ray"] = "local"
    """Where ``kit.core.jobs`` runs the notebook's jobs: ``inline`` (this process, one after
    another), ``local`` (worker processes over this machine's cores) or ``ray`` (a Ray cluster, see
    ``ray_address``)."""
    ray_address: str | None = None
    """Ray cluster for ``engine: ray``: ``auto`` (on a node of it), ``ray://head:10001`` (Ray
    Client) or ``head:6379``; None starts a local Ray for each sweep. Not used by the other
    engines."""
    max_workers: int | None = Field(default=None, ge=1)
    """Worker processes (CPU slots) of ``engine: local``, and the CPUs of a Ray started here; None:
    all cores."""

    @field_validator("ray_address")
    @classmethod
    def _ray_address_form(cls, value: str | None) -> str | None:
        if (
            value is None
            or value in ("auto", "local")
            or re.fullmatch(r"(ray://)?[\w.\-\[\]:]+:\d+", value)
        ):
            return value
        raise ValueError(
            "allowed values: null, auto, local, ray://HOST:PORT (Ray Client) or HOST:PORT"
        )

    def requirements(self) -> list[str]:
        """What the notebook's sections need beyond well-formed fields (enough models to rank, an
        SAE per model, names the tokenizer has, an affordable cost), each a line naming the field;
        checked by :func:`load_params` after the names, before anything runs (configs override
        it)."""
        return []

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if not DEVICE_PATTERN.fullmatch(v):
            raise ValueError(f"{v!r} is not a torch device; allowed values: {DEVICES}")
        return v


Count = Annotated[int, Field(ge=1)]
"""A list item that counts something (a sample size, a number of neurons, a top-s): >= 1."""
Fraction = Annotated[float, Field(gt=0.0, le=1.0)]
"""A list item that is a fraction in (0, 1]."""
Positive = Annotated[float, Field(gt=0.0)]
"""A list item that is a positive number (a scale, a learning rate)."""


def distinct(field: str, values: list[Any] | tuple[Any, ...] | None) -> None:
    """Raise ``ValueError`` naming ``field`` and its repeated entries if an entry occurs twice."""
    if values is None:
        return
    seen, twice = set(), []
    for v in values:
        if v in seen and v not in twice:
            twice.append(v)
        seen.add(v)
    if twice:
        raise ValueError(
            f"field {field!r}: {twice} listed more than once (got {list(values)}); list each once"
        )


def notebook_names() -> list[str]:
    """Notebook ids that have a params file, e.g. ``['00_quickstart', '01_utility_law']``."""
    return sorted(p.stem for p in PARAMS_DIR.glob("[0-9][0-9]_*.yaml"))


ConfigFinder = Callable[[str], "type[BaseConfig]"]
"""Notebook id (``01_utility_law``) -> its config class; raises :class:`ParamsError` naming the
notebooks with params when there is none."""
NameCheck = Callable[["BaseConfig"], list[str]]
"""A config -> one line per name in its fields that cannot load (empty: all can)."""


@dataclass(frozen=True)
class ConfigRegistry:
    """Where the notebooks' config classes are and how to check the names they mention, as the
    package that defines them registered it (:func:`register_configs`)."""

    find: ConfigFinder
    name_errors: NameCheck


_REGISTRY: list[ConfigRegistry] = []


def register_configs(find: ConfigFinder, name_errors: NameCheck) -> None:
    """Register the notebooks' configs (``kit.configs`` calls this once on import; ``import kit``
    imports it). A later registration replaces an earlier one."""
    _REGISTRY[:] = [ConfigRegistry(find, name_errors)]


def _registry() -> ConfigRegistry:
    if not _REGISTRY:
        raise RuntimeError(
            "no notebook configs registered: import kit (or kit.configs) before loading params"
        )
    return _REGISTRY[0]


def config_class(notebook: str) -> type[BaseConfig]:
    """The config class of ``notebook`` (``01_utility_law`` -> ``kit.configs.utility_law.Config``),
    found by the registered :data:`ConfigFinder`."""
    return _registry().find(notebook)


def read_profiles(path: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """Parse a params file: (default profile name, raw profiles). Malformed YAML names the file."""
    try:
        doc = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as e:
        raise ParamsError(f"{path}: malformed YAML: {e}") from e
    if (
        not isinstance(doc, dict)
        or not isinstance(doc.get("profiles"), dict)
        or not doc["profiles"]
    ):
        raise ParamsError(
            f"{path}: expected a mapping with a non-empty 'profiles:' mapping at the top"
        )
    unknown = set(doc) - {"default", "profiles"}
    if unknown:
        raise ParamsError(
            f"{path}: unknown top-level key(s) {sorted(unknown)}; allowed: default, profiles"
        )
    profiles = doc["profiles"]
    for name, body in profiles.items():
        if body is not None and not isinstance(body, dict):
            raise ParamsError(f"{path}: profile {name!r} must be a mapping of field: value")
    default = doc.get("default", "tiny")
    if default not in profiles:
        raise ParamsError(
            f"{path}: default profile {default!r} is not defined; profiles: {', '.join(profiles)}"
        )
    return default, {k: dict(v or {}) for k, v in profiles.items()}


def resolve_profile(path: Path, profiles: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    """Fields of profile ``name`` with ``inherit`` chains applied (child fields win)."""
    chain: list[str] = []
    fields: dict[str, Any] = {}
    while name is not None:
        if name not in profiles:
            where = f"profile {chain[-1]!r} inherits" if chain else "profile"
            raise ParamsError(
                f"{path}: {where} {name!r} unknown; allowed values: {', '.join(profiles)}"
            )
        if name in chain:
            raise ParamsError(f"{path}: profile inheritance loops: {' -> '.join(chain + [name])}")
        chain.append(name)
        body = dict(profiles[name])
        parent = body.pop("inherit", None)
        fields = {**body, **fields}
        name = parent
    return fields


def load_params(
    notebook: str,
    profile: str | None = None,
    overrides: dict[str, Any] | None = None,
    path: Path | None = None,
) -> BaseConfig:
    """Load ``params/<notebook>.yaml``, pick ``profile`` (default: the file's default), validate.

    ``overrides`` replace single fields (what papermill ``-p``, ``kit run --set`` or a user passes)
    and are validated exactly like the file's values; the error then says the value was an override.
    """
    path = Path(path) if path else PARAMS_DIR / f"{notebook}.yaml"
    if not path.is_file():
        raise ParamsError(
            f"no params file {path}; notebooks with params: {', '.join(notebook_names())}"
        )
    default, profiles = read_profiles(path)
    profile = profile or default
    fields = resolve_profile(path, profiles, profile)
    fields.update(overrides or {})
    cls = config_class(notebook)
    where = f"{path}, profile {profile!r}"
    if overrides:
        where += f" with overrides {format_overrides(overrides)}"
    try:
        cfg = cls(**fields)
    except ValidationError as e:
        raise ParamsError(explain(e, cls, where, fields)) from None
    errors = name_errors(cfg)
    if errors:  # a typo in a name should fail here, not minutes into the run
        raise ParamsError("\n".join(f"{where}: {e}" for e in errors))
    errors = cfg.requirements()
    if errors:  # a section that cannot run should fail here, not after the sections before it
        raise ParamsError("\n".join(f"{where}: {e}" for e in errors))
    return cfg


def name_errors(cfg: BaseConfig) -> list[str]:
    """Names in ``cfg``'s fields that cannot load, found without loading anything, by the
    registered :data:`NameCheck` (``kit.configs.names.name_errors``)."""
    return _registry().name_errors(cfg)


def parse_assignment(text: str) -> tuple[str, Any]:
    """``"field=value"`` (as ``kit run --set`` takes it) -> ``(field, value)``, the value read as
    YAML.

    YAML makes ``n_eval=5`` an int, ``tasks=[add, code]`` a list and ``models=null`` None, exactly
    as the same text would be read from a params file.
    """
    field, sep, raw = text.partition("=")
    field = field.strip()
    if not sep or not field.isidentifier():
        raise ParamsError(
            f"--set {text!r}: expected field=value, e.g. --set n_items=20 or --set tasks=[add,code]"
        )
    try:
        return field, yaml.safe_load(raw)
    except yaml.YAMLError as e:
        raise ParamsError(f"--set {text!r}: the value is not valid YAML: {e}") from None


def format_overrides(overrides: dict[str, Any]) -> str:
    """One line naming the overridden fields, for ``params.yaml`` and logs (``n_eval=5,
    tasks=[add]``)."""
    return ", ".join(
        f"{k}={yaml.safe_dump(v, default_flow_style=True).strip().removesuffix('...').strip()}"
        for k, v in overrides.items()
    )


_BOUNDS = (
    ("ge", ">= {}"),
    ("gt", "> {}"),
    ("le", "<= {}"),
    ("lt", "< {}"),
    ("min_length", "at least {} item(s)"),
    ("max_length", "at most {} item(s)"),
    ("pattern", "matching {}"),
)


_BOUND_ERRORS = (
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
    "too_short",
    "too_long",
)


def _allowed(ctx: dict[str, Any], metadata: list[Any] | None = None) -> str:
    """What is allowed: a literal's values, else every bound of the field (``metadata``: its
    constraints, ``Ge(ge=0)``...) or of the error's context."""
    if ctx.get("expected"):
        return str(ctx["expected"])
    bounds = {k: getattr(m, k) for m in metadata or () for k, _ in _BOUNDS if hasattr(m, k)} or ctx
    return ", ".join(form.format(bounds[k]) for k, form in _BOUNDS if k in bounds)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + " ...]"


def explain(
    error: ValidationError, cls: type[BaseModel], where: str, given: dict[str, Any] | None = None
) -> str:
    """Turn a pydantic error into lines naming the field, what was given and what is allowed.

    A list item's error names the item and the whole list (``growth_sizes[0]``: -1 in [-1, 0]).
    A check across fields (a model validator) prints its own message, which names the fields; never
    the whole config."""
    lines = []
    for err in error.errors():
        loc = err["loc"]
        msg = err["msg"].removeprefix("Value error, ")
        if not loc:
            lines.append(f"{where}: {msg}")
            continue
        top = str(loc[0])
        field = top + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in loc[1:])
        if err["type"] == "extra_forbidden":
            allowed = ", ".join(cls.model_fields)
            lines.append(f"{where}: unknown field {field!r}; allowed fields: {allowed}")
            continue
        info = cls.model_fields.get(top)
        doc = (
            f" ({' '.join(info.description.split())})"
            if info is not None and info.description
            else ""
        )
        got = f"got {_short(err.get('input'))}"
        if len(loc) > 1 and given is not None and top in given:
            got += f" in {top}={_short(given[top])}"
        whole_field = len(loc) == 1 and err["type"] in _BOUND_ERRORS and info is not None
        allowed = _allowed(err.get("ctx") or {}, info.metadata if whole_field and info else None)
        hint = f"; allowed values: {allowed}" if allowed and "allowed" not in msg else ""
        lines.append(f"{where}: field {field!r}{doc}: {msg} ({got}){hint}")
    return "\n".join(lines)


def to_yaml(cfg: BaseConfig) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def parameters_cell(notebook: str) -> str:
    """The source of ``notebook``'s papermill ``parameters`` cell: ``profile``, ``out_dir`` and
    every config field set to ``None`` (keep the profile's value). ``tests/notebooks/test_lint.py``
    checks each notebook's cell is exactly this; ``python -m kit notebooks sync`` rewrites the
    cells."""
    profiles = ", ".join(read_profiles(PARAMS_DIR / f"{notebook}.yaml")[1])
    stem = config_class(notebook).__module__.rsplit(".", 1)[-1]
    lines = [
        f'profile = "tiny"  # a profile of params/{notebook}.yaml: {profiles}',
        f"out_dir = None  # None: runs/<profile>/interactive/{notebook}/",
        "# Overrides of the profile (papermill -p NAME VALUE, kit run --set NAME=VALUE), "
        "validated like",
        f"# the YAML; None keeps the profile's value. kit/configs/{stem}.py documents each field.",
    ]
    lines += [f"{field} = None" for field in config_class(notebook).model_fields]
    return "\n".join(lines)


def sync_parameters_cells() -> list[str]:
    """Rewrite every notebook's ``parameters`` cell as :func:`parameters_cell` (outputs kept);
    the notebooks whose cell changed."""
    import json

    changed = []
    for notebook in notebook_names():
        path = REPO_ROOT / "notebooks" / f"{notebook}.ipynb"
        nb = json.loads(path.read_text())
        cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
        source = parameters_cell(notebook).splitlines(keepends=True)
        if "".join(cell["source"]) != "".join(source):
            cell["source"] = source
            atomic_write_text(path, json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            changed.append(notebook)
    return changed
