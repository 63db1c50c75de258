"""Every docstring example of the methods' public API runs, on the micro world and random models.

The examples are the documentation a researcher copies (``kit.mui.mui(subject, answers)``,
``kit.neuronvote.vote(x, y)``, ``kit.shortcut.locate(...)``...): a changed signature or result
fails here, not in a reader's session. Each example is one test, named after its function.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

API_MODULES = [
    "kit.core.registry",
    "kit.mui.metric",
    "kit.mui.key_neurons",
    "kit.mui.scores",
    "kit.neuronvote.methods",
    "kit.neuronvote.voting",
    "kit.shortcut.scores",
    "kit.shortcut.ranking",
    "kit.shortcut.evaluate",
    "kit.cg.metrics",
    "kit.cg.coverage",
    "kit.audits",
    "kit.audits.sae_validity",
    "kit.audits.stability",
    "kit.audits.superposition",
    "kit.audits.saebench",
    "kit.audits.psychophysics",
    "kit.audits.safety",
    "kit.audits.mib",
]
"""Modules whose docstring examples are the public API's documentation."""


def _examples() -> list[tuple[str, doctest.DocTest]]:
    out = []
    finder = doctest.DocTestFinder(exclude_empty=True)
    for name in API_MODULES:
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            if test.examples and test.name.startswith(name):
                out.append((test.name, test))
    return out


EXAMPLES = _examples()


def test_every_api_module_has_examples():
    covered = {
        name
        for name in API_MODULES
        if any(t.startswith(name + ".") or t == name for t, _ in EXAMPLES)
    }
    assert covered == set(API_MODULES), f"no docstring example in {set(API_MODULES) - covered}"


@pytest.mark.parametrize("test", [t for _, t in EXAMPLES], ids=[n for n, _ in EXAMPLES])
def test_docstring_example_runs(test: doctest.DocTest, micro_world):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out: list[str] = []
    result = runner.run(test, out=out.append, clear_globs=True)
    assert result.failed == 0, "".join(out)
