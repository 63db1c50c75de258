"""Members on disk: verified against what was written, repaired exactly, named
when damaged, one builder per world, a full disk named as such; world seeds. A toy world (two bases,
a fine-tune) trained in this process, in a temporary cache."""

import errno
import json
import os
import subprocess
import sys
import time

import pytest
import torch

from kit.world import zoo
from kit.world.build import WorldStatus, _all_members, plan, world_status
from kit.world.storage import MemberDamaged, NoSpaceLeft, world_lock


def _toy(monkeypatch, tmp_path, seed: int = 0) -> zoo.WorldSpec:
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    arch = zoo.Arch(1, 16, 2, 32)
    base = zoo.BaseSpec("zoo/base-t", arch, steps=4, lr=3e-3, batch_size=4, checkpoints=(0.5, 1.0))
    other = zoo.BaseSpec("zoo/base-u", arch, steps=2, lr=3e-3, batch_size=4)
    ft = zoo.FinetuneSpec("zoo/base-t+ft", "zoo/base-t", "control", zoo.UNIFORM, 1e-3, 4, steps=2)
    spec = zoo.WorldSpec(name="micro", bases=(base, other), finetunes=(ft,), saes=())
    monkeypatch.setitem(zoo.WORLD_SPECS, "micro", spec)
    return zoo.world_spec("micro", seed)


def _train(spec) -> None:
    with zoo.deterministic():
        for b in spec.bases:
            zoo._train_base(spec, b)
        zoo._train_finetune(spec, spec.finetunes[0])


def _files(spec) -> dict[str, tuple[int, int]]:
    root = zoo.world_dir(spec) / "members"
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_meta_records_each_file_and_is_written_last(tmp_path, monkeypatch):
    spec = _toy(monkeypatch, tmp_path)
    _train(spec)
    for name in zoo.member_names(spec):
        d = zoo._member_dir(spec, name)
        meta = json.loads((d / "meta.json").read_text())
        assert set(meta["files"]) == (
            {"weights.pt", "optim.pt"} if name in ("zoo/base-t", "zoo/base-u") else {"weights.pt"}
        )
        for f, rec in meta["files"].items():
            assert rec["bytes"] == (d / f).stat().st_size
            assert (d / "meta.json").stat().st_mtime_ns >= (d / f).stat().st_mtime_ns
        sd = torch.load(d / "weights.pt", weights_only=True)
        assert meta["weights_digest"] == zoo.tensor_digest(sd) and len(meta["weights_digest"]) == 16
        assert (
            meta["key"] == zoo.member_key(spec, name) and meta["code_version"] == zoo.CODE_VERSION
        )
    # checkpoint token counts are in the (single) meta.json written after training
    half = json.loads((zoo._member_dir(spec, "zoo/base-t@step-2") / "meta.json").read_text())
    full = json.loads((zoo._member_dir(spec, "zoo/base-t") / "meta.json").read_text())
    assert half["train_tokens"] == round(full["train_tokens"] / 2)
    assert not list(zoo.world_dir(spec).rglob(".*.tmp")), "no temporary file is left behind"


def test_tensor_digest_by_hand():
    """sha256 over sorted keys, each key's bytes then its tensor's raw bytes (the cross-CPU test
    vectors' digest)."""
    import hashlib

    sd = {"b": torch.tensor([1.0, 2.0]), "a": torch.tensor([[3]], dtype=torch.int32)}
    h = hashlib.sha256(
        b"a" + (3).to_bytes(4, "little") + b"b" + torch.tensor([1.0, 2.0]).numpy().tobytes()
    )
    assert zoo.tensor_digest(sd) == h.hexdigest()[:16]
    assert zoo.tensor_digest({"a": sd["a"], "b": sd["b"].clone()}) == zoo.tensor_digest(sd)


@pytest.mark.parametrize("damage", ["truncate", "delete", "flip", "meta"])
def test_a_damaged_member_is_named_and_repaired_exactly(tmp_path, monkeypatch, damage):
    """Truncated, deleted or changed weights (or a garbled meta.json) of one checkpoint: its load
    raises MemberDamaged naming the file and the fix, world_status names it, the plan retrains its
    base only, and the retraining rewrites exactly that checkpoint, with the same bits."""
    spec = _toy(monkeypatch, tmp_path)
    _train(spec)
    name = "zoo/base-t@step-2"
    before = _files(spec)
    digest = json.loads((zoo._member_dir(spec, name) / "meta.json").read_text())["weights_digest"]
    w = zoo._member_dir(spec, name) / "weights.pt"
    if damage == "truncate":
        w.write_bytes(w.read_bytes()[:100])
    elif damage == "delete":
        w.unlink()
    elif damage == "flip":
        data = bytearray(w.read_bytes())
        data[-30] ^= 1
        w.write_bytes(bytes(data))
    else:
        (w.parent / "meta.json").write_text("{not json")
    with pytest.raises(MemberDamaged, match="zoo build --world micro") as e:
        zoo.load_member(name, world=spec)
    assert str(w.parent) in str(e.value)
    status = world_status(spec)
    assert list(status.damaged()) == [name] and status.card == "missing"
    assert [j.units for j in plan(spec, status, only=zoo.member_names(spec))] == [
        (("base", "zoo/base-t"),)
    ]
    time.sleep(0.01)
    with zoo.deterministic():
        zoo._train_base(spec, spec.bases[0])
    after = _files(spec)
    changed = {f for f in before.keys() | after.keys() if before.get(f) != after.get(f)}
    prefix = zoo._member_dir(spec, name).name
    assert changed and all(f.startswith(prefix + "/") for f in changed), changed
    assert zoo.member_status(spec, name) == "ok"
    assert (
        json.loads((zoo._member_dir(spec, name) / "meta.json").read_text())["weights_digest"]
        == digest
    )


def test_a_missing_parent_or_a_damaged_optimizer_state_is_named(tmp_path, monkeypatch):
    spec = _toy(monkeypatch, tmp_path)
    with pytest.raises(zoo.WorldNotBuilt, match="parent of 'zoo/base-t\\+ft'"):
        zoo.finetune(spec, spec.finetunes[0])
    _train(spec)
    opt = zoo._member_dir(spec, "zoo/base-t") / "optim.pt"
    opt.write_bytes(b"")
    assert zoo.member_status(spec, "zoo/base-t").startswith("damaged: ")
    with pytest.raises(MemberDamaged, match="optim.pt"):
        zoo.finetune(spec, spec.finetunes[0])


def test_the_plan_follows_the_dag(tmp_path, monkeypatch):
    """Fresh world: a job per base, the fine-tunes after their parent's job, each job computing
    its members' card rows last, the card after all; with the world built, a job for its rows
    and the card; with one fine-tune gone, only it."""
    spec = _toy(monkeypatch, tmp_path)
    jobs = plan(spec, world_status(spec), workers=2)
    acc = (("accuracy", "zoo/base-t"), ("accuracy", "zoo/base-t@step-2"))
    acc += (("accuracy", "zoo/base-t@step-4"),)
    assert sorted((j.id, j.units, j.after) for j in jobs[:-1]) == [
        ("base:zoo/base-t", (("base", "zoo/base-t"), *acc), ()),
        ("base:zoo/base-u", (("base", "zoo/base-u"), ("accuracy", "zoo/base-u")), ()),
        (
            "members:0",
            (("finetune", "zoo/base-t+ft"), ("accuracy", "zoo/base-t+ft")),
            ("base:zoo/base-t",),
        ),
    ]
    assert jobs[-1].id == "card" and set(jobs[-1].after) == {j.id for j in jobs[:-1]}
    done: set[str] = set()
    for j in jobs:  # the serial build runs them in this order
        assert set(j.after) <= done, f"{j.id} before its dependencies"
        done.add(j.id)
    _train(spec)
    status = world_status(spec)
    assert status.missing() == [] and status.damaged() == {}
    assert [(j.id, len(j.units)) for j in plan(spec, status)] == [
        ("accuracy:0", 5),
        ("card", 1),
    ]
    (zoo._member_dir(spec, "zoo/base-t+ft") / "meta.json").unlink()
    assert [j.units for j in plan(spec, world_status(spec), only=["zoo/base-t+ft"])] == [
        (("finetune", "zoo/base-t+ft"),)
    ]


def test_plan_balances_the_tiny_worlds_jobs_over_the_workers():
    spec = zoo.world_spec("tiny")
    status = WorldStatus(
        {n: "missing" for n in _all_members(spec)},
        {s.name: "missing" for s in spec.saes},
        "missing",
    )
    jobs = plan(spec, status, workers=2)
    groups = [j for j in jobs if j.id.startswith("members:")]
    assert len(groups) == 2 and all(j.after == ("base:zoo/base-m",) for j in groups)
    units = [u for j in groups for u in j.units if u[0] != "accuracy"]
    assert sorted(n for _, n in units) == sorted(
        [f.name for f in spec.finetunes] + [s.name for s in spec.saes]
    )
    assert max(j.cost for j in groups) <= 1.5 * min(j.cost for j in groups)
    # the critical path first: a job's tail is its cost plus its longest chain of dependants, and
    # the jobs that can start at once come in falling tail order (the longest chain starts first)
    tail: dict[str, float] = {}
    for j in reversed(jobs):
        tail[j.id] = j.cost + max((tail[d.id] for d in jobs if j.id in d.after), default=0.0)
    ready = [tail[j.id] for j in jobs if not j.after]
    assert ready == sorted(ready, reverse=True) and ready[0] == max(tail.values()), (
        "the critical path first"
    )
    serial = plan(spec, status, workers=1)
    done: set[str] = set()
    for j in serial:  # the serial build runs them in this order
        assert set(j.after) <= done, f"{j.id} before its dependencies"
        done.add(j.id)
    assert sorted(u for j in serial for u in j.units) == sorted(
        [("base", b.name) for b in spec.bases]
        + [("finetune", f.name) for f in spec.finetunes]
        + [("sae", s.name) for s in spec.saes]
        + [("accuracy", n) for n in zoo.member_names(spec)]
        + [("card", "tiny")]
    )


def test_disk_full_is_named_and_leaves_nothing_half_written(tmp_path, monkeypatch):
    """A write that fails with ENOSPC (simulated: this test cannot always mount a small file system)
    raises NoSpaceLeft naming the folder, leaves no temporary file, and keeps the member unbuilt."""
    spec = _toy(monkeypatch, tmp_path)
    real_open = open

    def full(path, mode="r", *args, **kwargs):
        if "w" in mode and ".weights.pt." in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", full)
    with pytest.raises(NoSpaceLeft, match="no space left on .*members") as e:
        with zoo.deterministic():
            zoo._train_base(spec, spec.bases[1])
    assert e.value.errno == errno.ENOSPC and "basic_ios" not in str(e.value)
    monkeypatch.setattr("builtins.open", real_open)
    assert zoo.member_status(spec, "zoo/base-u") == "missing"
    assert not [
        p for p in zoo.world_dir(spec).rglob("*") if p.is_file() and p.name != ".build.lock"
    ]


def test_disk_full_on_a_real_small_file_system(tmp_path, monkeypatch):
    """The same on a 64 KB tmpfs, where torch's own writer would say only ``basic_ios::clear``."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip(
            "cannot mount a tmpfs here (needs root); the simulated ENOSPC test covers the logic"
        )
    try:
        spec = _toy(monkeypatch, mnt)
        with pytest.raises(NoSpaceLeft, match=f"no space left on {mnt}"):
            with zoo.deterministic():
                zoo._train_base(spec, spec.bases[1])
        assert zoo.member_status(spec, "zoo/base-u") == "missing"
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_one_builder_per_world(tmp_path, monkeypatch):
    """While a process holds the world's lock a second builder is told who (or waits); the lock goes
    with its holder however it dies (SIGKILL here), so a killed build never blocks the next."""
    spec = _toy(monkeypatch, tmp_path)
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import time, pathlib; from kit.world.recipes import world_spec; from "
                "kit.world.storage import world_lock\nwith world_lock(world_spec('micro')):\n   "
                f" pathlib.Path({str(ready)!r}).write_text('1'); time.sleep(120)"
            ),
        ],
        env={**os.environ, "KIT_CACHE_DIR": str(tmp_path)},
    )
    try:
        deadline = time.time() + 300  # importing kit.world takes a while on a loaded machine
        while not ready.is_file() and time.time() < deadline and holder.poll() is None:
            time.sleep(0.1)
        with pytest.raises(BlockingIOError, match=f"being built by pid {holder.pid}"):
            with world_lock(spec, wait=False):
                pass
        holder.kill()
        holder.wait()
        with world_lock(spec, wait=False):
            pass
    finally:
        holder.kill()


def test_world_seeds(tmp_path, monkeypatch):
    """Another seed is another world: its own folder, keys and member seeds; the recipes, the task
    suites and the evaluation items are the same."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    a, b = zoo.world_spec("micro"), zoo.world_spec("micro", 7)
    assert a.seed == 0 and b.seed == 7 and a.bases == b.bases and a.finetunes == b.finetunes
    assert zoo.world_dir(a).name == "micro" and zoo.world_dir(b).name == "micro-seed-7"
    assert zoo.member_key(a, "zoo/base-m") != zoo.member_key(b, "zoo/base-m")
    assert zoo._seed_of(a, "zoo/base-m") != zoo._seed_of(b, "zoo/base-m")
    assert not torch.equal(
        zoo.plastic_neurons("zoo/base-m", 0.04, a), zoo.plastic_neurons("zoo/base-m", 0.04, b)
    )
    monkeypatch.setenv("KIT_WORLD_SEED", "7")
    assert zoo.world_spec("micro") == b and zoo.world_spec("micro", 0) == a
    for bad in ("-1", "x", "1.5", str(2**31)):
        monkeypatch.setenv("KIT_WORLD_SEED", bad)
        with pytest.raises(ValueError, match="KIT_WORLD_SEED.*allowed values"):
            zoo.world_spec("micro")
    from kit.world.cli import main

    with pytest.raises(SystemExit):
        main(["build", "--world", "micro", "--seed", "-3"])


def test_card_of_a_damaged_world_names_the_member(micro_world, tmp_path, monkeypatch, capsys):
    """``kit zoo card`` on a world with a damaged member says which and how to repair it (exit 2)
    instead of printing a card that describes other weights."""
    import shutil

    src = zoo.world_dir("micro")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    shutil.copytree(src, zoo.world_dir("micro"), ignore=shutil.ignore_patterns(".build.lock"))
    name = "zoo/base-m+general-sparse"
    w = zoo._member_dir(zoo.world_spec("micro"), name) / "weights.pt"
    w.write_bytes(w.read_bytes()[:1000])
    from kit.world.cli import main

    assert main(["card", "--world", "micro"]) == 2
    err = capsys.readouterr().err
    assert name in err and "1000 bytes" in err and "python -m kit zoo build --world micro" in err
    assert "every member" not in err
