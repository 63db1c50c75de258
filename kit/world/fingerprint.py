"""The numerical fingerprint of this machine: one digest per primitive that worlds, SAEs and
notebooks compute with, in the pinned environment (:mod:`kit.core.pinned`).

Two machines whose fingerprints are equal compute every listed primitive to the same bits; the
first primitive whose digests differ is where they part. ``python -m kit zoo fingerprint`` prints
it as JSON; ``--compare FILE`` names the primitives that differ from another machine's file. The
committed reference, :data:`COMMITTED`, is the fingerprint of the machine that built the committed
cards (``kit/world/cards/``): a machine with the same fingerprint and CPU vendor is expected to
build those cards bit for bit (:func:`matches_committed`), and the test suite compares cards
exactly there, elsewhere within :data:`kit.world.card.TOLERANCE`.

Each primitive runs on fixed seeded inputs; the list is the one first used to find where an
Intel Xeon and an AMD EPYC part (``sqrt``: MKL's vector square root), plus every MKL vector
function torch routes unary ops to, and the world's own forward pass and training steps. The
products (``mm_*``, ``t_*``, ``bmm_*``, ``linear``) run in the pinned kernels
(:mod:`kit.core.kernels`: OpenBLAS). Add a
primitive when a library upgrade or a new CPU shows another difference: the digests of the others
do not move, because each primitive draws its inputs from its own generator.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable

from kit.core.pinned import child_json, pinned_environ

COMMITTED = Path(__file__).with_name("cards") / "fingerprint.json"
"""The fingerprint of the machine that built the committed cards."""

_TAG = "kit-fingerprint "


def _digest(t) -> str:
    import torch

    if isinstance(t, (tuple, list)):
        t = torch.cat([x.detach().reshape(-1).float() for x in t])
    return hashlib.sha256(t.detach().contiguous().cpu().numpy().tobytes()).hexdigest()[:16]


def _primitives() -> dict[str, Callable[[object], object]]:
    """name -> function of a seeded ``torch.Generator`` returning the tensor(s) to digest."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    def r(g, *shape):
        return torch.randn(*shape, generator=g)

    def gemm(m, k, n, layout):
        def f(g):
            a, b = r(g, m, k), r(g, k, n)
            if layout == "t":
                return a.t().contiguous().t() @ b.t().contiguous().t()
            if layout == "bmm":
                return torch.bmm(a.expand(3, m, k).contiguous(), b.expand(3, k, n).contiguous())
            return a @ b

        return f

    def unary(name, domain="real"):
        def f(g):
            x = r(g, 64, 512) * 4
            if domain == "positive":
                x = x.abs() + 1e-3
            elif domain == "unit":
                x = torch.tanh(x) * 0.99
            return getattr(torch, name)(x)

        return f

    def world_training(steps):
        def f(g):
            import random

            from kit.world import train

            model = train.make_model(train.Arch(2, 64, 4, 256, n_ctx=32), seed=0)
            opt = train.make_optimizer(model, 1e-3)
            items = train.mixture_stream({"add": 1.0, "dyck": 1.0, "ioi": 1.0}, random.Random(0))
            batches = train.batches_from_items(items, 16)
            if steps == 0:
                inputs, _, _ = train.collate(next(batches))
                return model(inputs, return_type="logits")
            train.train_loop(model, opt, batches, steps, lambda step: 1e-3, "fingerprint")
            return list(model.parameters())

        return f

    def np_case(fn):
        def f(g):
            rng = np.random.default_rng(int(torch.randint(0, 2**31, (1,), generator=g)))
            return torch.from_numpy(np.ascontiguousarray(fn(rng)))

        return f

    p: dict[str, Callable] = {
        "randn": lambda g: r(g, 1000),
        "randint": lambda g: torch.randint(0, 1000, (1000,), generator=g),
        "randperm": lambda g: torch.randperm(1000, generator=g),
        "multinomial": lambda g: torch.multinomial(
            torch.rand(50, generator=g), 200, replacement=True, generator=g
        ),
    }
    for m, k, n in [(64, 128, 96), (8, 64, 64), (128, 64, 256), (256, 256, 256), (33, 17, 65)]:
        for layout in ("mm", "t", "bmm"):
            p[f"{layout}_{m}x{k}x{n}"] = gemm(m, k, n, layout)
    p["linear"] = lambda g: F.linear(r(g, 32, 16, 64), r(g, 128, 64), r(g, 128))
    p["einsum_attn"] = lambda g: torch.einsum("bqd,bkd->bqk", r(g, 4, 16, 32), r(g, 4, 16, 32))
    # torch sends these to MKL's vector math (vms*): the place where vendors can part
    for name in ("exp", "tanh", "erf", "sin", "cos", "atan", "trunc"):
        p[name] = unary(name)
    for name in ("sqrt", "log", "log2", "log10"):
        p[name] = unary(name, "positive")
    for name in ("tan", "erfinv", "acos", "asin", "erfc"):
        p[name] = unary(name, "unit")
    p["pow_half"] = lambda g: (r(g, 64, 512).abs() + 1e-3).pow(0.5)
    # ATen's own kernels
    for name in ("sigmoid", "rsqrt", "log1p", "expm1"):
        p[name] = unary(name, "positive" if name == "rsqrt" else "real")
    p["gelu"] = lambda g: F.gelu(r(g, 64, 512) * 4)
    p["gelu_tanh"] = lambda g: F.gelu(r(g, 64, 512) * 4, approximate="tanh")
    p["silu"] = lambda g: F.silu(r(g, 64, 512) * 4)
    p["softmax"] = lambda g: (r(g, 64, 512) * 4).softmax(-1)
    p["log_softmax"] = lambda g: (r(g, 64, 512) * 4).log_softmax(-1)
    p["layer_norm"] = lambda g: F.layer_norm(r(g, 64, 512) * 4, (512,))
    p["reductions"] = lambda g: [
        f(x) for x in [r(g, 64, 512)] for f in (
            lambda x: x.sum(-1), lambda x: x.mean(0), lambda x: x.var(-1),
            lambda x: x.norm(dim=-1), lambda x: x.cumsum(-1),
        )
    ]  # fmt: skip
    p["cross_entropy"] = lambda g: F.cross_entropy(
        r(g, 64, 300), torch.randint(0, 300, (64,), generator=g)
    ).reshape(1)
    # the world's own model, data, loss, clipping and AdamW (kit.world.train)
    p["world_forward"] = world_training(0)
    p["world_5_training_steps"] = world_training(5)
    p["np_matmul"] = np_case(
        lambda rng: rng.standard_normal((200, 150)) @ rng.standard_normal((150, 120))
    )
    p["np_exp"] = np_case(lambda rng: np.exp(rng.standard_normal((200, 150))))
    p["np_svd"] = np_case(
        lambda rng: np.linalg.svd(rng.standard_normal((200, 150)), compute_uv=False)
    )
    p["np_lstsq"] = np_case(
        lambda rng: np.linalg.lstsq(
            rng.standard_normal((200, 150)), rng.standard_normal(200), rcond=None
        )[0]
    )
    return p


def _here() -> None:
    """In a pinned child: every primitive's digest, and what runs, as one tagged JSON line."""
    import torch

    from kit.core.pinned import cpuinfo, enter_pinned

    enter_pinned()
    digests = {}
    for name, fn in _primitives().items():
        # each primitive its own generator: adding one leaves the others' inputs (and digests) as
        # they were; the seed is the name's digest, not its position
        seed = int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)
        digests[name] = _digest(fn(torch.Generator().manual_seed(seed)))
    info = {
        "cpu": cpuinfo("model name"),
        "vendor": cpuinfo("vendor_id"),
        "torch": torch.__version__,
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
    }
    print(_TAG + json.dumps({"info": info, "digests": digests}), flush=True)


def fingerprint() -> dict:
    """This machine's fingerprint, ``{"info": {...}, "digests": {primitive: hex16}}``, computed in
    a fresh pinned process (a few seconds)."""
    return child_json("kit.world.fingerprint", env=pinned_environ(), tag=_TAG)[0]


def differences(mine: dict, other: dict) -> list[str]:
    """The primitives whose digests differ between two fingerprints (or that only one has)."""
    a, b = mine["digests"], other["digests"]
    return [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def committed() -> dict:
    return json.loads(COMMITTED.read_text())


def matches_committed(mine: dict | None = None) -> tuple[bool, str]:
    """Whether this machine is expected to build the committed cards bit for bit: its CPU vendor
    and every primitive's digest equal those of the machine that built them. The reason, in words,
    either way."""
    mine = mine if mine is not None else fingerprint()
    ref = committed()
    made = f"{ref['info']['cpu']} ({ref['info']['vendor']})"
    here = f"{mine['info']['cpu']} ({mine['info']['vendor']})"
    diff = differences(mine, ref)
    if diff:
        return False, (
            f"the committed cards were made on {made}; this {here} computes "
            f"{len(diff)} primitive(s) to other bits ({', '.join(diff[:5])}"
            f"{', ...' if len(diff) > 5 else ''}): its worlds and figures differ in their bits"
        )
    if mine["info"]["vendor"] != ref["info"]["vendor"]:
        return False, (
            f"the committed cards were made on {made}; this {here} computes every fingerprinted "
            "primitive to the same bits, but bit-identity of whole worlds across CPU vendors is "
            "not yet established (docs: what is identical where)"
        )
    return True, f"same CPU vendor and numerical fingerprint as {made}, which made the cards"


if __name__ == "__main__":
    _here()
