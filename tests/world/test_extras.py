"""kit.world.extras: extra fine-tunes built ahead as pinned jobs, deduplicated, chains in order."""

from dataclasses import replace

import pytest

from kit.shortcut import variants as v
from kit.world import zoo
from kit.world.extras import build_extras, extra_jobs
from kit.world.members import extra_path


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """A cache with no world in it: nothing is built, so every extra needs its job."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_one_job_per_cache_file_chains_after_their_earlier_fine_tune(empty_cache):
    x1 = v.extra_spec("extra/base-m+math-test-x1-sparse:split", "micro")
    chained = v.extra_spec(
        "extra/base-m+general-sparse:split:after=base-m+math-test-x1-sparse:split", "micro"
    )
    on_member = v.extra_spec("extra/base-m+general-sparse:split:after=base-m+math-test-x1", "micro")
    member = next(
        f for f in zoo.world_spec("micro").finetunes if f.name == "zoo/base-m+math-test-x1"
    )
    jobs = extra_jobs([x1, chained, x1, on_member, member], "micro")
    # x1 once (also chained's earlier fine-tune), chained, on_member; the member is the world
    # build's
    assert len(jobs) == 3
    first = next(j for j in jobs if j.kwargs["finetune"]["after"] is None)
    chain = next(j for j in jobs if (j.kwargs["finetune"]["after"] or {}).get("plastic"))
    after_member = next(j for j in jobs if j not in (first, chain))
    assert chain.after == (first.id,), "a chain waits for its earlier fine-tune"
    assert after_member.after == (), "a world member as the earlier fine-tune: nothing to wait for"
    assert all(j.pinned and j.kwargs["world"] == "micro" and j.kwargs["seed"] == 0 for j in jobs)
    assert len({extra_path(f, "micro") for f in (x1, chained, on_member)}) == 3


def test_a_cached_fine_tune_needs_no_job_and_its_chain_no_wait(empty_cache):
    x1 = v.extra_spec("extra/base-m+math-test-x1-sparse:split", "micro")
    chained = v.extra_spec(
        "extra/base-m+general-sparse:split:after=base-m+math-test-x1-sparse:split", "micro"
    )
    path = extra_path(x1, "micro")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"stand-in")  # only its presence matters to the plan
    jobs = extra_jobs([chained], "micro")
    assert len(jobs) == 1 and jobs[0].after == ()


@pytest.mark.slow
def test_built_ahead_on_the_local_engine_equals_built_on_first_use(
    micro_world, tmp_path, monkeypatch
):
    """Two small extras built as pinned jobs on two workers have the bits of the same extras
    built on first use (kit.world.members.extra_finetune, its own pinned process)."""
    import shutil

    from kit.core.paths import cache_dir

    specs = [
        replace(v.extra_spec(n, "micro"), n_examples=48)
        for n in ("extra/base-m+math-test-x1-sparse:split", "extra/base-m+general-sparse:split")
    ]
    first_use = {}
    for f in specs:
        zoo.extra_finetune(f, "micro")
        first_use[f.name] = extra_path(f, "micro").read_bytes()
    # the same world members in another cache, no extras: the jobs build both
    other = tmp_path / "cache"
    shutil.copytree(
        cache_dir() / "world" / "micro",
        other / "world" / "micro",
        ignore=shutil.ignore_patterns("extra"),
    )
    monkeypatch.setenv("KIT_CACHE_DIR", str(other))
    assert build_extras(specs, "micro", engine="local", max_workers=2) == 2
    assert {f.name: extra_path(f, "micro").read_bytes() for f in specs} == first_use
    assert build_extras(specs, "micro", engine="local", max_workers=2) == 0, (
        "cached: nothing to build"
    )
