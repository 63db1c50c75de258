"""The concept explorer: payload contents, self-containment, and a real headless-Chromium check."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from kit.cg import explorer as cg_explorer

LABELS = ["photosynthesis / plants", "fractions / numerator", "loops / python", "dates / calendar", "dead"]


_SCORES = np.array([1, 0, 1, 1, 0, 1.0])
_ARC = None


def _data():
    global _ARC
    rng = np.random.default_rng(0)
    a = rng.exponential(size=(6, 5)) * (rng.random((6, 5)) < 0.6)
    a[:, 4] = 0  # concept 4 never fires -> missing
    a[0, 0] = 5.0
    b = rng.exponential(size=(4, 5)) * (rng.random((4, 5)) < 0.6)
    b[:, 4] = 0
    _ARC = a
    texts = {"arc": [f"arc item {i} </script><b>x</b>" for i in range(6)], "gsm8k": [f"gsm item {i}" for i in range(4)]}
    return cg_explorer.explorer_data({"arc": a, "gsm8k": b}, texts, model_acts={"arc": a},
                                     model_scores={"arc": np.array([1, 0, 1, 1, 0, 1.0])},
                                     model_texts={"arc": texts["arc"]}, labels=LABELS, n_examples=2, model_name="m")


def test_payload_has_table_detail_and_overlap():
    d = _data()
    assert [c["label"] for c in d["concepts"]] == LABELS
    assert d["concepts"][4]["coverage"] == "missing"
    assert d["concepts"][4]["x_model"] is None, "undefined X_model must become null, not NaN (invalid JSON)"
    c0 = d["concepts"][0]
    assert set(c0["chi_bench"]) == {"arc", "gsm8k"} and set(c0["chi_model"]) == {"arc"}
    assert c0["examples"]["correct"][0] == "m:arc#0", "the most activating correct datapoint comes first"
    assert all(d["items"][k]["benchmark"] in ("arc", "gsm8k") for k in c0["examples"]["unscored"])
    assert all(d["items"][k]["benchmark"] == "arc (m)" for k in c0["examples"]["incorrect"])
    # X_model of concept 0 equals kit.cg.metrics.x_model on the model's data
    from kit.cg import metrics as cg
    assert np.isclose(c0["x_model"], cg.x_model({"arc": _ARC}, {"arc": _SCORES})[0], atol=1e-4)
    assert d["overlap"]["names"] == ["arc", "gsm8k"] and d["overlap"]["values"][0][0] == 1.0


def test_html_is_self_contained(tmp_path):
    path = cg_explorer.write_explorer(tmp_path / "concept_explorer.html", _data())
    text = path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), "no external resources allowed"
    assert "<script src" not in text and "<link" not in text
    payload = re.search(r'<script id="cg-data" type="application/json">(.*?)</script>', text, re.S).group(1)
    data = json.loads(payload.replace("<\\/", "</"))
    assert len(data["concepts"]) == 5, "a '</script>' inside item text must not end the data block"
    with pytest.raises(ValueError, match=".html"):
        cg_explorer.write_explorer(tmp_path / "x.txt", _data())


def _chromium():
    for b in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if Path(b).exists() and Path("/usr/bin/chromedriver").exists():
            return b
    return None


@pytest.mark.slow
def test_search_in_headless_chromium(tmp_path):
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium + chromedriver not installed (apt-get install -y chromium chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    path = cg_explorer.write_explorer(tmp_path / "concept_explorer.html", _data())
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        driver.get(path.as_uri())
        rows = lambda: driver.find_elements(By.CSS_SELECTOR, "#concepts tbody tr")
        labels = lambda: [r.find_element(By.CSS_SELECTOR, "td.label").text for r in rows()]
        assert len(rows()) == 5, "all concepts should be listed before searching (did the embedded JSON parse?)"
        box = driver.find_element(By.ID, "search")
        box.send_keys("python")
        assert labels() == ["loops / python"], f"search 'python' should leave one row, got {labels()}"
        box.clear()
        box.send_keys("a")  # clear() does not fire 'input'; typing does
        assert set(labels()) == {l for l in LABELS if "a" in l}
        box.send_keys("\b")
        assert len(rows()) == 5
        Select(driver.find_element(By.ID, "flag")).select_by_value("missing")
        assert labels() == ["dead"]
        Select(driver.find_element(By.ID, "flag")).select_by_value("all")
        # sorting by X_bench ascending puts the missing concept first
        header = driver.find_element(By.CSS_SELECTOR, 'th[data-key="x_bench"]')
        header.click()  # the table starts sorted by X_bench descending; a click reverses it
        assert labels()[0] == "dead"
        header.click()
        assert labels()[-1] == "dead"
        rows()[-1].click()  # the missing concept, last in descending order
        assert "Concept 4" in driver.find_element(By.ID, "detail").text
        assert len(driver.find_elements(By.CSS_SELECTOR, "#overlap td")) == 4
    finally:
        driver.quit()
