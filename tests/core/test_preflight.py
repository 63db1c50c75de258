"""Pre-flight checks (kit.core.preflight): what a run needs from the machine is refused before any
kernel starts, one line naming the field or variable."""

from __future__ import annotations

import errno

import pytest
import torch

import kit
from kit.core import preflight


def test_a_cache_folder_that_cannot_be_written_or_is_full_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    assert preflight.cache_problems() == []

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    with monkeypatch.context() as m:
        m.setattr(preflight.tempfile, "mkstemp", read_only)
        (line,) = preflight.cache_problems()
    assert line.startswith("KIT_CACHE_DIR: ") and "not writable (read-only file system)" in line
    (line,) = preflight.cache_problems(min_free=1 << 60)
    assert line.startswith("KIT_CACHE_DIR: ") and "MIN_FREE_CACHE_BYTES" in line
    assert preflight.MIN_FREE_CACHE_BYTES == 1 << 30
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "file"))
    (line,) = preflight.cache_problems()
    assert line.startswith("KIT_CACHE_DIR: ") and "it is a file" in line


def test_a_missing_data_folder_is_refused_when_named(tmp_path, monkeypatch):
    monkeypatch.setenv("KIT_DATA_DIR", str(tmp_path / "nowhere"))
    (line,) = preflight.data_problems()
    assert line.startswith("KIT_DATA_DIR: ") and "nowhere" in line
    monkeypatch.setenv("KIT_DATA_DIR", str(tmp_path))
    assert preflight.data_problems() == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_device_this_machine_lacks_is_refused_naming_the_field():
    assert preflight.device_problem("cpu") is None
    why = preflight.device_problem("cuda")
    assert why is not None and why.startswith("field 'device': 'cuda' but ")
    assert "allowed values here: cpu" in why


def test_registered_checks_run_on_every_config(monkeypatch):
    cfg = kit.load_params("00_quickstart", "smoke")
    seen = []
    monkeypatch.setattr(preflight, "_CHECKS", [lambda c: seen.append(c) or ["field 'x': bad"]])
    assert preflight.run_problems({"00_quickstart": cfg})[-1] == "00_quickstart: field 'x': bad"
    assert seen == [cfg]


def test_a_hub_id_not_in_the_offline_cache_is_refused(tmp_path, monkeypatch):
    """A misspelled hub id offline failed only after the kernel started."""
    import kit.configs  # noqa: F401  (registers the hub-id check)

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    cfg = kit.load_params(
        "00_quickstart",
        "smoke",
        {"compare_models": ["meta-lama/Llama-3.1-8B"], "compare_tasks": {"add": 1}},
    )
    problems = preflight.config_problems(cfg)
    assert any(
        p.startswith("field 'compare_models': 'meta-lama/Llama-3.1-8B' is not in the Hugging Face")
        for p in problems
    ), problems
    ok = kit.load_params("00_quickstart", "smoke")  # zoo/ names never ask the hub
    assert preflight.config_problems(ok) == []


def test_a_layer_beyond_the_model_is_refused_by_its_config():
    with pytest.raises(kit.ParamsError, match=r"field 'layer': 99 is not a layer of zoo/base-s"):
        kit.load_params("00_quickstart", "smoke", {"layer": 99})


def test_a_misspelled_model_name_without_an_org_is_refused_before_any_kernel(
    tmp_path, monkeypatch, capsys
):
    """``gtp2`` reads as a hub id without an org (like ``gpt2``): it failed only inside the
    notebook's kernel, after its imports and model set-up."""
    import kit.configs  # noqa: F401  (registers the hub-id check)
    from kit.core import runner

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = []
    monkeypatch.setattr(runner, "execute", lambda *a, **k: started.append(a))
    cfg = kit.load_params("00_quickstart", "smoke", {"model": "gtp2"})
    problems = preflight.config_problems(cfg)
    assert len(problems) == 1 and problems[0].startswith("field 'model': 'gtp2' is not a model")
    assert "close: gpt2" in problems[0], problems
    out = tmp_path / "runs"
    code = runner.main(
        ["--profile", "smoke", "--only", "00", "--set", "model=gtp2", "--out", str(out)]
    )
    assert code == 2 and started == [] and not out.exists()
    assert "field 'model': 'gtp2'" in capsys.readouterr().err
    # the names TransformerLens knows without an org, and the other forms, are not refused
    from kit.models.hub import bare_name_problem

    assert bare_name_problem("model", "gpt2", "gpt2") is None
    assert bare_name_problem("model", "minilm", "minilm") is None
