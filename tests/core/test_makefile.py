"""The Makefile's quieting pieces do what they say, run through make itself."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from kit.core.paths import REPO_ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def make_probe(recipe: str) -> subprocess.CompletedProcess:
    """Run ``recipe`` as a target appended to the project's Makefile (its variables in scope)."""
    probe = f"probe:\n\t@{recipe}\n"
    return subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", "-", "probe"],
        input=probe,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )


def test_pip_location_warnings_are_dropped_and_failures_kept():
    out = make_probe(
        """set -o pipefail; (echo "WARNING: Location 'file:///opt/x/six/' is ignored: it is """
        """neither a file nor a directory."; echo "ERROR: real problem"; exit 3) $(QUIET_PIP)"""
    )
    assert out.stdout.splitlines() == ["ERROR: real problem"], (
        "only the Location warnings are filtered"
    )
    assert out.returncode != 0, "pip's failure must still fail the make target"


def test_lab_allows_root_only_as_root():
    out = make_probe("echo [$(ALLOW_ROOT)]")
    assert out.stdout.strip() == ("[--allow-root]" if os.geteuid() == 0 else "[]")


def test_progress_bars_are_off_when_written_to_a_log():
    out = make_probe("echo [$(BARS)]")  # stdout is a pipe here, as in `make run > log`
    assert out.stdout.strip() == "[TQDM_DISABLE=1]"


def test_environment_yml_installs_what_the_makefile_installs():
    """conda's environment.yml: the Makefile's Python version and its TORCH_SPEC before the
    package and its test extra, so the two paths resolve the same torch."""
    import yaml

    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text())
    torch_spec = make_probe("echo $(TORCH_SPEC)").stdout.strip()
    python = make_probe("echo $(PYTHON)").stdout.strip()
    deps = env["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert f"python={python.removeprefix('python')}" in deps
    assert pip.index(torch_spec) < pip.index("-e .[test]")


def test_setup_installs_the_kit_kernel_and_signs_the_committed_notebooks():
    """The kernel for the .venv's Jupyter and the user's own, the notebooks trusted for this user
    (kit/core/jupyter.py), on every `make setup`, not only when pyproject.toml changes."""
    dry = subprocess.run(
        ["make", "-n", "-W", "pyproject.toml", "setup"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    ).stdout
    assert "-m kit jupyter kernel --sys-prefix --user" in dry
    assert "-m kit jupyter trust notebooks" in dry
    assert "--name python3" not in dry, "the old kernel name"
