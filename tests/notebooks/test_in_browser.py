"""What a reader sees, checked in a real browser (headless Chromium, the ``driver`` fixture): a
committed notebook opened in JupyterLab shows its figures and its claims table without being run,
and a run's ``report.html`` shows its claims and their figures."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from kit.core import claims as C
from kit.core.paths import REPO_ROOT
from kit.core.report import write_report

NOTEBOOK = "01_utility_law"
"""A notebook with figures, tables and a claims table."""

RENDERED_IMAGES = """return [...document.querySelectorAll('.jp-OutputArea-output img')]
    .filter(i => i.complete && i.naturalWidth > 0).length"""

TABLE_VERDICTS = """
const tables = [...document.querySelectorAll(arguments[0])].filter(t => {
  const heads = [...t.querySelectorAll('th')].map(h => h.textContent.trim());
  return heads.includes('claim') && heads.includes('verdict');
});
return tables.flatMap(t => {
  const heads = [...t.querySelectorAll('tr')][0].querySelectorAll('th');
  const col = [...heads].findIndex(h => h.textContent.trim() === 'verdict');
  return [...t.querySelectorAll('tr')].slice(1).map(r => r.children[col]?.textContent.trim());
});"""
"""The verdict column of every claims table (a table with 'claim' and 'verdict' headers)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """JupyterLab on a free local port serving a copy of a committed notebook (the browser may
    save what it opens), every cell attached to the page (``windowingMode: none``), its own
    settings, workspace and runtime folders; ``(base url, token)``."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(REPO_ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", root)
    settings = tmp_path / "settings"
    tracker = settings / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
    tracker.parent.mkdir(parents=True)
    # by default JupyterLab leaves cells out of view unrendered: every cell must be in the page
    tracker.write_text(json.dumps({"windowingMode": "none"}))
    port, token = _free_port(), "kit-browser-test"
    log = tmp_path / "lab.log"
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",  # containers often run as root; harmless otherwise
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--ServerApp.root_dir={root}",
                f"--IdentityProvider.token={token}",
                f"--LabApp.user_settings_dir={settings}",
                f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            ],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        f"JupyterLab did not answer on {base}: {log.read_text()[-3000:]}"
                    ) from None
                time.sleep(0.5)
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.slow
def test_a_committed_notebook_shows_its_figures_and_claims_in_jupyterlab(lab, driver):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    base, token = lab
    driver.set_window_size(1400, 1000)
    driver.get(f"{base}/lab/tree/{NOTEBOOK}.ipynb?token={token}&reset")
    wait = WebDriverWait(driver, 180, poll_frequency=1)
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell"))
    try:
        wait.until(lambda d: d.execute_script(RENDERED_IMAGES) > 0)
    except Exception:  # selenium's TimeoutException: say what the page held instead
        n = len(driver.find_elements(By.CSS_SELECTOR, ".jp-OutputArea-output"))
        raise AssertionError(
            f"no rendered figure in {NOTEBOOK}.ipynb after 180 s ({n} output areas on the page): "
            "does the committed notebook carry its outputs (python -m kit notebooks check)?"
        ) from None
    verdicts = driver.execute_script(TABLE_VERDICTS, ".jp-OutputArea-output table")
    assert verdicts, "no claims table (headers 'claim' and 'verdict') among the notebook's outputs"
    assert set(verdicts) <= set(C.ALL_VERDICTS), f"verdicts outside {C.ALL_VERDICTS}: {verdicts}"
    first = driver.find_element(By.CSS_SELECTOR, ".jp-Notebook .jp-Cell").text
    assert "question" in first, f"the notebook should open on the paper's question, not {first!r}"
    hidden = driver.find_elements(By.CSS_SELECTOR, ".jp-Notebook .jp-InputPlaceholder")
    assert len(hidden) == 1, "the parameters cell (and only it) should open collapsed"


def _run_with_a_claim_and_its_figure(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run = tmp_path / "20260101-000000"
    figures = run / "03_shortcut_neurons" / "figures"
    figures.mkdir(parents=True)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [3, 1, 2])
    fig.savefig(figures / "fig3_sparsity_curve.png")
    plt.close(fig)
    row = C.claim(
        "001",
        "Fig. 3",
        "sparse",
        "patching the located neurons lowers M_con's accuracy more than random ones",
        -3.0,
        ci=(-5.0, -1.0),
        null=0.0,
        direction="less",
        figure="fig3_sparsity_curve",
        notebook="03_shortcut_neurons",
    ).row()
    (run / "03_shortcut_neurons" / "results.json").write_text(json.dumps({"claims": [row]}))
    (run / "run.json").write_text(
        json.dumps(
            {"profile": "tiny", "notebooks": [{"notebook": "03_shortcut_neurons", "status": "ok"}]}
        )
    )
    return run, row


@pytest.mark.slow
def test_a_run_report_shows_its_claims_and_figures_in_chromium(tmp_path, driver):
    from selenium.webdriver.common.by import By

    run, row = _run_with_a_claim_and_its_figure(tmp_path)
    _, html = write_report(run)
    driver.get(html.as_uri())
    assert driver.execute_script(TABLE_VERDICTS, "table") == [row["verdict"]]
    driver.find_element(By.CSS_SELECTOR, "details summary").click()  # the figure, folded
    img = driver.find_element(By.CSS_SELECTOR, "details img")
    assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth", img)
    assert img.size["width"] > 0 and img.size["height"] > 0, "the claim's figure is not displayed"
