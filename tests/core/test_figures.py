from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from kit.core.figures import bundled_fonts_first, record_results, save_figure


def test_save_figure_writes_png_and_pdf(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    paths = save_figure(fig, "line", tmp_path / "figs")
    assert [p.name for p in paths] == ["line.png", "line.pdf"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and paths[1].read_bytes()[:4] == b"%PDF"
    assert not list((tmp_path / "figs").glob(".*tmp")), "temporary files must be renamed or removed"


def test_saving_a_figure_twice_gives_identical_bytes(tmp_path):
    """No creation date or version stamp: an unchanged run leaves committed figures unchanged."""
    import time

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    ax.set_title("same")
    first = [p.read_bytes() for p in save_figure(fig, "f", tmp_path / "a")]
    time.sleep(1.1)  # PDF dates have one-second resolution: a date would now differ
    second = [p.read_bytes() for p in save_figure(fig, "f", tmp_path / "b")]
    assert first == second, "saving the same figure twice must give the same PNG and PDF bytes"
    assert b"CreationDate" not in first[1] and b"Matplotlib" not in first[1]
    assert b"Software" not in first[0]


def test_bundled_fonts_win_ties_with_a_system_copy(tmp_path, monkeypatch):
    """A second DejaVu Sans listed first (as a user-wide font cache may list Debian's) is what findfont
    takes, and the PDF embeds it; after bundled_fonts_first it is matplotlib's own file again."""
    import shutil

    from matplotlib import font_manager as fm

    bundled = bundled_fonts_first()
    own = bundled / "DejaVuSans.ttf"
    copy = tmp_path / "system" / "DejaVuSans.ttf"
    copy.parent.mkdir()
    shutil.copyfile(own, copy)
    monkeypatch.setattr(fm.fontManager, "ttflist", [fm.ttfFontProperty(fm.get_font(str(copy))), *fm.fontManager.ttflist])
    try:
        fm.fontManager._findfont_cached.cache_clear()
        assert fm.findfont("DejaVu Sans") == str(copy), "the tie rule this guards against"
        assert bundled_fonts_first() == bundled
        assert fm.findfont("DejaVu Sans") == str(own)
    finally:
        fm.fontManager._findfont_cached.cache_clear()


def test_save_figure_rejects_path_like_names(tmp_path):
    fig, _ = plt.subplots()
    with pytest.raises(ValueError, match="letters, digits"):
        save_figure(fig, "../escape", tmp_path)


def test_record_results_merges_and_makes_json_safe(tmp_path):
    path = tmp_path / "results.json"
    record_results(path, a=1, arr=np.array([1.5, 2.5]))
    merged = record_results(path, b=np.float32(0.25), missing=math.nan, flag=np.bool_(True))
    on_disk = json.loads(path.read_text())
    assert on_disk == merged == {"a": 1, "arr": [1.5, 2.5], "b": 0.25, "missing": None, "flag": True}
