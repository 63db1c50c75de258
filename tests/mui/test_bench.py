"""The MUI bench on models with short contexts (`kit bench mui --model zoo/base-m` once
failed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kit.mui import bench


def fake_model(n_params: int, n_ctx: int):
    return SimpleNamespace(
        parameters=lambda: [torch.zeros(n_params)], cfg=SimpleNamespace(n_ctx=n_ctx)
    )


@pytest.mark.parametrize(
    "n_params, n_ctx, expected",
    [
        # the micro world's zoo/base-m: 256 tokens used to overflow
        (
            1000,
            64,
            {"short": 16, "long": 64},
        ),
        (1000, 2048, {"short": 64, "long": 256}),
        (10**9, 2048, {"short": 16, "long": 64}),
    ],
)
def test_sequence_lengths_fit_the_context(n_params, n_ctx, expected):
    assert bench._seq_lens(fake_model(n_params, n_ctx)) == expected


@pytest.mark.slow
def test_bench_runs_on_a_zoo_model(micro_world, monkeypatch):
    monkeypatch.setenv("KIT_WORLD", micro_world)
    lines = bench.run("zoo/base-m")
    assert len(lines) == 4 and all(line.ratio > 0 for line in lines)


def test_throughput_text_hand_case():
    assert bench.throughput(1000, 0.5, 0.25, "cpu") == "2,000 vs 4,000 tokens/s"


@pytest.mark.slow
def test_bench_runs_through_the_real_model_path_on_a_twin():
    lines = bench.run("twin/llama")
    assert len(lines) == 4 and all(line.ratio > 0 for line in lines)
    assert "twin/llama 4x256" in lines[2].detail and "tokens/s" in lines[2].detail
