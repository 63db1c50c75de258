"""The flat API and the per-paper packages: what a notebook user types must keep working."""

import importlib

import kit


def test_flat_api():
    for name in ("load_model", "load_sae", "load_benchmark", "start", "save_figure", "record_results", "findings_text"):
        assert callable(getattr(kit, name))


def test_subpackages_are_listed_and_lazy():
    listed = dir(kit)
    for pkg in ("core", "models", "data", "mui", "shortcut", "cg", "neuronvote", "audits", "world"):
        assert pkg in listed, f"dir(kit) should list {pkg} for tab completion"
        assert importlib.import_module(f"kit.{pkg}") is getattr(kit, pkg)
    assert "law" in dir(kit.mui) and "explorer" in dir(kit.cg) and "tl" in dir(kit.models)


def test_each_paper_package_reexports_its_main_module():
    assert kit.mui.neuron_scores is kit.mui.metric.neuron_scores
    assert kit.shortcut.locate is kit.shortcut.neurons.locate
    assert kit.cg.chi_bench is kit.cg.metrics.chi_bench
    assert kit.neuronvote.rank_all is kit.neuronvote.methods.rank_all


def test_moved_module_names_still_resolve():
    assert kit.patching is kit.shortcut.patching
    assert kit.utility_law is kit.mui.law
    assert kit.paper_tables is kit.data.paper_tables


def test_unknown_attribute_names_the_submodules():
    import pytest

    with pytest.raises(AttributeError, match="submodules"):
        kit.no_such_thing  # noqa: B018
