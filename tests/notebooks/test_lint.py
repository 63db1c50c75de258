"""House rules for notebooks: one parameters cell, no committed outputs, no parameter reassigned."""

from __future__ import annotations

import ast
import json

import pytest

from kit.core.paths import REPO_ROOT

NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PARAMETERS = {"profile", "out_dir"}


def cells(path):
    return json.loads(path.read_text())["cells"]


def assigned_names(source: str) -> set[str]:
    """Names bound at any depth of a cell (assignments, for-targets, imports, defs, walrus...)."""
    source = "\n".join(l for l in source.splitlines() if not l.lstrip().startswith(("%", "!")))
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def test_there_are_notebooks():
    assert (REPO_ROOT / "notebooks" / "00_quickstart.ipynb") in NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_exactly_one_parameters_cell(path):
    tagged = [c for c in cells(path) if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{path.name}: {len(tagged)} cells tagged 'parameters' (papermill needs exactly 1)"
    assert assigned_names("".join(tagged[0]["source"])) == PARAMETERS, (
        f"{path.name}: the parameters cell should set exactly {sorted(PARAMETERS)}; other knobs belong in params/{path.stem}.yaml"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_committed_outputs(path):
    dirty = [i for i, c in enumerate(cells(path)) if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_later_cell_reassigns_a_parameter(path):
    seen_parameters = False
    for i, c in enumerate(cells(path)):
        if c["cell_type"] != "code":
            continue
        if "parameters" in c.get("metadata", {}).get("tags", []):
            seen_parameters = True
            continue
        clash = assigned_names("".join(c["source"])) & PARAMETERS
        assert not (seen_parameters and clash), (
            f"{path.name}, cell {i} reassigns {sorted(clash)}: papermill injects parameters right after the "
            "parameters cell, so this reassignment would silently win"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_params_and_starts_a_run(path):
    assert (REPO_ROOT / "params" / f"{path.stem}.yaml").is_file(), f"params/{path.stem}.yaml is missing"
    source = "".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "code")
    assert f'kit.start("{path.stem}"' in source, f"{path.name} should call kit.start(\"{path.stem}\", profile, out_dir)"
    assert "sys.path" not in source, f"{path.name}: no sys.path manipulation; kit is installed editable"
