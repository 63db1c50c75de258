"""Faults in a real build (issue 33 items 3-4): a SIGKILLed ``kit zoo build`` leaves no child running
and nothing half-written, ``kit zoo card`` names the damaged member, and a rerun repairs exactly it,
ending with the same card. On a copy of the micro world in a temporary cache."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.world import zoo
from kit.world.build import world_status

CHEAP = "zoo/base-m+general-sparse"  # ~125 small steps: the cheapest member to retrain


def _snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".build.lock"}


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc: ppid links)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if stat[0] != "Z":
                parents[int(d.name)] = int(stat[1])
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - out
        out |= frontier
    return out


@pytest.fixture
def world_copy(micro_world, tmp_path, monkeypatch):
    src = zoo.world_dir("micro")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    shutil.copytree(src, zoo.world_dir("micro"), ignore=shutil.ignore_patterns(".build.lock", "extra"))
    assert world_status("micro").complete
    return zoo.world_dir("micro")


def test_a_killed_build_leaves_no_child_and_a_rerun_repairs_exactly_the_damaged_member(world_copy, capsys):
    spec = zoo.world_spec("micro")
    before = _snapshot(world_copy)
    weights = zoo._member_dir(spec, CHEAP) / "weights.pt"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])

    # 1. a build repairing it, SIGKILLed while its pinned child trains: no child survives
    build = subprocess.Popen([sys.executable, "-m", "kit", "zoo", "build", "--world", "micro"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    children: set[int] = set()
    for _ in range(1200):
        children = {p for p in _descendants(build.pid)
                    if "kit.world" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")
                    or "kit.core.jobs" in Path(f"/proc/{p}/cmdline").read_bytes().decode(errors="replace")}
        if children or build.poll() is not None:
            break
        time.sleep(0.1)
    assert children, f"no pinned child started: {build.communicate()[1][-2000:]}"
    time.sleep(3)  # into the training
    build.send_signal(signal.SIGKILL)
    build.wait()
    for _ in range(100):
        if not any(Path(f"/proc/{p}").exists() and _descendants(1) >= {p} for p in children):
            break
        time.sleep(0.1)
    alive = {p for p in children if p in _descendants(1)}
    assert not alive, f"pinned children {alive} outlived the SIGKILLed build"
    assert world_status(spec).damaged().keys() == {CHEAP}, "nothing else was touched, nothing half-written"

    # 2. the card names the damaged member and the fix instead of describing other weights
    from kit.world.cli import main

    capsys.readouterr()
    assert main(["card", "--world", "micro"]) == 2
    err = capsys.readouterr().err
    assert CHEAP in err and "zoo build --world micro" in err

    # 3. a rerun repairs exactly that member, with the same bits, and keeps the card
    assert main(["build", "--world", "micro"]) == 0
    after = _snapshot(world_copy)
    changed = {f for f in before.keys() | after.keys() if before.get(f) != after.get(f)}
    member_dir = str(zoo._member_dir(spec, CHEAP).relative_to(world_copy))
    assert all(f.startswith(member_dir + "/") for f in changed), f"files outside {CHEAP}'s changed: {changed}"
    assert world_status(spec).complete, "the card (kept) records the weight digests of the repaired member"
    out = capsys.readouterr().out
    assert "equals the committed kit/world/cards/micro.json" in out or "differs" not in out
