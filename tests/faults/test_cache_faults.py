"""Fault injection on the per-item caches: damaged lines, impossible
values, a model retrained in place and a responses file replaced under the same name never give
a number the cache should not have given; each test compares with a fresh computation."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

import kit
from kit.models import generate
from kit.models.twins import build_twin, twin_path
from kit.mui import metric as kmui
from kit.mui import quickstart as qs
from kit.mui.metric import subject_mui
from kit.subjects import Answers, subject_of


@pytest.fixture(scope="module")
def twin():
    return kit.load_model("twin/llama")


def _mui(model, answers: Answers) -> float:
    """MUI of ``answers`` as notebook 00 measures it: the model's subject, its per-item cache."""
    return subject_mui(subject_of(model), answers)


def _published(n: int = 4) -> Answers:
    ans = qs.file_answers("arc/llama3.1-8b-instruct", n=n)
    ans.responses = [r[:60] for r in ans.responses]  # short: the twin's context is 256 tokens
    return ans


@pytest.mark.parametrize(
    "damage", ["0xff bytes", "{}", "out-of-range neuron ids", "every neuron id", "truncated"]
)
def test_a_damaged_line_neither_breaks_a_rerun_nor_gives_a_wrong_mui(
    twin, tmp_path, monkeypatch, damage
):
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path))
    ans = _published()
    reference = kmui.utilization_for_items(twin, ans.items, ans.responses).mui
    assert _mui(twin, ans) == pytest.approx(reference, abs=1e-9)
    (cached,) = (tmp_path / "items").glob("*.jsonl")
    lines = cached.read_bytes().splitlines(keepends=True)
    if damage == "0xff bytes":
        lines.insert(1, b"\xff" * 16 + b"\n")
    elif damage == "{}":
        lines.insert(1, b"{}\n")
    elif damage == "truncated":  # a record cut in the middle (a torn write, a copy cut short)
        lines[0] = lines[0][: len(lines[0]) // 2] + b"\n"
    else:
        rec = json.loads(lines[0])
        n = twin.cfg.n_layers * twin.cfg.d_mlp
        # out of range: a well-formed record whose ids are not neurons of this model (MUI 1200%
        # before); every id: all in range, so only the record's digest tells (MUI 100 for 59.375)
        rec["value"] = list(range(n, 13 * n)) if damage.startswith("out") else list(range(n))
        lines[0] = json.dumps(rec).encode() + b"\n"
    cached.write_bytes(b"".join(lines))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        again = _mui(twin, ans)
    assert again == pytest.approx(reference, abs=1e-9) and 0 < again <= 100
    named = [
        w for w in seen if issubclass(w.category, UserWarning) and str(cached) in str(w.message)
    ]
    assert len(named) == 1, "the damaged file is named in one warning"


def test_a_model_retrained_in_place_gets_new_responses_and_a_new_mui(tmp_path, monkeypatch):
    """MUI 55.86 reused from the old model (fresh 42.58), the rest from the new."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    model_dir = tmp_path / "my-model"
    shutil.copytree(twin_path("llama"), model_dir)
    retrained = build_twin("llama", root=tmp_path / "train", seed=7, revision="retrained")
    ans = _published()
    prompts, ids = [it.prompt for it in ans.items], [it.id for it in ans.items]
    settings = generate.GenerationSettings(max_new_tokens=4)

    def measure():
        model = kit.load_model(str(model_dir))
        cached = (
            generate.respond(model, prompts, settings, benchmark="toy", ids=ids),
            _mui(model, ans),
        )
        fresh = (
            generate.generate_responses(model_dir, prompts, settings),
            kmui.utilization_for_items(model, ans.items, ans.responses).mui,
        )
        generate.release()  # the Hugging Face copy held for the next benchmark
        return cached, fresh

    (old_responses, old_mui), (fresh_old_responses, fresh_old_mui) = measure()
    assert old_responses == fresh_old_responses and old_mui == pytest.approx(
        fresh_old_mui, abs=1e-9
    )
    # same path, new weights
    shutil.copyfile(retrained / "model.safetensors", model_dir / "model.safetensors")
    (responses, mui), (fresh_responses, fresh_mui) = measure()
    assert fresh_mui != pytest.approx(old_mui) and fresh_responses != old_responses, (
        "retraining changed nothing"
    )
    assert responses == fresh_responses, "responses of the old weights were read from the cache"
    assert mui == pytest.approx(fresh_mui, abs=1e-9), "the old model's MUI was read from the cache"


def _lm_eval(path, responses):
    recs = [
        {
            "doc_id": i,
            "arguments": {"gen_args_0": {"arg_0": f"Question: {i} + 1 =", "arg_1": {}}},
            "resps": [[r]],
            "filtered_resps": [r],
            "target": str(i + 1),
            "exact_match": 1.0,
        }
        for i, r in enumerate(responses)
    ]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return str(path)


def test_a_responses_file_replaced_under_the_same_name_is_scored_anew(twin, tmp_path, monkeypatch):
    """MUI 4.30 reused for another lm-eval file of the same name (fresh 44.53)."""
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "samples_arc_2025-01-01.jsonl"
    first = qs.file_answers(_lm_eval(path, [" 1", " 2", " 3", " 4"]), n=4)
    mui_first = _mui(twin, first)
    second = qs.file_answers(
        _lm_eval(path, [" The sum is one, since zero plus one is one and nothing else."] * 4), n=4
    )
    assert second.source != first.source  # the file's hash is part of the source
    reused = _mui(twin, second)
    monkeypatch.setenv("KIT_CACHE_DIR", str(tmp_path / "empty-cache"))
    fresh = _mui(twin, second)
    assert fresh != pytest.approx(mui_first), (
        "the two files must give different MUIs for this test to mean anything"
    )
    assert reused == pytest.approx(fresh, abs=1e-9), "the first file's MUI was read from the cache"
