"""The generated pages of docs/: records digested from a run directory, pages rebuilt from them."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from kit.core import claims as C
from kit.core import docs as D
from kit.core.paths import REPO_ROOT


def _run(tmp_path, profile="tiny", status="ok", ours=-3.0):
    run = tmp_path / profile / "20260102-030405"
    (run / "03_shortcut_neurons").mkdir(parents=True)
    rows = [
        C.claim(
            "001",
            "Table 2",
            "te",
            "TE lowers a | contaminated model",
            ours,
            ci=(ours - 2, ours + 2),
            null=0.0,
            direction="less",
            notebook="03_shortcut_neurons",
            paper_value=-49.8,
        ),
        C.claim(
            "001",
            "Table 4",
            "t4",
            "a second task",
            None,
            null=0.0,
            direction="greater",
            not_testable="no recipe contaminates a second task",
            notebook="03_shortcut_neurons",
        ),
    ]
    (run / "03_shortcut_neurons" / "results.json").write_text(
        json.dumps({"claims": [c.row() for c in rows]})
    )
    nb = {
        "notebook": "03_shortcut_neurons",
        "status": "ok",
        "seconds": 90.04,
        "n_results": 2,
        "n_figures": 0,
        "error": "",
    }
    (run / "run.json").write_text(
        json.dumps(
            {
                "profile": profile,
                "overrides": {},
                "status": status,
                "parallel": 2,
                "notebooks": [nb],
            }
        )
    )
    return run


def test_a_record_keeps_each_claims_numbers_and_fills_in_what_run_json_lacks(tmp_path):
    rec = D.record_run(_run(tmp_path), commit="abc1234", machine="a CPU", load="alone")
    assert (rec.profile, rec.run, rec.started) == (
        "tiny",
        "20260102-030405",
        "2026-01-02 03:04 UTC",
    )
    assert (rec.commit, rec.machine, rec.load, rec.wall_s) == ("abc1234", "a CPU", "alone", None)
    assert [(n.notebook, n.seconds) for n in rec.notebooks] == [("03_shortcut_neurons", 90.0)]
    te, t4 = rec.claims
    assert (te.ours, te.ci_low, te.ci_high, te.verdict, te.paper_value) == (
        -3.0,
        -5.0,
        -1.0,
        "supported",
        -49.8,
    )
    assert te.why == ""  # a decided claim shows its numbers, not its reason
    assert t4.verdict == "not testable here" and "second task" in t4.why
    # round trip through the committed JSON form
    again = D.RunRecord.from_dict(json.loads(json.dumps(asdict(rec))))
    assert again == rec


def test_what_run_json_records_wins_over_the_command_line(tmp_path):
    run = _run(tmp_path)
    info = json.loads((run / "run.json").read_text())
    info.update(
        commit="def5678",
        machine="recorded CPU",
        cores=2,
        load_start=1.0,
        load_max=2.5,
        started="2026-01-02 03:05 UTC",
        wall_s=120.0,
    )
    (run / "run.json").write_text(json.dumps(info))
    rec = D.record_run(run, commit="abc1234", machine="typed", load="alone")
    assert (rec.commit, rec.machine, rec.started, rec.wall_s) == (
        "def5678",
        "recorded CPU",
        "2026-01-02 03:05 UTC",
        120.0,
    )
    assert rec.load == "load 1.0-2.5 on 2 cores"


def test_an_incomplete_run_or_a_missing_one_is_refused_naming_it(tmp_path):
    with pytest.raises(ValueError, match="status 'failed'"):
        D.record_run(_run(tmp_path, status="failed"))
    with pytest.raises(FileNotFoundError, match="run.json"):
        D.record_run(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="unknown field.*'colour'"):
        D.RunRecord.from_dict({"colour": 1})


def test_results_page_puts_each_claim_of_tiny_and_real_beside_the_papers_value(tmp_path):
    docs = tmp_path / "docs"
    tiny = D.record_run(_run(tmp_path / "a"))
    D.write_record(tiny, docs / "records")
    page = D.results_page(D.read_records(docs / "records"))
    assert "no `real` run is recorded" in page
    row = next(line for line in page.splitlines() if "TE lowers" in line)
    # the statement's '|' is escaped, the paper's value and our verdict, number and interval shown
    assert "TE lowers a \\| contaminated model" in row
    assert row.endswith("| -49.8 | **supported**: -3 [-5, -1] |")
    assert "not testable here: no recipe contaminates a second task" in page

    real = D.record_run(_run(tmp_path / "b", profile="real", ours=3.0))
    D.write_record(real, docs / "records")
    page = D.results_page(D.read_records(docs / "records"))
    assert "| tiny world | real models |" in page and "no `real` run" not in page
    row = next(line for line in page.splitlines() if "TE lowers" in line)
    assert row.endswith("| **supported**: -3 [-5, -1] | **contradicted**: 3 [1, 5] |")


def test_timings_page_prints_each_notebooks_minutes_and_the_runs_facts(tmp_path):
    rec = D.record_run(_run(tmp_path), commit="abc1234", machine="a CPU", load="shared")
    m = D.Measurement("make test", "2026-01-01", "a CPU", "", "alone", 29.46, "1,589 tests")
    page = D.timings_page({"tiny": rec}, [m])
    assert "| 03_shortcut_neurons | 1.5 |" in page  # 90.0 s
    assert "| commit | `abc1234` |" in page and "| load | shared |" in page
    assert "| make test | 2026-01-01 | a CPU |  | alone | 29.5 | 1,589 tests |" in page


def test_build_writes_the_pages_and_check_finds_a_stale_one(tmp_path):
    docs = tmp_path / "docs"
    D.write_record(D.record_run(_run(tmp_path)), docs / "records")
    assert D.build(docs, check=True) == ["results.md", "timings.md"]  # not written yet
    assert D.build(docs) == ["results.md", "timings.md"]
    assert D.build(docs, check=True) == []
    (docs / "timings.md").write_text("typed by hand\n")
    assert D.build(docs, check=True) == ["timings.md"]
    assert D.main(["build", "--check", "--docs", str(docs)]) == 1


def test_the_committed_pages_are_what_the_committed_records_generate():
    """docs/results.md and docs/timings.md are regenerated byte for byte from docs/records/: if this
    fails, run `python -m kit docs build` (and commit), never edit the pages by hand."""
    assert D.build(REPO_ROOT / "docs", check=True) == []


def test_floor_rate_and_efficiency_hand_computed_and_rendered(tmp_path):
    # 2 GFLOP in 0.5 s: 4 GFLOP/s, half of an 8 GFLOP/s GEMM rate
    f = D.Floor("a step", "pinned", "2026-01-01", "a CPU", "abc1234", "alone", 2.0, 0.5, 8.0)
    assert f.rate == 4.0 and f.efficiency == 0.5
    page = D.timings_page({}, [], [f])
    assert "| a step | pinned | 2.00 | 0.500 | 4.0 | 8.0 | 0.50 | 2026-01-01 | a CPU |" in page
    assert "## Floors" not in D.timings_page({}, [])
    records = tmp_path / "records"
    records.mkdir()
    (records / "floors.json").write_text(json.dumps([asdict(f)]))
    assert D.read_floors(records) == [f]
