"""The flat API and the per-paper packages: what a notebook user types must keep working."""

import importlib
from pathlib import Path

import kit


def test_flat_api():
    for name in (
        "load_model",
        "load_sae",
        "load_benchmark",
        "start",
        "save_figure",
        "record_results",
        "findings_text",
    ):
        assert callable(getattr(kit, name))


def test_subpackages_are_listed_and_lazy():
    listed = dir(kit)
    for pkg in ("core", "models", "data", "mui", "shortcut", "cg", "neuronvote", "audits", "world"):
        assert pkg in listed, f"dir(kit) should list {pkg} for tab completion"
        assert importlib.import_module(f"kit.{pkg}") is getattr(kit, pkg)
    assert "law" in dir(kit.mui) and "explorer" in dir(kit.cg) and "tl" in dir(kit.models)


def test_each_paper_package_reexports_its_main_module():
    assert kit.mui.neuron_scores is kit.mui.scores.neuron_scores
    assert kit.shortcut.locate is kit.shortcut.ranking.locate
    assert kit.cg.chi_bench is kit.cg.metrics.chi_bench
    assert kit.neuronvote.rank_all is kit.neuronvote.methods.rank_all


def test_every_module_of_each_paper_package_is_listed_for_tab_completion():
    for pkg in (kit.mui, kit.shortcut, kit.cg, kit.neuronvote):
        modules = {p.stem for p in Path(pkg.__file__).parent.glob("*.py") if p.stem != "__init__"}
        assert modules <= set(dir(pkg)), (
            f"dir({pkg.__name__}) misses {sorted(modules - set(dir(pkg)))}"
        )
        for name in modules:
            assert getattr(pkg, name) is importlib.import_module(f"{pkg.__name__}.{name}")


def test_the_root_names_of_moved_modules_are_gone():
    import pytest

    for name in (
        "patching",
        "utility_law",
        "trajectories",
        "paper_tables",
        "scorers",
        "benchmarks",
    ):
        assert name not in dir(kit)
        with pytest.raises(AttributeError, match="submodules"):
            getattr(kit, name)


def test_unknown_attribute_names_the_submodules():
    import pytest

    with pytest.raises(AttributeError, match="submodules"):
        kit.no_such_thing  # noqa: B018


def test_every_listed_submodule_exists():
    """A name a package lists for tab completion must import (a module removed but still listed
    would fail only when someone tab-completes it)."""
    for pkg in (kit, kit.core, kit.models, kit.data, kit.mui, kit.shortcut, kit.cg, kit.neuronvote):
        for name in dir(pkg):
            if not name.startswith("_"):
                getattr(pkg, name)
