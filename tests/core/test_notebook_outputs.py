"""The outputs a committed notebook ships: volatile values out, the same bytes from two runs of the
same code, the source hash recorded and checked, a notebook edited after its run refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.core import notebook_outputs as no
from kit.core import runner

RUN_A, RUN_B = (
    Path("/abs/repo/runs/tiny/20260101-000000"),
    Path("/abs/repo/runs/tiny/20260102-111111"),
)


def committed() -> dict:
    """A committed notebook: a title, a parameters cell and two code cells, without outputs."""
    return {
        "cells": [
            {"cell_type": "markdown", "id": "q", "metadata": {}, "source": ["# Title\n"]},
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "p",
                "metadata": {"jupyter": {"source_hidden": True}, "tags": ["parameters"]},
                "outputs": [],
                "source": ['profile = "tiny"\n', "out_dir = None"],
            },
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "a",
                "metadata": {},
                "outputs": [],
                "source": ["print(out_dir)"],
            },
            {
                "cell_type": "code",
                "execution_count": None,
                "id": "b",
                "metadata": {},
                "outputs": [],
                "source": ["show()"],
            },
        ],
        "metadata": {"kernelspec": {"name": "python3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def executed(run_dir: Path, address: str, seconds: float, cells_from: dict | None = None) -> dict:
    """What papermill writes for ``committed()`` run in ``run_dir``: every volatile value this run's
    own (timings, the injected cell, paths, an address, a circuitsvis id, stderr, a widget)."""
    nb = json.loads(json.dumps(cells_from or committed()))
    pm = {"papermill": {"duration": seconds, "start_time": f"t{seconds}"}}
    injected = {
        "cell_type": "code",
        "execution_count": 2,
        "id": f"inj{seconds}",
        "metadata": {"tags": ["injected-parameters"], **pm},
        "outputs": [],
        "source": [f'out_dir = "{run_dir}/01_x"\n'],
    }
    nb["cells"].insert(2, injected)
    for n, c in enumerate(nb["cells"]):
        c["metadata"].update(pm)
        if c["cell_type"] == "code":
            c["execution_count"] = n + 7
    nb["cells"][3]["outputs"] = [
        {"name": "stdout", "output_type": "stream", "text": [f"{run_dir}/01_x\n", "10%\r"]},
        {"name": "stderr", "output_type": "stream", "text": ["Moving model to device:  cpu\n"]},
        {
            "name": "stdout",
            "output_type": "stream",
            "text": ["50%\r100%\n", f"Runtime {seconds:.0f} s.\n"],
        },
    ]
    nb["cells"][4]["outputs"] = [
        {
            "data": {"text/plain": [f"<Figure at {address}>"], "image/png": "iVBORw0KGgo=\n"},
            "metadata": {},
            "output_type": "display_data",
        },
        {
            "data": {
                "application/vnd.jupyter.widget-view+json": {"model_id": address},
                "text/plain": ["HBox(children=(...))"],
            },
            "metadata": {},
            "output_type": "display_data",
        },
        {
            "data": {
                "text/html": [f'<div id="circuits-vis-{address[2:10]}"/><script>render()</script>'],
                "text/plain": [f"<RenderedHTML at {address}>"],
            },
            "execution_count": 11,
            "metadata": {},
            "output_type": "execute_result",
        },
    ]
    nb["metadata"].update(pm, widgets={"state": {address: {}}})
    return nb


def ship(run_dir: Path, nb: dict) -> str:
    rewrite = no.rewrites_for(run_dir, "tiny", [Path("/abs/repo")])
    return no.notebook_text(no.shipped(committed(), nb, rewrite, "tiny"))


def test_two_runs_of_the_same_code_ship_the_same_bytes():
    a = ship(RUN_A, executed(RUN_A, "0x7f9c60f8d250", 211.3))
    b = ship(RUN_B, executed(RUN_B, "0x7effccf5ccd0", 306.8))
    assert a == b, "a volatile value (time, path, address, id) leaked into the shipped outputs"


def test_shipped_outputs_keep_results_and_drop_what_changes():
    nb = json.loads(ship(RUN_A, executed(RUN_A, "0x7f9c60f8d250", 211.3)))
    text = json.dumps(nb)
    for volatile in (
        "papermill",
        "injected-parameters",
        "/abs/repo",
        "20260101",
        "0x7f9c",
        "211",
        "Moving model",
        "widget",
        "<script",
        "10%",
    ):
        assert volatile not in text, f"{volatile!r} is still in the shipped notebook"
    cells = nb["cells"]
    assert [c["id"] for c in cells] == ["q", "p", "a", "b"], (
        "the committed cells, in order, no others"
    )
    assert cells[1]["metadata"] == {"jupyter": {"source_hidden": True}, "tags": ["parameters"]}
    assert [c["execution_count"] for c in cells[1:]] == [1, 2, 3], "counts of one clean run"
    (stream,) = cells[2]["outputs"]  # stdout merged around the dropped stderr
    assert stream["text"] == [
        "runs/tiny/latest/01_x\n",
        "100%\n",
        "Runtime (wall time, not shipped).\n",
    ]
    figure, view = cells[3]["outputs"]  # the widget is gone
    assert figure["data"] == {"text/plain": ["<Figure at 0x...>"], "image/png": "iVBORw0KGgo=\n"}
    assert view["data"] == {"text/plain": [no.SCRIPT_NOTE]} and view["execution_count"] == 3
    assert nb["metadata"] == {
        "kernelspec": {"name": "python3"},
        "kit": {"profile": "tiny", "source_sha256": no.source_sha256(committed())},
    }
    assert not no.problems_of(nb, "x.ipynb")


def test_a_root_folder_never_takes_every_slash_out():
    rewrite = no.rewrites_for(RUN_A, "tiny", [Path("/")])
    assert rewrite("see /opt/x/y.png") == "see /opt/x/y.png"


def test_the_source_hash_covers_code_cells_and_their_boundaries_only():
    nb = committed()
    h = no.source_sha256(nb)
    nb["cells"][0]["source"] = ["# Another title\n"]
    assert no.source_sha256(nb) == h, "markdown makes no output: editing it keeps the outputs valid"
    nb["cells"][2]["source"] = ["print(out_dir)  # changed"]
    assert no.source_sha256(nb) != h
    joined = committed()
    joined["cells"][2]["source"] = ["print(out_dir)show()"]
    del joined["cells"][3]
    assert no.source_sha256(joined) != h, "two cells and their concatenation must differ"


def test_outputs_of_other_code_are_refused():
    edited = committed()
    edited["cells"][3]["source"] = ["show(2)"]
    with pytest.raises(no.NotebookMismatch, match="code cell 3 of 3 differs"):
        no.shipped(edited, executed(RUN_A, "0x7f9c60f8d250", 1.0), no.Rewrites(()), "tiny")


def test_problems_name_missing_outputs_and_stale_code():
    nb = committed()
    assert any("no outputs" in p for p in no.problems_of(nb, "x.ipynb"))
    assert any("source_sha256" in p for p in no.problems_of(nb, "x.ipynb"))
    nb = json.loads(ship(RUN_A, executed(RUN_A, "0x7f9c60f8d250", 1.0)))
    assert no.problems_of(nb, "x.ipynb") == []
    nb["cells"][3]["source"] = ["show(2)"]
    (stale,) = no.problems_of(nb, "x.ipynb")
    assert "made from other code cells" in stale and "kit notebooks adopt" in stale
    nb = json.loads(ship(RUN_A, executed(RUN_A, "0x7f9c60f8d250", 1.0)))
    nb["metadata"]["kit"]["profile"] = "smoke"
    assert any("not 'tiny'" in p for p in no.problems_of(nb, "x.ipynb"))


def _run_dir(tmp_path: Path, profile: str, status: str = "ok", overrides=None) -> tuple[Path, Path]:
    """A run directory holding ``executed()`` as notebook 01_x, and a notebooks folder with
    ``committed()``."""
    run_dir = tmp_path / "runs" / profile / "20260101-000000"
    (run_dir / "01_x").mkdir(parents=True)
    (run_dir / "01_x" / "01_x.ipynb").write_text(json.dumps(executed(run_dir, "0x7f00aa", 3.0)))
    record = {
        "profile": profile,
        "overrides": overrides or {},
        "notebooks": [{"notebook": "01_x", "status": status}],
    }
    (run_dir / "run.json").write_text(json.dumps(record))
    nbs = tmp_path / "nbs"
    nbs.mkdir()
    (nbs / "01_x.ipynb").write_text(no.notebook_text(committed()))
    return run_dir, nbs


def test_adopt_fills_from_a_run_and_rewrites_nothing_the_second_time(tmp_path, capsys, monkeypatch):
    from kit.core.jupyter import is_trusted

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    run_dir, nbs = _run_dir(tmp_path, "tiny")
    assert not is_trusted(nbs / "01_x.ipynb")
    assert no.main(["adopt", str(run_dir), "--notebooks", str(nbs)]) == 0
    assert "into 1 notebook(s): 01_x" in capsys.readouterr().out
    assert is_trusted(nbs / "01_x.ipynb"), "outputs made here are signed as trusted"
    assert no.problems(nbs / "01_x.ipynb") == []
    assert no.main(["check", "--notebooks", str(nbs)]) == 0
    first = (nbs / "01_x.ipynb").stat().st_mtime_ns
    assert no.main(["adopt", str(run_dir), "--notebooks", str(nbs)]) == 0
    assert "into 0 notebook(s)" in capsys.readouterr().out
    assert (nbs / "01_x.ipynb").stat().st_mtime_ns == first, (
        "an unchanged notebook is not rewritten"
    )


@pytest.mark.parametrize(
    ("profile", "overrides"),
    [("smoke", None), ("tiny", {"n_items": 3})],
    ids=["smoke", "overrides"],
)
def test_adopt_refuses_a_run_the_notebooks_do_not_ship(tmp_path, profile, overrides):
    run_dir, nbs = _run_dir(tmp_path, profile, overrides=overrides)
    with pytest.raises(SystemExit, match="ship the 'tiny' profile's outputs"):
        no.main(["adopt", str(run_dir), "--notebooks", str(nbs)])


def test_adopt_skips_a_failed_notebook(tmp_path, capsys):
    run_dir, nbs = _run_dir(tmp_path, "tiny", status="failed")
    assert no.main(["adopt", str(run_dir), "--notebooks", str(nbs)]) == 1
    assert "01_x: failed in this run" in capsys.readouterr().err
    assert no.problems(nbs / "01_x.ipynb"), "a failed notebook's outputs are not shipped"


def _fake_notebook(folder: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    folder.mkdir()
    code = (
        "import sys\nprint(out_dir)\nprint(object())\nprint('progress', file=sys.stderr)\n"
        "from IPython.display import display, Markdown\ndisplay(Markdown('**claims**'))"
    )
    nb = new_notebook(
        cells=[
            new_code_cell("profile = 'tiny'\nout_dir = None", metadata={"tags": ["parameters"]}),
            new_code_cell(code),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path = folder / "01_fake.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.slow
def test_the_runner_ships_tiny_outputs_and_an_unchanged_rerun_leaves_the_file_alone(tmp_path):
    path = _fake_notebook(tmp_path / "nbs")
    common = [
        "--notebooks",
        str(path.parent),
        "--out",
        str(tmp_path / "runs"),
        "--parallel",
        "1",
        "--figures",
        str(tmp_path / "figures"),
    ]
    before = path.read_text()
    assert runner.main(["--profile", "smoke", *common]) == 0
    assert runner.main(["--profile", "tiny", "--no-notebook-outputs", *common]) == 0
    assert path.read_text() == before, (
        "only the tiny profile's outputs are shipped, and only when asked"
    )
    assert runner.main(["--profile", "tiny", *common]) == 0
    shipped = path.read_text()
    assert no.problems(path) == []
    outputs = json.dumps([c["outputs"] for c in json.loads(shipped)["cells"]])
    assert "runs/tiny/latest/01_fake" in outputs and str(tmp_path) not in shipped
    assert "0x..." in outputs and "progress" not in outputs and "**claims**" in outputs
    assert runner.main(["--profile", "tiny", *common]) == 0
    assert path.read_text() == shipped, (
        "a rerun of unchanged code must leave the notebook as it was"
    )
