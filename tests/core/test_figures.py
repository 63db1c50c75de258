from __future__ import annotations

import json
import math

import matplotlib

matplotlib.use("Agg")
import numpy as np
import pytest

from kit.core.figures import (
    bundled_fonts_first,
    clear_findfont_cache,
    new_figure,
    record_results,
    save_figure,
)


def test_save_figure_writes_png_and_pdf(tmp_path):
    fig, ax = new_figure()
    ax.plot([0, 1], [1, 0])
    paths = save_figure(fig, "line", tmp_path / "figs")
    assert [p.name for p in paths] == ["line.png", "line.pdf"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and paths[1].read_bytes()[:4] == b"%PDF"
    assert not list((tmp_path / "figs").glob(".*tmp")), "temporary files must be renamed or removed"


def test_saving_a_figure_twice_gives_identical_bytes(tmp_path):
    """No creation date or version stamp: an unchanged run leaves committed figures unchanged."""
    import time

    fig, ax = new_figure()
    ax.plot([0, 1], [1, 0])
    ax.set_title("same")
    first = [p.read_bytes() for p in save_figure(fig, "f", tmp_path / "a")]
    time.sleep(1.1)  # PDF dates have one-second resolution: a date would now differ
    second = [p.read_bytes() for p in save_figure(fig, "f", tmp_path / "b")]
    assert first == second, "saving the same figure twice must give the same PNG and PDF bytes"
    assert b"CreationDate" not in first[1] and b"Matplotlib" not in first[1]
    assert b"Software" not in first[0]


def test_bundled_fonts_win_ties_with_a_system_copy(tmp_path, monkeypatch):
    """A second DejaVu Sans listed first (as a user-wide font cache may list Debian's) is what
    findfont takes, and the PDF embeds it; after bundled_fonts_first it is matplotlib's own file
    again."""
    import shutil

    from matplotlib import font_manager as fm

    bundled = bundled_fonts_first()
    own = bundled / "DejaVuSans.ttf"
    copy = tmp_path / "system" / "DejaVuSans.ttf"
    copy.parent.mkdir()
    shutil.copyfile(own, copy)
    monkeypatch.setattr(
        fm.fontManager,
        "ttflist",
        [fm.ttfFontProperty(fm.get_font(str(copy))), *fm.fontManager.ttflist],
    )
    try:
        fm.fontManager._findfont_cached.cache_clear()
        assert fm.findfont("DejaVu Sans") == str(copy), "the tie rule this guards against"
        assert bundled_fonts_first() == bundled
        assert fm.findfont("DejaVu Sans") == str(own)
    finally:
        fm.fontManager._findfont_cached.cache_clear()


def test_findfont_cache_is_what_addfont_clears():
    """clear_findfont_cache reaches matplotlib's private ``_findfont_cached``: this fails loudly,
    naming the version, the day matplotlib stops clearing that cache in ``FontManager.addfont`` (its
    own way of refreshing after the font list changes) or drops it, so bundled_fonts_first is
    revisited then."""
    import inspect

    import matplotlib
    from matplotlib import font_manager as fm

    where = f"matplotlib {matplotlib.__version__}"
    assert callable(getattr(fm.fontManager._findfont_cached, "cache_clear", None)), (
        f"{where}: FontManager._findfont_cached is no lru_cache any more"
    )
    assert "self._findfont_cached.cache_clear()" in inspect.getsource(fm.FontManager.addfont), (
        f"{where}: FontManager.addfont no longer clears _findfont_cached; follow what it does now"
    )
    fm.findfont("DejaVu Sans")
    assert fm.fontManager._findfont_cached.cache_info().currsize > 0
    clear_findfont_cache(fm.fontManager)
    assert fm.fontManager._findfont_cached.cache_info().currsize == 0


def test_a_font_manager_without_the_cache_fails_loudly():
    class Renamed:  # a matplotlib whose FontManager no longer has _findfont_cached
        ttflist: list = []

    with pytest.raises(
        RuntimeError, match=r"matplotlib .*_findfont_cached.cache_clear\(\) is gone"
    ):
        clear_findfont_cache(Renamed())


def test_save_figure_rejects_path_like_names(tmp_path):
    fig, _ = new_figure()
    with pytest.raises(ValueError, match="letters, digits"):
        save_figure(fig, "../escape", tmp_path)


def test_record_results_merges_and_makes_json_safe(tmp_path):
    path = tmp_path / "results.json"
    record_results(path, a=1, arr=np.array([1.5, 2.5]))
    merged = record_results(path, b=np.float32(0.25), missing=math.nan, flag=np.bool_(True))
    on_disk = json.loads(path.read_text())
    assert (
        on_disk == merged == {"a": 1, "arr": [1.5, 2.5], "b": 0.25, "missing": None, "flag": True}
    )
