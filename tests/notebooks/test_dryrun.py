"""Notebooks on the ``dryrun`` profile: the ``paper`` profile with every model replaced by its tiny
random twin (kit.models.twins), so the real-model path runs offline. Numbers mean nothing there;
what is tested is that the paper's code path runs end to end."""

from __future__ import annotations

import pytest


# the first test of a profile runs all its selected notebooks (fixture notebook_run): more than
# the default per-test timeout on a loaded machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
PASSING = ["00", "01", "02", "03", "04", "05", "06"]


@pytest.mark.parametrize("nb", [pytest.param(n, marks=pytest.mark.notebook_run("dryrun", n)) for n in PASSING])
def test_notebook_runs_on_its_dryrun_profile(nb, notebook_run):
    run = notebook_run("dryrun", nb)
    assert run.status == "ok", f"notebook {nb} failed on the dryrun profile ({run.dir}):\n{run.error[-3000:]}"
    assert "twin/" in (run.dir / "params.yaml").read_text(), "the dryrun profile must name the twins"
    assert run.results(), "the notebook recorded no result"
