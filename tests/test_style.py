"""kit/ and tests/ pass ruff (configured in pyproject.toml: line length 100, import sorting)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from kit.core.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ruff") is None,
    reason="ruff is not installed (pip install -e '.[test]' installs it)",
)


@pytest.mark.parametrize(
    "args",
    [["check", "kit", "tests"], ["format", "--check", "kit", "tests"]],
    ids=["check", "format"],
)
def test_ruff(args):
    out = subprocess.run(
        [sys.executable, "-m", "ruff", *args], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, f"ruff {' '.join(args)} failed:\n{out.stdout}{out.stderr}"
