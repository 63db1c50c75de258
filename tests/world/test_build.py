"""Faults in a real build: a SIGKILLed ``kit zoo build`` leaves no child
running and nothing half-written, ``kit zoo card`` names the damaged member, and a rerun repairs
exactly it, ending with the same card. On a copy of the micro world in a temporary cache."""

import hashlib
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
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".build.lock"
    }


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


def _is_trainer(pid: int) -> bool:
    """A job worker of the local engine, or the serial build's pinned child."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "kit.core.jobs" in cmd or ("kit.world" in cmd and "--world" in cmd)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.fixture
def world_copy(micro_world, tmp_path, monkeypatch):
    src = zoo.world_dir("micro")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    shutil.copytree(
        src, zoo.world_dir("micro"), ignore=shutil.ignore_patterns(".build.lock", "extra")
    )
    assert world_status("micro").complete
    return zoo.world_dir("micro")


def test_a_killed_build_leaves_no_child_and_a_rerun_repairs_exactly_the_damaged_member(
    world_copy, capsys
):
    spec = zoo.world_spec("micro")
    before = _snapshot(world_copy)
    weights = zoo._member_dir(spec, CHEAP) / "weights.pt"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])

    # 1. a build repairing it, SIGKILLed while its pinned child trains: no child survives
    log = world_copy.parent / "build.log"
    with open(log, "w") as err:
        build = subprocess.Popen(
            [sys.executable, "-m", "kit", "zoo", "build", "--world", "micro"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    trainers: set[int] = set()
    # the build verifies the world and asks a pinned process what runs first
    deadline = time.time() + 600
    while not trainers and build.poll() is None and time.time() < deadline:
        trainers = {p for p in _descendants(build.pid) if _is_trainer(p)}
        time.sleep(0.1)
    assert trainers, f"no training process started: {log.read_text()[-2000:]}"
    time.sleep(3)  # into the training
    children = _descendants(build.pid)
    build.send_signal(signal.SIGKILL)
    build.wait()
    deadline = time.time() + 60
    while any(_alive(p) for p in children) and time.time() < deadline:
        time.sleep(0.1)
    alive = {p for p in children if _alive(p)}
    assert not alive, f"pinned children {alive} outlived the SIGKILLed build"
    assert world_status(spec).damaged().keys() == {CHEAP}, (
        "nothing else was touched, nothing half-written"
    )

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
    assert all(f.startswith(member_dir + "/") for f in changed), (
        f"files outside {CHEAP}'s changed: {changed}"
    )
    assert world_status(spec).complete, (
        "the card (kept) records the weight digests of the repaired member"
    )
    out = capsys.readouterr().out
    assert "equals the committed kit/world/cards/micro.json" in out or "differs" not in out
