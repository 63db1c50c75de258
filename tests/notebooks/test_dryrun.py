"""Notebooks on the ``dryrun`` profile: the ``paper`` profile with every model replaced by its tiny
random twin (kit.models.twins), so the real-model path runs offline. Numbers mean nothing there;
what is tested is that the paper's code path runs end to end."""

from __future__ import annotations

import json

import pytest

from kit.core import runner as runner

pytestmark = pytest.mark.slow
PASSING = ["00", "01", "02", "03", "04", "05", "06"]


@pytest.mark.parametrize("nb", PASSING)
def test_notebook_runs_on_its_dryrun_profile(nb, tmp_path, capsys):
    rc = runner.main(["--profile", "dryrun", "--only", nb, "--out", str(tmp_path / "runs")])
    out = capsys.readouterr().out
    assert rc == 0, f"notebook {nb} failed on the dryrun profile:\n{out}"
    (nb_dir,) = [p for p in (tmp_path / "runs" / "dryrun" / "latest").iterdir() if p.is_dir()]
    assert "twin/" in (nb_dir / "params.yaml").read_text(), "the dryrun profile must name the twins"
    assert json.loads((nb_dir / "results.json").read_text()), "the notebook recorded no result"
