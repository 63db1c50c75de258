"""The project's Jupyter kernel, notebook trust and inline pages (kit.core.jupyter): the kernel is
found by name (``papermill -k kit``), the runner's executed notebooks name it and are signed as
trusted, the committed notebooks name it as JupyterLab will, a run's page is shown inline."""

from __future__ import annotations

import json
import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from kit.core import jupyter
from kit.core.paths import REPO_ROOT


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A signature database of the test's own (``jupyter --data-dir``), not the user's."""
    folder = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(folder))
    return folder


def a_notebook(path, code="x = 1\nprint(x + 1)"):
    nb = new_notebook(
        cells=[
            new_code_cell("profile = 'smoke'\nout_dir = None", metadata={"tags": ["parameters"]}),
            new_code_cell(code),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def test_the_kernel_installs_under_its_name_for_this_python(tmp_path):
    from jupyter_client.kernelspec import KernelSpecManager

    folder = jupyter.install_kernel(prefix=str(tmp_path / "env"))
    spec = json.loads((folder / "kernel.json").read_text())
    assert folder.name == jupyter.KERNEL_NAME == "kit"
    assert spec["display_name"] == jupyter.DISPLAY_NAME == "Python (kit)"
    assert spec["argv"][0] == sys.executable, "the kernel must start this environment's Python"
    # what papermill -k kit asks: a spec named kit among the kernel folders Jupyter searches
    found = KernelSpecManager(kernel_dirs=[str(folder.parent)]).get_kernel_spec("kit")
    assert found.display_name == jupyter.DISPLAY_NAME and found.language == "python"


def test_the_command_line_installs_into_this_environment_and_refuses_no_target(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "env"))
    kernels = tmp_path / "env" / "share" / "jupyter" / "kernels"
    (kernels / "python3").mkdir(parents=True)  # what earlier set-ups installed
    (kernels / "python3" / "kernel.json").write_text(json.dumps({"display_name": "Python 3 (kit)"}))
    assert jupyter.main(["kernel", "--sys-prefix"]) == 0
    assert (kernels / "kit" / "kernel.json").exists()
    assert not (kernels / "python3").exists(), "one entry for one Python in the kernel picker"
    (kernels / "python3").mkdir()  # someone else's python3 kernel stays
    (kernels / "python3" / "kernel.json").write_text(json.dumps({"display_name": "Python 3"}))
    assert jupyter.main(["kernel", "--sys-prefix"]) == 0
    assert (kernels / "python3" / "kernel.json").exists()
    with pytest.raises(SystemExit):
        jupyter.main(["kernel"])
    assert "--sys-prefix, --user or both" in capsys.readouterr().err


def test_the_committed_notebooks_name_the_kernel_as_jupyterlab_will_write_it():
    """JupyterLab rewrites kernelspec and language_info when the kernel starts and marks the
    notebook modified when they differ: notebook 00 said "Python 3" against the installed
    "Python 3 (kit)"."""
    expected = jupyter.language_info()
    for path in sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        meta = json.loads(path.read_text())["metadata"]
        assert meta["kernelspec"] == jupyter.kernelspec_metadata(), path.name
        info = meta["language_info"]
        assert set(info) == set(expected), f"{path.name}: language_info {info}"
        # the patch version is the machine's that ran it; the rest is the kernel's
        assert {k: v for k, v in info.items() if k != "version"} == {
            k: v for k, v in expected.items() if k != "version"
        }, path.name
        assert info["version"].split(".")[:2] == ["3", "11"], "the Makefile's Python (3.11)"


def test_signing_makes_a_notebook_trusted_and_an_edit_undoes_it(tmp_path, data_dir):
    path = a_notebook(tmp_path / "n.ipynb")
    assert not jupyter.is_trusted(path), "a notebook nobody signed here is not trusted"
    assert jupyter.main(["trust", str(tmp_path)]) == 0  # a folder: its notebooks
    assert jupyter.is_trusted(path)
    assert (data_dir / "nbsignatures.db").exists(), "in the data dir Jupyter reads"
    nb = nbformat.read(path, as_version=4)
    nb.cells[1].source = "x = 2"
    nbformat.write(nb, path)
    assert not jupyter.is_trusted(path), "an edit outside Jupyter breaks the signature"


@pytest.mark.slow
def test_the_runner_runs_the_kit_kernel_and_signs_what_it_executed(tmp_path, data_dir, monkeypatch):
    """A kernel of this Python under the project's name, whatever is installed; the executed
    notebook names it (kernelspec as JupyterLab writes it) and is trusted, so its HTML and
    JavaScript outputs render when opened."""
    from kit.core import execution

    # an installed "kit" kernel elsewhere (another clone) must not be the one that runs
    elsewhere = tmp_path / "elsewhere" / "kernels" / "kit"
    elsewhere.mkdir(parents=True)
    (elsewhere / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/nonexistent/python", "-f", "{connection_file}"],
                "display_name": "Other",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "elsewhere"))
    nb = a_notebook(tmp_path / "00_x.ipynb", "import sys\nprint(sys.executable)")
    (tmp_path / "run").mkdir()
    outcome = execution.execute(nb, "smoke", tmp_path / "run", timeout=None)
    assert outcome.status == "ok", outcome.error
    executed = tmp_path / "run" / "00_x" / "00_x.ipynb"
    out = nbformat.read(executed, as_version=4)
    assert out.metadata["kernelspec"]["name"] == "kit"
    assert out.metadata["kernelspec"]["display_name"] == jupyter.DISPLAY_NAME
    assert out.metadata["language_info"] == jupyter.language_info()
    assert out.cells[-1].outputs[0]["text"].strip() == sys.executable
    assert jupyter.is_trusted(executed), "the runner signs the notebooks it executed"


def test_a_page_is_shown_inline_relative_to_the_document_and_named_as_text(tmp_path):
    run_dir = tmp_path / "runs" / "tiny" / "20260101-000000" / "04_competency_gaps"
    run_dir.mkdir(parents=True)
    page = run_dir / "concept_explorer.html"
    page.write_text("<html></html>")
    # the runner's copy lives in the run folder; by hand the notebook sits in notebooks/
    assert jupyter.local_page(page, run_dir).src == "concept_explorer.html"
    by_hand = jupyter.local_page(page, tmp_path / "notebooks")
    assert by_hand.src == "../runs/tiny/20260101-000000/04_competency_gaps/concept_explorer.html"
    html = by_hand._repr_html_()
    assert f'<iframe src="{by_hand.src}"' in html and f'href="{by_hand.src}"' in html
    assert str(page.resolve()) in repr(by_hand)


def test_a_committed_notebook_keeps_a_pages_path_not_its_iframe_and_takes_the_kernels_metadata():
    """The iframe's address is relative to the run's folder, where no committed notebook lives;
    kernelspec and language_info come from the run (what its kernel reported)."""
    from kit.core.notebook_outputs import Rewrites, shipped

    page = jupyter.LocalPage(REPO_ROOT / "x.html", "x.html")
    output = {
        "output_type": "display_data",
        "data": {"text/html": page._repr_html_(), "text/plain": repr(page)},
        "metadata": {},
    }
    committed = new_notebook(cells=[new_code_cell("show()")])
    committed.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    executed = json.loads(json.dumps(committed))
    executed["cells"][0]["outputs"] = [output]
    executed["cells"][0]["execution_count"] = 1
    executed["metadata"].update(jupyter.notebook_metadata())
    nb = shipped(committed, executed, Rewrites(((str(REPO_ROOT) + "/", ""),)), "tiny")
    (out,) = nb["cells"][0]["outputs"]
    assert set(out["data"]) == {"text/plain"}
    assert "".join(out["data"]["text/plain"]).startswith("x.html (a page")
    assert nb["metadata"]["kernelspec"] == jupyter.kernelspec_metadata()
    assert nb["metadata"]["language_info"] == jupyter.language_info()
