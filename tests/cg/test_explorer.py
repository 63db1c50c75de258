"""The concept explorer: payload contents, self-containment, and a real headless-Chromium check."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import scipy.sparse as sp

from kit.cg import explorer as cg_explorer
from kit.cg import metrics as cg

LABELS = [
    "photosynthesis / plants",
    "fractions / numerator",
    "loops / python",
    "dates / calendar",
    "dead",
]
_SCORES = np.array([1, 0, 1, 1, 0, 1.0])
LONG = "a long item " * 60 + "THE END"


def _arrays():
    rng = np.random.default_rng(0)
    a = rng.exponential(size=(6, 5)) * (rng.random((6, 5)) < 0.6)
    a[:, 4] = 0  # concept 4 never fires -> missing
    a[0, 0] = 5.0
    b = rng.exponential(size=(4, 5)) * (rng.random((4, 5)) < 0.6)
    b[:, 4] = 0
    b[:, 0] = 0.1
    return a, b


def _data():
    a, b = _arrays()
    texts = {
        "arc": [f"arc item {i} </script><b>x</b>" for i in range(6)],
        "gsm8k": [LONG] + [f"gsm item {i}" for i in range(1, 4)],
    }
    models = {
        "m": {
            "acts": {"arc": a},
            "scores": {"arc": _SCORES},
            "texts": {"arc": texts["arc"]},
            "responses": {"arc": [f"response {i}" for i in range(6)]},
        },
        "n": {
            "acts": {"arc": a, "gsm8k": b},
            "scores": {"arc": 1 - _SCORES, "gsm8k": np.array([1, 1, 0, 1.0])},
            "texts": texts,
        },
    }
    return cg_explorer.explorer_data(
        {"arc": a, "gsm8k": b}, texts, models, labels=LABELS, n_examples=2, meta={"SAE": "test-sae"}
    )


def test_payload_has_the_whole_dictionary_models_details_and_grids():
    p = _data()
    d, a = p["data"], _arrays()[0]
    assert d["concepts"]["label"] == LABELS and d["n_concepts"] == 5 and len(p["details"]) == 5
    assert d["concepts"]["coverage"][4] == "missing"
    m = d["models"]["m"]
    assert m["x_model"][4] is None, "undefined X_model must become null, not NaN (invalid JSON)"
    assert np.isclose(m["x_model"][0], cg.x_model({"arc": a}, {"arc": _SCORES})[0], rtol=1e-5)
    assert set(d["models"]) == {"m", "n"} and d["models"]["n"]["benchmarks"] == ["arc", "gsm8k"]
    first = p["items"][p["details"][0]["examples"]["m"]["correct"][0]]
    assert (first["benchmark"], first["text"], first["correct"]) == (
        "arc",
        "arc item 0 </script><b>x</b>",
        True,
    ), "the most activating correct datapoint (item 0, activation 5) comes first"
    assert first["response"] == "response 0"
    assert all(not p["items"][i]["correct"] for i in p["details"][0]["examples"]["m"]["incorrect"])
    assert any(it["text"] == LONG for it in p["items"]), (
        "item text is kept whole (shown truncated, full on demand)"
    )
    assert d["overlap"]["names"] == ["arc", "gsm8k"] and d["overlap"]["values"][0][0] == 1.0
    chib = cg.chi_bench_table({"arc": a, "gsm8k": _arrays()[1]})
    rho = chib.corr(method="spearman").loc["arc", "gsm8k"]
    assert np.isclose(d["correlation"]["coverage (chi_bench)"]["values"][0][1], rho, rtol=1e-5)
    assert d["correlation"]["performance (chi_model)"]["names"] == [
        "m / arc",
        "n / arc",
        "n / gsm8k",
    ]
    assert d["meta"]["SAE"] == "test-sae" and d["meta"]["concepts"] == 5


def test_num_keeps_epsilon_sized_values():
    assert cg_explorer._num(7e-6) == 7e-6, (
        "rounding to 5 decimals would turn a missing concept into 1e-5"
    )
    assert cg_explorer._num(float("nan")) is None


def test_top_items_all_matches_top_items():
    a = sp.random(30, 8, density=0.4, random_state=1, format="csr")
    tops = cg_explorer.top_items_all(a, 3)
    assert [[i for _, i in t] for t in tops] == [cg_explorer.top_items(a, c, 3) for c in range(8)]


def test_html_is_self_contained(tmp_path):
    path = cg_explorer.write_explorer(tmp_path / "concept_explorer.html", _data())
    text = path.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), (
        "no external resources allowed"
    )
    assert "<script src" not in text and "<link" not in text

    def block(i):
        return json.loads(
            re.search(rf'<script id="{i}" type="application/json">(.*?)</script>', text, re.S)
            .group(1)
            .replace("<\\/", "</")
        )

    assert block("cg-data")["n_concepts"] == 5, (
        "a '</script>' inside item text must not end a data block"
    )
    assert any("</script>" in it["text"] for it in block("cg-items"))
    assert block("d-4")["examples"]["benchmarks"] == []
    with pytest.raises(ValueError, match=".html"):
        cg_explorer.write_explorer(tmp_path / "x.txt", _data())


def _big(n_concepts=450, seed=0):
    """Three benchmarks, two models, a dictionary wider than one rendered page."""
    rng = np.random.default_rng(seed)
    acts = {
        b: sp.csr_matrix(rng.exponential(size=(n, n_concepts)) * (rng.random((n, n_concepts)) < p))
        for b, n, p in (("a", 40, 0.05), ("b", 30, 0.1), ("c", 20, 0.02))
    }
    texts = {b: [f"{b} item {i}" for i in range(a.shape[0])] for b, a in acts.items()}
    models = {
        f"model{k}": {
            "acts": {"a": acts["a"]},
            "scores": {"a": rng.integers(0, 2, 40).astype(float)},
            "texts": {"a": texts["a"]},
        }
        for k in (1, 2)
    }
    labels = [f"concept {i}" for i in range(n_concepts)]
    return acts, cg_explorer.explorer_data(acts, texts, models, labels=labels, n_examples=2)


@pytest.mark.slow
def test_search_filter_sort_detail_in_headless_chromium(tmp_path, driver):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    path = cg_explorer.write_explorer(tmp_path / "concept_explorer.html", _data())
    driver.get(path.as_uri())

    def rows():
        return driver.find_elements(By.CSS_SELECTOR, "#concepts tbody tr")

    def labels():
        return [r.find_element(By.CSS_SELECTOR, "td.label").text for r in rows()]

    assert len(rows()) == 5, (
        "all concepts should be listed before searching (did the embedded JSON parse?)"
    )
    box = driver.find_element(By.ID, "search")
    box.send_keys("python")
    assert labels() == ["loops / python"], f"search 'python' should leave one row, got {labels()}"
    box.clear()
    box.send_keys("a")  # clear() does not fire 'input'; typing does
    assert set(labels()) == {label for label in LABELS if "a" in label}
    box.send_keys("\b")
    assert len(rows()) == 5
    Select(driver.find_element(By.ID, "flag")).select_by_value("missing")
    assert labels() == ["dead"]
    Select(driver.find_element(By.ID, "flag")).select_by_value("all")
    header = driver.find_element(By.CSS_SELECTOR, 'th[data-key="x_bench"]')
    header.click()  # the table starts sorted by X_bench descending; a click reverses it
    assert labels()[0] == "dead"
    header.click()
    assert labels()[-1] == "dead"

    # the model selector switches the X_model column (model n scores the complement of model m on
    # arc)
    def xm():
        return [r.find_elements(By.TAG_NAME, "td")[3].text for r in rows()]

    before = xm()
    Select(driver.find_element(By.ID, "model")).select_by_value("n")
    assert xm() != before
    # details: per-model chi_model columns, the full item and response text on demand
    Select(driver.find_element(By.ID, "model")).select_by_value("m")
    next(r for r in rows() if r.find_element(By.CSS_SELECTOR, "td.label").text == LABELS[0]).click()
    detail = driver.find_element(By.ID, "detail")
    assert (
        "Concept 0" in detail.text and "chi_model m" in detail.text and "chi_model n" in detail.text
    )
    ex = detail.find_element(By.CSS_SELECTOR, ".ex.correct")
    assert "response 0" not in ex.text
    ex.find_element(By.CSS_SELECTOR, "button.full").click()
    assert "response 0" in detail.find_element(By.CSS_SELECTOR, ".ex.correct").text
    assert len(driver.find_elements(By.CSS_SELECTOR, "#overlap td")) == 4
    assert len(driver.find_elements(By.CSS_SELECTOR, "#correlation td")) == 4
    Select(driver.find_element(By.ID, "corr-kind")).select_by_visible_text(
        "performance (chi_model)"
    )
    assert len(driver.find_elements(By.CSS_SELECTOR, "#correlation td")) == 9
    assert "test-sae" in driver.execute_script(
        "return document.getElementById('meta-body').textContent"
    )


@pytest.mark.slow
def test_whole_dictionary_lazy_rows_and_benchmark_subset_in_headless_chromium(tmp_path, driver):
    from selenium.webdriver.common.by import By

    acts, payload = _big()
    path = cg_explorer.write_explorer(tmp_path / "concept_explorer.html", payload)
    driver.get(path.as_uri())

    def n_rows():
        return len(driver.find_elements(By.CSS_SELECTOR, "#concepts tbody tr"))

    def count():
        return driver.find_element(By.ID, "count").text

    assert count().startswith("450 of 450 concepts"), (
        "the explorer holds the whole dictionary, not a capped list"
    )
    assert n_rows() == 200, "rows are rendered a page at a time"
    driver.execute_script(
        "const t = document.getElementById('tablewrap'); t.scrollTop = t.scrollHeight;"
    )
    driver.execute_script(
        "document.getElementById('tablewrap').dispatchEvent(new Event('scroll'));"
    )
    assert n_rows() == 400
    box = driver.find_element(By.ID, "search")
    box.send_keys("449")
    assert n_rows() == 1, "the last concept of the dictionary is there"
    box.send_keys("\b\b\b")

    # Fig. 24: coverage of a chosen subset of benchmarks, recomputed in the page, equals Python's
    def counts():
        return {
            k: int(driver.find_element(By.ID, f"n-{k}").text) for k in ("missing", "under", "over")
        }

    full = cg.coverage_classes(cg.x_bench(acts))
    assert counts() == {k: int((full == k).sum()) for k in ("missing", "under", "over")}
    driver.find_element(By.CSS_SELECTOR, '#subset input[value="b"]').click()
    sub = cg.coverage_classes(cg.x_bench({k: acts[k] for k in ("a", "c")}))
    assert counts() == {k: int((sub == k).sum()) for k in ("missing", "under", "over")}
    assert counts()["missing"] > int((full == "missing").sum()), (
        "dropping a benchmark leaves more concepts missing"
    )
    assert len(driver.find_elements(By.CSS_SELECTOR, "#subset-hist rect")) == 30
