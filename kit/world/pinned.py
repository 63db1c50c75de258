"""The pinned numerical environment in which worlds and SAEs are trained: the same bits on any x86-64 CPU.

Float results on a CPU depend on which kernels run, and torch, MKL and oneDNN each pick kernels by
the CPU's instruction set (SSE4, AVX2, AVX-512, AMX): a different CPU sums in a different order and
rounds differently, and over a few thousand training steps the difference grows into different
models (issue 15: a contamination gap of +25 points on one machine, +35 on another). Measured on
micro base-m (120 steps, fp32, one thread), emulating other CPUs in-process, every one of these
changed the weights' bits: ``ATEN_CPU_CAPABILITY`` default/avx2/avx512, MKL with and without
``MKL_CBWR``, ``ONEDNN_MAX_CPU_ISA`` SSE41/AVX2/AVX512_CORE (oneDNN computes GELU), 1 vs 2 threads,
and bf16 autocast (oneDNN/MKL bf16 paths differ with and without AMX or AVX512-BF16). With
everything below pinned, the weights were bit-identical under every emulated ISA (README, "The tiny
world"). So training runs:

- in fp32, no autocast, on one thread, with deterministic algorithms (``zoo.deterministic``);
- with torch's AVX2 kernels on every CPU (``ATEN_CPU_CAPABILITY=avx2``: no AVX-512 or AMX paths);
- with MKL's conditional numerical reproducibility on its AVX2 code path (``MKL_CBWR=AVX2`` and
  ``MKL_ENABLE_INSTRUCTIONS=AVX2``: CBWR alone did not survive ``MKL_ENABLE_INSTRUCTIONS=AVX512``);
- without oneDNN (``torch.backends.mkldnn.enabled = False``), whose kernels follow the CPU's ISA.

Why AVX2 and not the fully portable ``ATEN_CPU_CAPABILITY=default`` + ``MKL_CBWR=COMPATIBLE`` (which
also held under ``MKL_ENABLE_INSTRUCTIONS=SSE4_2``): measured on a tiny-world base-l training step,
unpinned 4.7 it/s, AVX2 pins 3.1 it/s, portable pins 1.4 it/s (MKL's COMPATIBLE path alone: 1.0). The
AVX2 pins gave the same bits under every ``ONEDNN_MAX_CPU_ISA``, thread count and
``MKL_DEBUG_CPU_TYPE`` tried; a CPU without AVX2 (before ~2013-2015) falls back to other kernels and
gets a different world, and :func:`enter_pinned` warns there.

Each variable must be set before torch (and MKL) initialise, hence a subprocess:
:func:`run_pinned` runs ``python -m <module> <args>`` with :data:`PINNED_ENV` added.
"""

from __future__ import annotations

import os
import subprocess
import sys

PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "AVX2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def is_pinned() -> bool:
    """True when this process was started with :data:`PINNED_ENV`."""
    import torch

    return all(os.environ.get(k) == v for k, v in PINNED_ENV.items())


def enter_pinned() -> None:
    """In a pinned process: switch off oneDNN (its kernels follow the CPU's ISA) and use one thread."""
    import torch

    if not is_pinned():
        raise RuntimeError("enter_pinned() needs a process started with kit.world.pinned.PINNED_ENV; "
                           "use run_pinned()")
    torch.backends.mkldnn.enabled = False
    torch.set_num_threads(1)
    if torch.backends.cpu.get_cpu_capability() != "AVX2":
        import warnings

        warnings.warn(f"this CPU runs torch's {torch.backends.cpu.get_cpu_capability()} kernels, not AVX2: worlds and "
                      "numbers computed here will differ from the committed cards and figures", stacklevel=2)


def run_pinned(module: str, *args: str, env: dict[str, str] | None = None) -> None:
    """Run ``python -m module *args`` in a fresh process with :data:`PINNED_ENV` (and ``env``);
    raise if it fails."""
    cmd = [sys.executable, "-m", module, *args]
    done = subprocess.run(cmd, env={**os.environ, **(env or {}), **PINNED_ENV})
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {done.returncode} (its output is above)")
