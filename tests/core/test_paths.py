import pytest

from kit.core.paths import atomic_dir


def test_atomic_dir_appears_complete_or_not_at_all(tmp_path):
    target = tmp_path / "cache" / "sae"
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("new")
        assert not target.exists(), "the target must not appear before the block ends"
    assert (target / "a.txt").read_text() == "new"
    with pytest.raises(RuntimeError):
        with atomic_dir(target) as tmp:
            (tmp / "a.txt").write_text("half")
            raise RuntimeError("build failed")
    assert (target / "a.txt").read_text() == "new", "a failed build must keep the good directory"
    with atomic_dir(target) as tmp:
        (tmp / "b.txt").write_text("rebuilt")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]
    assert [p.name for p in target.parent.iterdir()] == ["sae"], (
        "no temporary directories left behind"
    )
