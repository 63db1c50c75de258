"""What run.json records about where a run ran: the commit (with uncommitted edits marked), the
machine, the load."""

from __future__ import annotations

import subprocess

from kit.core import machine


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_commit_is_the_short_head_and_says_when_tracked_files_changed(tmp_path):
    assert machine.commit(tmp_path) == ""  # not a checkout: nothing to record, no error
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert machine.commit(tmp_path) == head
    (tmp_path / "untracked.txt").write_text("x\n")  # an untracked file is no change to the code
    assert machine.commit(tmp_path) == head
    (tmp_path / "a.txt").write_text("two\n")
    assert machine.commit(tmp_path) == head + "+changes"


def test_run_facts_name_the_machine_and_its_load():
    facts = machine.run_facts()
    assert set(facts) == {"commit", "machine", "cores", "load_start"}
    assert f"{facts['cores']} cores" in facts["machine"] and facts["cores"] >= 1
    assert facts["load_start"] is None or facts["load_start"] >= 0
