"""kit.start: a clean results file per start, parameters from the notebook's namespace,
validated."""

from __future__ import annotations

import json

import pytest

from kit.core.notebook import start
from kit.core.params import ParamsError, config_class

FIELDS = list(config_class("00_quickstart").model_fields)


def namespace(**given):
    """What the quickstart's parameters cell leaves in globals(), plus papermill's injected
    values."""
    ns = {"profile": "smoke", "out_dir": None, "unrelated": 1}
    ns.update({f: None for f in FIELDS})
    ns.update(given)
    return ns


def test_a_start_forgets_the_last_runs_results_and_figures(tmp_path):
    """An interrupted hand rerun must not look complete with the previous run's
    numbers."""
    run = start("00_quickstart", "smoke", tmp_path)
    run.record(accuracy=0.5)
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "old.png").write_bytes(b"png")
    (tmp_path / "notes.txt").write_text("mine")
    start("00_quickstart", "smoke", tmp_path)
    assert json.loads((tmp_path / "results.json").read_text()) == {}, (
        "a new start begins an empty results file"
    )
    assert not (tmp_path / "figures" / "old.png").exists(), (
        "the earlier start's figures are removed"
    )
    assert (tmp_path / "notes.txt").read_text() == "mine", (
        "files a run does not write are left alone"
    )


def test_namespace_values_override_and_are_recorded(tmp_path):
    """``papermill -p n_eval 5`` puts n_eval=5 in the namespace; it must reach the
    config."""
    ns = namespace(n_eval=5)
    run = start("00_quickstart", "smoke", tmp_path, namespace=ns)
    assert run.cfg.n_eval == 5 and run.cfg.world == "micro", "None keeps the profile's value"
    params = (tmp_path / "params.yaml").read_text()
    assert "n_eval: 5" in params and "overrides (papermill -p / kit run --set): n_eval=5" in params
    assert not set(FIELDS) & set(ns) and ns["unrelated"] == 1, (
        "fields are taken out, other names stay"
    )


def test_namespace_values_are_validated_like_yaml(tmp_path):
    with pytest.raises(
        ParamsError, match=r"'n_eval'.*with overrides n_eval=0|with overrides n_eval=0.*'n_eval'"
    ):
        start("00_quickstart", "smoke", tmp_path, namespace=namespace(n_eval=0))


def test_rerunning_start_without_the_parameters_cell_is_refused(tmp_path):
    """After a start the fields are gone; a later cell's ``model = ...`` must not become a
    parameter."""
    ns = namespace()
    start("00_quickstart", "smoke", tmp_path, namespace=ns)
    ns["model"] = object()  # what a later cell of the notebook binds
    with pytest.raises(ParamsError, match="run the parameters cell"):
        start("00_quickstart", "smoke", tmp_path, namespace=ns)


def test_an_unknown_papermill_parameter_is_refused_naming_the_allowed_ones(tmp_path):
    """`papermill -p n_evl 5` (a typo) ran with the default n_eval and exited 0."""
    ns = {f: None for f in config_class("00_quickstart").model_fields}
    ns["In"] = [
        "",
        "profile = 'tiny'\n...",
        '# Parameters\nprofile = "smoke"\nn_evl = 5\n',
        "import kit",
    ]
    ns["n_evl"] = 5
    with pytest.raises(ParamsError) as e:
        start("00_quickstart", "smoke", tmp_path / "out", namespace=ns)
    msg = str(e.value)
    assert (
        "unknown parameter(s) n_evl" in msg
        and "allowed parameters: profile, out_dir" in msg
        and "n_eval" in msg
    )
    assert not (tmp_path / "out").exists(), "nothing is written for a run that cannot start"
    ns = {f: None for f in config_class("00_quickstart").model_fields}
    ns["In"] = ['# Parameters\nprofile = "smoke"\nn_eval = 5\nPAPERMILL_INPUT_PATH = "x"\n']
    ns["n_eval"] = 5
    assert start("00_quickstart", "smoke", tmp_path / "ok", namespace=ns).cfg.n_eval == 5


@pytest.mark.slow
def test_papermill_with_a_misspelt_parameter_fails_before_the_notebook_runs(tmp_path):
    import papermill as pm

    from kit.core.paths import REPO_ROOT

    with pytest.raises(pm.PapermillExecutionError) as e:
        pm.execute_notebook(
            str(REPO_ROOT / "notebooks" / "00_quickstart.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"profile": "smoke", "out_dir": str(tmp_path / "run"), "n_evl": 5},
            cwd=str(REPO_ROOT / "notebooks"),
            kernel_name="python3",
            progress_bar=False,
        )
    assert e.value.ename == "ParamsError" and "unknown parameter(s) n_evl" in e.value.evalue
    assert e.value.exec_count <= 3, "it failed in kit.start, before the notebook's work"


def test_saving_a_figure_or_recording_numbers_prints_nothing_under_the_cell(tmp_path):
    """A cell ending in ``run.save_figure(...)`` echoed a list of PosixPaths under its figure
    (and ``run.record(...)`` the whole results dict): both return None; the files are written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = start("00_quickstart", "smoke", tmp_path)
    fig, ax = plt.subplots(figsize=(3.5, 1.5))
    ax.plot([0, 1], [1, 0])
    assert run.save_figure(fig, "line") is None
    plt.close(fig)
    assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == ["line.pdf", "line.png"]
    assert run.record(accuracy=0.25) is None
    assert json.loads((tmp_path / "results.json").read_text()) == {"accuracy": 0.25}
