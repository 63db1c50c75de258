"""``python -m kit bench [name ...] [--model M] [--device D] [--dtype T]``: speed as ratios in one
process run.

Each workload times our implementation against its baseline (the naive reference algorithm, or
the plain forward pass) on the same model and data, in this process, and prints one line:
``name: ratio=X.XX (details)``. Ratios, not seconds, so results compare across machines.

A workload is a function ``run(model: str, device: str) -> list[BenchLine]`` registered in
``WORKLOADS`` by dotted path, so importing the harness stays cheap; workloads whose ``run`` also
takes ``dtype`` accept ``--dtype`` (``bf16``: real models' weights as the paper profiles load them).

The harness (:class:`kit.core.bench.BenchLine`, :func:`kit.core.bench.median_time`) is in the core;
this module sits above every package because it names each paper's workloads.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys

from kit.core.bench import DEFAULT_MODEL
from kit.models.dtypes import DTYPES

WORKLOADS: dict[str, str] = {
    "mui": "kit.mui.bench:run",
    "patching": "kit.shortcut.bench:run",
    "cg": "kit.cg.bench:run",
    "neuronvote": "kit.neuronvote.bench:run",
    "audits": "kit.audits.bench:run",
    "pinned": "kit.world.bench:run",
}
"""Workload name -> ``module:function``."""


def _takes_dtype(target: str) -> bool:
    module, func = target.split(":")
    return "dtype" in inspect.signature(getattr(importlib.import_module(module), func)).parameters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kit bench", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "names", nargs="*", help=f"workloads (default: all): {', '.join(WORKLOADS)}"
    )
    parser.add_argument(
        "--model",
        default=None,
        help="model for the workloads that take one (default per workload; e.g. "
        f"{DEFAULT_MODEL}, random/llama-1b, zoo/base-m)",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--dtype", default=None, help="weights of the model: float32 (default), bf16, fp16"
    )
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; allowed values: {', '.join(WORKLOADS)}")
    if args.dtype is not None:
        if args.dtype not in DTYPES:
            parser.error(
                f"--dtype {args.dtype!r} is not allowed; allowed values: {', '.join(DTYPES)}"
            )
    failed = 0
    for name in args.names or list(WORKLOADS):
        module, func = WORKLOADS[name].split(":")
        try:
            run = getattr(importlib.import_module(module), func)
            kwargs = {"device": args.device}
            if args.model:
                kwargs["model"] = args.model
            if args.dtype is not None:
                if not _takes_dtype(WORKLOADS[name]):
                    raise ValueError(
                        f"--dtype is not taken by this workload; workloads that take it: "
                        f"{', '.join(n for n, t in WORKLOADS.items() if _takes_dtype(t))}"
                    )
                kwargs["dtype"] = args.dtype
            for line in run(**kwargs):
                print(line, flush=True)
        except Exception as e:  # one broken workload must not hide the others' numbers
            failed += 1
            print(f"{name}: FAILED ({type(e).__name__}: {e})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
