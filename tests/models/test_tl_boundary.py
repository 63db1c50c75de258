"""Layout lints: one TransformerLens adapter, no import circle anywhere in ``kit``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2] / "kit"
ADAPTER = KIT / "models" / "tl.py"

# What only kit/models/tl.py may touch: TransformerLens internals by attribute or keyword.
INTERNALS = re.compile(
    r"\.hook_dict\b|\.run_with_cache\(|\.run_with_hooks\(|\.hooks\(|\.add_hook\(|\.reset_hooks\(|"
    r"past_kv_cache|set_use_split_qkv_input|\.input_to_embed\(|\.blocks\b|\.ln_final\b|\.unembed\(|"
    r"\bmodel\.W_[A-Z]\w*|\.mlp\.W_"
)
# The tiny world builds native HookedTransformers: its constructors (and types) may be imported
# there.
ALLOWED_IMPORTS = {"HookedTransformer", "HookedTransformerConfig"}


def _modules() -> list[Path]:
    return sorted(p for p in KIT.rglob("*.py") if p != ADAPTER)


def _module_name(path: Path) -> str:
    parts = path.relative_to(KIT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_only_the_adapter_imports_transformer_lens():
    offenders = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import) and any(
                a.name.split(".")[0] == "transformer_lens" for a in node.names
            ):
                offenders.append(
                    f"{path.relative_to(KIT.parent)}:{node.lineno} import transformer_lens"
                )
            elif (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] == "transformer_lens"
            ):
                names = {a.name for a in node.names}
                in_world = path.parent.name == "world"
                if not (
                    in_world and node.module == "transformer_lens" and names <= ALLOWED_IMPORTS
                ):
                    offenders.append(
                        f"{path.relative_to(KIT.parent)}:{node.lineno} from {node.module} import "
                        f"{sorted(names)}"
                    )
    assert not offenders, "TransformerLens imported outside kit/models/tl.py:\n" + "\n".join(
        offenders
    )


def test_no_transformer_lens_internals_outside_the_adapter():
    offenders = []
    for path in _modules():
        for n, line in enumerate(path.read_text().splitlines(), 1):
            # calls through the adapter are fine
            code = re.sub(r"\btl\.\w+", "tl._", line.split("#", 1)[0])
            if INTERNALS.search(code) and not code.strip().startswith(('"""', "``")):
                offenders.append(f"{path.relative_to(KIT.parent)}:{n}: {line.strip()}")
    assert not offenders, "use kit.models.tl instead of TransformerLens internals:\n" + "\n".join(
        offenders
    )


def _import_graph() -> dict[str, set[str]]:
    names = {_module_name(p): p for p in KIT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in names}
    for mod, path in names.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    src = ".".join(base + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                targets = [
                    f"{src}.{a.name}" if f"{src}.{a.name}" in names else src for a in node.names
                ]
            for t in targets:
                while t and t not in names and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in names and t != mod:
                    graph[mod].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


KNOWN_CYCLES: list[list[str]] = []
"""Circles still to be undone (none: the registries of names are filled from above, by
:mod:`kit.core.providers`, so no generic layer imports the world)."""


def test_no_import_circle_in_kit():
    """Imports at any level (lazy ones in functions included) form no cycle, except a package
    re-exporting from its own submodules (``kit.mui`` -> ``kit.mui.metric``), which is not a cycle
    unless a submodule imports its package back, and the known circle above."""
    cycles = _cycles(_import_graph())
    new = [c for c in cycles if c not in KNOWN_CYCLES]
    assert not new, "import circles in kit:\n" + "\n".join(" <-> ".join(c) for c in new)
    fixed = [c for c in KNOWN_CYCLES if c not in cycles]
    assert not fixed, f"a known circle is gone or changed: update KNOWN_CYCLES ({fixed})"


def test_the_lint_catches_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize(
    "line",
    [
        "_, c = model.run_with_cache(x)",
        "for b in model.blocks:",
        "model.W_U[:, 3]",
        "with model.hooks(fwd_hooks=h):",
        "model(x, past_kv_cache=c)",
    ],
)
def test_the_lint_catches_internals(line):
    assert INTERNALS.search(line)


def test_no_private_transformer_lens_names_anywhere_in_kit():
    """TransformerLens's private helpers (``_get_rope_theta``, ``_apply_llama3_rope_scaling``...)
    change without notice: kit reads RoPE from the config itself (kit.models.architectures)."""
    offenders = []
    for path in sorted(KIT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").split(".")[0] == "transformer_lens"
            ):
                private = [a.name for a in node.names if a.name.startswith("_")]
                private += [part for part in (node.module or "").split(".") if part.startswith("_")]
                if private:
                    offenders.append(
                        f"{path.relative_to(KIT.parent)}:{node.lineno} {node.module}: {private}"
                    )
    assert not offenders, "private TransformerLens names imported:\n" + "\n".join(offenders)
