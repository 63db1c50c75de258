"""Execute notebooks through the runner, as `make run` does, on the micro world (profile smoke)."""

from __future__ import annotations

import json

import pytest

from kit.audits.claims import REQUIRED_IDS as AUDIT_CLAIMS
from kit.cg.claims import REQUIRED_IDS as CG_CLAIMS
from kit.core import runner as runner
from kit.core.claims import check_consistent
from kit.core.paths import REPO_ROOT
from kit.mui.claims import REQUIRED_IDS as MUI_CLAIMS
from kit.neuronvote.claims import REQUIRED_IDS as NV_CLAIMS
from kit.shortcut.claims import REQUIRED_IDS as SC_CLAIMS

# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
REQUIRED_CLAIMS = {**MUI_CLAIMS, **SC_CLAIMS, **CG_CLAIMS, **NV_CLAIMS, **AUDIT_CLAIMS}
NOTEBOOKS = sorted(p.stem for p in (REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def run_runner(tmp_path, *args):
    return runner.main(["--profile", "smoke", "--out", str(tmp_path / "runs"), *args])


def test_runner_executes_quickstart_into_its_run_dir(tmp_path, micro_world, capsys):
    figures = tmp_path / "figures"
    rc = run_runner(tmp_path, "--only", "00", "--figures", str(figures), "--set", "n_eval=5")
    out = capsys.readouterr().out
    assert rc == 0, f"quickstart failed on the micro world:\n{out}"
    latest = tmp_path / "runs" / "smoke" / "latest"
    assert latest.is_symlink(), "runs/<profile>/latest should point at the newest run"
    nb_dir = latest / "00_quickstart"
    assert (nb_dir / "00_quickstart.ipynb").is_file(), "the executed notebook belongs in the run dir"
    params = (nb_dir / "params.yaml").read_text()
    assert "world: micro" in params, "resolved params should be saved beside outputs"
    assert "n_eval: 5" in params and "overrides (papermill -p / kit run --set): n_eval=5" in params
    results = json.loads((nb_dir / "results.json").read_text())
    assert 0.0 <= results["accuracy"] <= 1.0 and results["n_eval"] == 5, "--set n_eval=5 reached the notebook"
    assert (nb_dir / "figures" / "quickstart_mlp_activations.png").is_file()
    assert (figures / "00_quickstart" / "quickstart_mlp_activations.pdf").is_file(), "figures are exported"
    summary = json.loads((latest / "run.json").read_text())
    assert summary["notebooks"][0]["status"] == "ok"
    assert (latest / "report.md").is_file() and (latest / "report.html").is_file(), "every run writes its report"
    assert "00_quickstart" in out and "ok" in out


def test_runner_names_a_failing_notebook_and_keeps_going(tmp_path, capsys):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nbs = tmp_path / "nbs"
    nbs.mkdir()
    for name, code in [("01_broken", "raise RuntimeError('planted failure')"), ("02_fine", "x = 1")]:
        nb = new_notebook(cells=[new_code_cell("profile = 'smoke'\nout_dir = None", metadata={"tags": ["parameters"]}),
                                 new_code_cell(code)])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, nbs / f"{name}.ipynb")
    rc = run_runner(tmp_path, "--notebooks", str(nbs))
    out = capsys.readouterr()
    assert rc == 1, "a failed notebook must make the run exit non-zero"
    assert "01_broken" in out.err and "planted failure" in out.out
    (run_dir,) = (tmp_path / "runs" / "smoke").iterdir()  # no 'latest': it names complete runs only
    summary = json.loads((run_dir / "run.json").read_text())
    assert [n["status"] for n in summary["notebooks"]] == ["failed", "ok"], "the run should go on past a failure"
    assert summary["status"] == "failed" and summary["error"] == "notebook(s) failed: 01_broken"


def test_runner_rejects_unknown_notebook_before_running(tmp_path):
    with pytest.raises(SystemExit, match="00_quickstart"):
        runner.main(["--only", "99", "--out", str(tmp_path)])
    assert not (tmp_path / "tiny").exists(), "nothing should be written when the selection is wrong"


def test_existing_run_dir_is_not_overwritten(tmp_path):
    first = runner.new_run_dir(tmp_path, "smoke")
    second = runner.new_run_dir(tmp_path, "smoke")
    assert first != second and first.exists() and second.exists()


@pytest.mark.parametrize("notebook", [pytest.param(n, marks=pytest.mark.notebook_run("smoke", n[:2]))
                                      for n in NOTEBOOKS if n != "00_quickstart"])
def test_notebook_runs_on_smoke_profile(notebook, notebook_run):
    run = notebook_run("smoke", notebook[:2])
    assert run.status == "ok", f"{notebook} failed on the smoke profile ({run.dir}.ipynb):\n{run.error[-3000:]}"
    results = run.results()
    assert results, f"{notebook} recorded no numbers in results.json"
    claims = results.get("claims", [])
    missing = set(REQUIRED_CLAIMS.get(notebook, [])) - {c["id"] for c in claims}
    assert not missing, f"{notebook} did not emit its listed claims {sorted(missing)}"
    for c in claims:  # each verdict must follow from its own interval and null
        check_consistent(c)
    assert notebook in run.report
