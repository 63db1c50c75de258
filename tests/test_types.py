"""kit type-checks: pyright in basic mode over kit/, with the settings of ``[tool.pyright]`` in
pyproject.toml (``make typecheck`` runs the same command)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from kit.core.paths import REPO_ROOT


@pytest.mark.skipif(
    importlib.util.find_spec("pyright") is None,
    reason="pyright is not installed (the test extra has it: pip install -e '.[test]')",
)
def test_kit_type_checks_with_pyright():
    # --project: our settings, never a pyrightconfig.json that pyright would find in a folder above
    # the clone (it prefers one to pyproject.toml). --pythonpath: third-party imports resolve in the
    # running interpreter's environment, wherever it lives. PYRIGHT_PYTHON_IGNORE_WARNINGS: the
    # wrapper asks PyPI for a newer version otherwise.
    env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
    project = str(REPO_ROOT / "pyproject.toml")
    out = subprocess.run(
        [sys.executable, "-m", "pyright", "--project", project, "--pythonpath", sys.executable],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, f"pyright found type errors in kit/:\n{out.stdout}\n{out.stderr}"
