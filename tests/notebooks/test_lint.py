"""House rules for notebooks: one parameters cell that declares the config, the outputs of its own code
shipped, no parameter reassigned."""

from __future__ import annotations

import ast
import json

import pytest

from kit.core.params import config_class
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
    fields = set(config_class(path.stem).model_fields)
    declared = assigned_names("".join(tagged[0]["source"]))
    assert declared == PARAMETERS | fields, (
        f"{path.name}: the parameters cell should set {sorted(PARAMETERS)} and every field of kit/configs "
        f"(papermill -p and kit run --set reach only declared names); missing {sorted(PARAMETERS | fields - declared)}, "
        f"not config fields {sorted(declared - PARAMETERS - fields)}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_defers_to_the_params_file(path):
    """Each config field is declared as None (the profile's value), so params/NN.yaml stays the one source."""
    cell = next(c for c in cells(path) if "parameters" in c.get("metadata", {}).get("tags", []))
    values = {t.id: n.value for n in ast.parse("".join(cell["source"])).body if isinstance(n, ast.Assign) for t in n.targets}
    not_none = [f for f in config_class(path.stem).model_fields
                if not (isinstance(values.get(f), ast.Constant) and values[f].value is None)]
    assert not not_none, f"{path.name}: parameters {not_none} should be None in the parameters cell (set values in params/{path.stem}.yaml)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_sees_every_config_field(path):
    """What papermill parses from the parameters cell: -p NAME for every field, no "unknown parameter"."""
    import papermill

    declared = set(papermill.inspect_notebook(str(path)))
    assert set(config_class(path.stem).model_fields) | PARAMETERS <= declared


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ships_the_outputs_of_its_own_code(path):
    """A reader sees the committed tiny run's figures, tables and claims without running anything, and
    they were made by the code cells the notebook holds (the hash recorded in metadata.kit)."""
    from kit.core.notebook_outputs import problems

    found = problems(path)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_later_cell_reassigns_a_parameter(path):
    seen_parameters = False
    for i, c in enumerate(cells(path)):
        if c["cell_type"] != "code":
            continue
        if "parameters" in c.get("metadata", {}).get("tags", []):
            seen_parameters = True
            continue
        # Config fields may be reused as names later: kit.start takes them out of the namespace, so a later
        # binding never reaches the config; profile and out_dir stay and must not be rebound.
        clash = assigned_names("".join(c["source"])) & PARAMETERS
        assert not (seen_parameters and clash), (
            f"{path.name}, cell {i} reassigns {sorted(clash)}: papermill injects parameters right after the "
            "parameters cell, so this reassignment would silently win"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_has_params_and_starts_a_run(path):
    assert (REPO_ROOT / "params" / f"{path.stem}.yaml").is_file(), f"params/{path.stem}.yaml is missing"
    source = "".join("".join(c["source"]) for c in cells(path) if c["cell_type"] == "code")
    call = f'kit.start("{path.stem}", profile, out_dir, namespace=globals())'
    assert call in source, f"{path.name} should call {call} (the parameters cell's values reach the config that way)"
    assert "sys.path" not in source, f"{path.name}: no sys.path manipulation; kit is installed editable"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_is_the_generated_one(path):
    from kit.core.params import parameters_cell

    cell = next(c for c in cells(path) if "parameters" in c.get("metadata", {}).get("tags", []))
    assert "".join(cell["source"]) == parameters_cell(path.stem), (
        f"{path.name}: the parameters cell is out of date with kit/configs; run python -m kit notebooks sync")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cell_has_an_id(path):
    missing = [i for i, c in enumerate(cells(path)) if not c.get("id")]
    assert not missing, f"{path.name}: cells {missing} have no id (nbformat will make this an error)"
