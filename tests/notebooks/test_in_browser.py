"""What a reader sees, checked in a real browser (headless Chromium, the ``driver`` fixture): a
committed notebook opened in JupyterLab shows its figures and its claims table without being run;
a signed (trusted) notebook runs its script views and shows a run's concept explorer inline, and
one naming the kit kernel opens unmodified; claims tables are whole, coloured and fit the page;
a run's ``report.html`` shows its claims and their figures."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager

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


@contextmanager
def serving_lab(tmp_path, root, env_extra=None):
    """JupyterLab on a free local port serving ``root``, every cell attached to the page
    (``windowingMode: none``), its own settings, workspace and runtime folders and ``env_extra``
    in its environment; yields ``(base url, token)``."""
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
        **(env_extra or {}),
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


@pytest.fixture
def lab(tmp_path):
    """JupyterLab serving a copy of a committed notebook (the browser may save what it opens)."""
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(REPO_ROOT / "notebooks" / f"{NOTEBOOK}.ipynb", root)
    with serving_lab(tmp_path, root) as served:
        yield served


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


SCRIPT_VIEW = (
    '<div id="kit-view"></div>'
    '<script>document.getElementById("kit-view").textContent = "drawn by its script";</script>'
)
"""An output that needs JavaScript, as circuitsvis's views do (blank until trusted)."""
EXPLORER_LABELS = ["fractions", "loops", "dates", "plants", "never fires"]


def _explorer(path):
    """A concept explorer (kit.cg.explorer) of five concepts over two benchmarks: a run's local
    page whose table its script draws (an empty page where scripts do not run)."""
    import numpy as np

    from kit.cg import explorer as cg_explorer

    rng = np.random.default_rng(0)
    acts = {b: rng.exponential(size=(4, 5)) * (rng.random((4, 5)) < 0.7) for b in ("arc", "gsm8k")}
    for a in acts.values():
        a[:, 4] = 0
    texts = {b: [f"{b} item {i}" for i in range(4)] for b in acts}
    models = {
        "m": {"acts": acts, "scores": {b: np.array([1, 0, 1, 1.0]) for b in acts}, "texts": texts}
    }
    data = cg_explorer.explorer_data(acts, texts, models, labels=EXPLORER_LABELS, n_examples=2)
    return cg_explorer.write_explorer(path, data)


def _lab_notebook(path, claims_table, metadata):
    """A notebook with a script view, a run's page inline and a claims table among its outputs."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook, new_output

    from kit.core.jupyter import local_page

    page = local_page(_explorer(path.parent / "concept_explorer.html"), path.parent, height=300)

    def shown(obj_html, text):
        return new_output("display_data", data={"text/html": obj_html, "text/plain": text})

    cell = new_code_cell("show()", execution_count=1)
    cell.outputs = [
        shown(SCRIPT_VIEW, "(a view)"),
        shown(page._repr_html_(), repr(page)),
        shown(claims_table._repr_html_(), repr(claims_table)),
    ]
    nb = new_notebook(cells=[cell], metadata=metadata)
    nbformat.write(nb, path)
    return path


VIEW_STATE = """
const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
if (!panel) return {idle: false};
return {
  drawn: [...panel.querySelectorAll('div')].some(
    d => d.children.length === 0 && d.textContent === 'drawn by its script'),
  status: [...panel.querySelectorAll('.jp-Notebook-ExecutionIndicator')].map(
    e => e.dataset.status).join(','),
  iframes: panel.querySelectorAll('.jp-OutputArea-output iframe').length,
  idle: !!panel.querySelector('.jp-Notebook-ExecutionIndicator[data-status="idle"]'),
  dirty: panel.classList.contains('jp-mod-dirty')
    || !!document.querySelector('.lm-TabBar-tab.lm-mod-current.jp-mod-dirty'),
};"""

CLAIMS_LAYOUT = """
const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
const table = panel.querySelector('table.kit-claims');
const area = table.closest('.jp-OutputArea-output');
const heads = [...table.querySelectorAll('th')].map(h => h.textContent.trim());
const col = name => heads.indexOf(name);
const rows = [...table.querySelectorAll('tbody tr')];
return {
  fits: table.getBoundingClientRect().right <= area.getBoundingClientRect().right + 1
    && area.scrollWidth <= area.clientWidth + 1,
  claims: rows.map(r => r.children[col('claim')].textContent),
  verdicts: rows.map(r => [r.children[col('verdict')].textContent,
                           getComputedStyle(r.children[col('verdict')]).backgroundColor]),
};"""


def _claims_table():
    from kit.core.claims_html import ClaimsTable

    long = "patching the located neurons lowers M_con's accuracy more than patching " * 3
    rows = [
        C.claim(
            "001", "Fig. 3", "a", long.strip(), -3.0, ci=(-5.0, -1.0), null=0.0, direction="less"
        ),
        C.claim(
            "001", "Fig. 3", "b", "the other way", 3.0, ci=(1.0, 5.0), null=0.0, direction="less"
        ),
    ]
    return ClaimsTable(C.table(rows)), long.strip()


@pytest.mark.slow
def test_jupyterlab_runs_a_signed_notebooks_views_and_opens_it_unmodified(tmp_path, driver):
    """What a reader of a run sees in JupyterLab: the runner signs the notebooks it executes, so a
    script view (circuitsvis) draws and a run's page (the concept explorer) shows inline with its
    script run; the same notebook unsigned shows neither. A notebook naming the kit kernel as it
    reports itself is not marked modified once its kernel is up (one naming "Python 3" is). The
    claims table keeps the whole claim, colours verdicts and fits the page, signed or not."""
    from selenium.webdriver.support.ui import WebDriverWait

    from kit.core import jupyter

    root, data = tmp_path / "root", tmp_path / "jupyter-data"
    root.mkdir()
    env_prefix = tmp_path / "env"
    jupyter.install_kernel(prefix=str(env_prefix))  # what make setup does for the .venv
    table, long = _claims_table()
    signed = _lab_notebook(root / "signed.ipynb", table, jupyter.notebook_metadata())
    jupyter.sign(signed, data)
    unsigned = _lab_notebook(root / "unsigned.ipynb", table, jupyter.notebook_metadata())
    old = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    _lab_notebook(root / "old.ipynb", table, old)
    assert jupyter.is_trusted(signed, data) and not jupyter.is_trusted(unsigned, data)
    env = {"JUPYTER_DATA_DIR": str(data), "JUPYTER_PATH": str(env_prefix / "share" / "jupyter")}
    with serving_lab(tmp_path, root, env) as (base, token):
        driver.set_window_size(1200, 900)
        wait = WebDriverWait(driver, 240, poll_frequency=1)

        def opened(name):
            driver.get(f"{base}/lab/tree/{name}?token={token}&reset")
            wait.until(lambda d: d.execute_script(VIEW_STATE)["idle"])  # its kernel is up
            time.sleep(3)  # JupyterLab writes the kernel's kernelspec and language_info now
            return wait.until(lambda d: (s := d.execute_script(VIEW_STATE))["idle"] and s)

        state = opened("signed.ipynb")
        assert state["drawn"], f"a signed notebook's script view: {state}"
        assert state["iframes"] == 1 and not state["dirty"], state
        layout = driver.execute_script(CLAIMS_LAYOUT)
        frame = driver.find_element("css selector", ".jp-OutputArea-output iframe")
        driver.switch_to.frame(frame)
        rows = "#concepts tbody tr"  # the explorer's script draws one row per concept
        wait.until(lambda d: len(d.find_elements("css selector", rows)) == len(EXPLORER_LABELS))
        driver.switch_to.default_content()

        state = opened("unsigned.ipynb")
        assert not state["drawn"] and state["iframes"] == 0, f"unsigned: {state}"
        unsigned_layout = driver.execute_script(CLAIMS_LAYOUT)

        state = opened("old.ipynb")
        assert state["dirty"], "the check must see a notebook JupyterLab rewrites on opening"

    for shown in (layout, unsigned_layout):
        assert shown["fits"], "the claims table runs past the output area"
        assert shown["claims"][0] == long, "the claim text is cut"
        (v1, c1), (v2, c2) = shown["verdicts"]
        assert (v1, v2) == ("supported", "contradicted")
        assert c1 != c2 and "rgba(0, 0, 0, 0)" not in (c1, c2), "verdicts are not coloured"
