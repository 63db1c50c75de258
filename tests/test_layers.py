"""The package's layers, read from every import statement of every kit module.

- A generic package (``kit.core``, ``kit.data``, ``kit.models``, ``kit.subjects``, ``kit.world``)
  never imports a paper package (``kit.mui``, ``kit.shortcut``, ``kit.cg``, ``kit.neuronvote``,
  ``kit.audits``, ``kit.configs``): a paper's method builds on the generic layers, never the
  reverse, so the generic layers load and test without any paper's code.
- ``kit.core`` imports no other kit package at all: what it needs from above (the notebooks'
  configs, the names they may mention) is registered with it (``kit.core.params.register_configs``).
- ``kit.data``, ``kit.models`` and ``kit.subjects`` never import the tiny world (``kit.world``),
  which builds on them: its names (``zoo/``, ``zoo-sae/``, ``tiny/<task>``), its tasks (items,
  groups, chance levels, answer rule) and its models' subject (``kit.world.WorldSubject``) are
  registered with their registries by ``kit.world.sources``, which the package root names as a
  provider (``kit.core.providers``).

Every import counts: at the top of a module, inside a function, under ``TYPE_CHECKING``, relative
(``from ..mui import metric``), ``importlib.import_module`` / ``__import__`` of a literal or
f-string module name (``f"kit.configs.{stem}"``), and a ``"kit.module:function"`` string (what jobs
and bench workloads import by name later). The modules at the package root (``kit/__init__.py``,
``kit/__main__.py``, ``kit/bench.py``) wire the layers together and are exempt.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

KIT = Path(__file__).resolve().parents[1] / "kit"

GENERIC = frozenset({"core", "data", "models", "subjects", "world"})
PAPER = frozenset({"mui", "shortcut", "cg", "neuronvote", "audits", "configs"})

CORE_RULE = "kit.core imports no other kit package"
GENERIC_RULE = "a generic package (core, data, models, subjects, world) imports no paper package"
WORLD_RULE = (
    "kit.data, kit.models and kit.subjects never import the tiny world (it registers its names, "
    "tasks and subject with them)"
)
BELOW_WORLD = frozenset({"data", "models", "subjects"})

# Violations a branch still to be merged removes, as (file, imported module) pairs; none now (MUI
# lives in kit.mui, which lends subjects their ``mui``/``key_neurons``; model names are resolved by
# the registry of model sources). test_pending_violations_still_exist fails for a stale entry.
PENDING: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Violation:
    path: str
    """The importing file, relative to the repository root (``kit/core/params.py``)."""
    line: int
    module: str
    """The imported module (``kit.world.pinned``; of an f-string, its literal prefix)."""
    rule: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.module}: {self.rule}"


FUNCTION_PATH = re.compile(r"(kit(?:\.\w+)+):\w+")
"""A ``"module:function"`` string naming a kit function that is imported by name later."""


def _static_prefix(node: ast.expr) -> str | None:
    """The module name of ``import_module``'s argument as far as it is literal: a string constant,
    or an f-string's leading constant parts (``f"kit.configs.{stem}"`` -> ``kit.configs.``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        prefix = ""
        for part in node.values:
            if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                break
            prefix += part.value
        return prefix or None
    return None


def _is_import_call(node: ast.Call) -> bool:
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in ("import_module", "__import__") and bool(node.args)


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in ``tree``, the source of ``module``.
    ``from kit import x`` yields ``kit.x`` (x may be a package or a name: both come from kit's
    root)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - (node.level - 1)])
                base = f"{anchor}.{base}" if base else anchor
            if base == "kit":
                for alias in node.names:
                    yield node.lineno, f"kit.{alias.name}"
            else:
                yield node.lineno, base
        elif isinstance(node, ast.Call) and _is_import_call(node):
            name = _static_prefix(node.args[0])
            if name is not None:
                yield node.lineno, name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            path = FUNCTION_PATH.fullmatch(node.value)
            if path is not None:
                yield node.lineno, path.group(1)


def rule_broken(importer: str, imported: str) -> str | None:
    """The rule that kit package ``importer`` (``core``) breaks by importing module ``imported``
    (``kit.world.pinned``), or None."""
    parts = imported.split(".")
    if parts[0] != "kit":
        return None
    target = parts[1] if len(parts) > 1 else ""
    if target == importer:
        return None
    if importer == "core":
        return CORE_RULE
    if importer in GENERIC and target in PAPER:
        return GENERIC_RULE
    if importer in BELOW_WORLD and target == "world":
        return WORLD_RULE
    return None


def violations(source: str, path: str) -> list[Violation]:
    """Every layer rule that the module at ``path`` (``kit/<package>/...py``) with ``source``
    breaks."""
    parts = Path(path).with_suffix("").parts
    if len(parts) < 3 or parts[0] != "kit":  # kit/__init__.py, kit/__main__.py: the root
        return []
    is_package = parts[-1] == "__init__"
    module = ".".join(parts[:-1] if is_package else parts)
    out = []
    for line, imported in imported_modules(ast.parse(source, path), module, is_package):
        rule = rule_broken(parts[1], imported)
        if rule is not None:
            out.append(Violation(path, line, imported, rule))
    return out


def kit_violations() -> list[Violation]:
    root = KIT.parent
    return [
        v
        for p in sorted(KIT.rglob("*.py"))
        for v in violations(p.read_text(), p.relative_to(root).as_posix())
    ]


def test_no_module_breaks_the_layers():
    found = [v for v in kit_violations() if (v.path, v.module) not in PENDING]
    assert not found, (
        "layer violations (move the code down a layer, or register it from above):\n"
        + ("\n".join(map(str, found)))
    )


def test_pending_violations_still_exist():
    """A pending pair that no longer occurs was fixed: remove it from PENDING."""
    present = {(v.path, v.module) for v in kit_violations()}
    assert not PENDING - present, f"fixed, remove from PENDING: {sorted(PENDING - present)}"


def test_the_walk_reads_every_kit_module():
    """Guard against a checker that silently reads nothing: it sees the packages and the imports
    that are allowed (kit.models importing kit.core, kit.cg importing kit.models)."""
    files = {p.relative_to(KIT).parts[0] for p in KIT.rglob("*.py")}
    assert GENERIC | PAPER <= files
    source = (KIT / "cg" / "saes.py").read_text()
    modules = {m for _, m in imported_modules(ast.parse(source), "kit.cg.saes", False)}
    assert "kit.models.minilm_sae" in modules


@pytest.mark.parametrize(
    "path, source, line, module, rule",
    [
        (
            "kit/core/x.py",
            "def f():\n    from kit.world.pinned import PINNED_ENV\n",
            2,
            "kit.world.pinned",
            CORE_RULE,
        ),
        ("kit/core/x.py", "import os\nimport kit.models.load\n", 2, "kit.models.load", CORE_RULE),
        ("kit/core/x.py", "from kit import configs\n", 1, "kit.configs", CORE_RULE),
        ("kit/core/x.py", "from kit import load_model\n", 1, "kit.load_model", CORE_RULE),
        ("kit/core/jobs/x.py", "from ...data import items\n", 1, "kit.data", CORE_RULE),
        (
            "kit/core/x.py",
            "import importlib\n\nm = importlib.import_module(f'kit.configs.{stem}')\n",
            3,
            "kit.configs.",
            CORE_RULE,
        ),
        (
            "kit/models/x.py",
            "def f():\n    import kit.mui.metric\n",
            2,
            "kit.mui.metric",
            GENERIC_RULE,
        ),
        (
            "kit/subjects/__init__.py",
            "from ..shortcut import variants\n",
            1,
            "kit.shortcut",
            GENERIC_RULE,
        ),
        ("kit/world/x.py", "from kit.cg.saes import X\n", 1, "kit.cg.saes", GENERIC_RULE),
        (
            "kit/models/x.py",
            "def f():\n    from kit.world import members\n",
            2,
            "kit.world",
            WORLD_RULE,
        ),
        (
            "kit/data/x.py",
            "importlib.import_module('kit.world.tasks')\n",
            1,
            "kit.world.tasks",
            WORLD_RULE,
        ),
        (
            "kit/subjects/x.py",
            "def f():\n    from kit.world.tasks import ALL_TASKS\n",
            2,
            "kit.world.tasks",
            WORLD_RULE,
        ),
        ("kit/subjects/x.py", "from kit import world\n", 1, "kit.world", WORLD_RULE),
        (
            "kit/core/x.py",
            "W = {\n    'mui': 'kit.mui.bench:run',\n}\n",
            2,
            "kit.mui.bench",
            CORE_RULE,
        ),
        (
            "kit/data/x.py",
            "__import__('kit.audits.result')\n",
            1,
            "kit.audits.result",
            GENERIC_RULE,
        ),
        (
            "kit/models/x.py",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kit.configs import x\n",
            3,
            "kit.configs",
            GENERIC_RULE,
        ),
    ],
)
def test_a_violation_is_named_with_file_line_and_rule(path, source, line, module, rule):
    (v,) = violations(source, path)
    assert (v.path, v.line, v.module, v.rule) == (path, line, module, rule)
    assert str(v) == f"{path}:{line} imports {module}: {rule}"


@pytest.mark.parametrize(
    "path, source",
    [
        ("kit/core/x.py", "from kit.core.paths import cache_dir\nfrom . import params\n"),
        ("kit/core/jobs/x.py", "from ..pinned import PINNED_ENV\nimport numpy\n"),
        (
            "kit/models/x.py",
            "from kit.core.pinned import enter_pinned\nfrom kit.data.items import Item\n",
        ),
        ("kit/world/x.py", "from kit.models import tl\nfrom kit.data.items import Item\n"),
        ("kit/world/x.py", "from kit.subjects.answers import Answers\n"),
        (
            "kit/cg/x.py",
            "from kit.models.minilm_sae import load_minilm_sae\nfrom kit.mui import metric\n",
        ),
        (
            "kit/configs/x.py",
            "from kit.world import members\nimportlib.import_module('kit.world.saes')\n",
        ),
        ("kit/__init__.py", "from kit import configs\nfrom kit.cg import saes\n"),
        ("kit/bench.py", "W = {'mui': 'kit.mui.bench:run', 'pinned': 'kit.world.bench:run'}\n"),
        (
            "kit/core/jobs/x.py",
            "Job('kit.core.jobs.selftest:write_value', {})\n'kit.mui: a note'\n",
        ),
        (
            "kit/models/x.py",
            "importlib.import_module(name)\nimportlib.import_module(f'{pkg}.mui')\n",
        ),
    ],
)
def test_allowed_imports_pass(path, source):
    assert violations(source, path) == []


def test_the_check_fails_on_a_violating_tree(tmp_path, monkeypatch):
    """The whole-package test itself fails when a module breaks a rule."""
    (tmp_path / "kit" / "core").mkdir(parents=True)
    (tmp_path / "kit" / "core" / "bad.py").write_text("def f():\n    from kit.world import build\n")
    monkeypatch.setitem(globals(), "KIT", tmp_path / "kit")
    with pytest.raises(AssertionError, match=r"kit/core/bad.py:2 imports kit.world: " + CORE_RULE):
        test_no_module_breaks_the_layers()
