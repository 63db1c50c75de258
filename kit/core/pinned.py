"""The pinned numerical environment in which worlds, SAEs and cards are computed, made to give the
same bits on any x86-64 CPU with AVX2: established across AMD EPYCs, expected across vendors from
the numerical fingerprint (:mod:`kit.world.fingerprint`, which says what is identical where).

Float results on a CPU depend on which kernels run, and torch, MKL, oneDNN, OpenBLAS and numpy each
pick kernels by the CPU's instruction set (SSE4, AVX2, AVX-512, AMX), some by its vendor and model:
a different kernel sums in a different order or rounds differently, and over a few thousand training
steps the difference grows into different models (unpinned, a contamination gap of +25 points on one
machine, +35 on another; an AMD EPYC built a tiny world that differed from the Intel one in 812 card
entries; an Intel Xeon, 835 with the pins below but MKL's square root). So every pinned process
runs:

- in fp32, no autocast, on one thread, with deterministic algorithms
  (``kit.world.members.deterministic``);
- with torch's own (ATen) AVX2 kernels on every CPU (``ATEN_CPU_CAPABILITY=avx2``: no AVX-512 or AMX
  paths). These are the same machine code on both vendors. Their vector math (Sleef, and ATen's own
  ``exp``/``erf``/``log`` polynomials) is built from add, mul, FMA, div and sqrt, which IEEE 754
  rounds exactly the same on every CPU. The approximate ``rcp``/``rsqrt`` instructions, whose last
  bits differ between Intel and AMD, appear nowhere in torch 2.13's libtorch_cpu outside MKL (a scan
  of its machine code: 280 functions, all MKL's vector math, sparse BLAS or small Cholesky kernels);
- with MKL (what still calls it: ATen's fused kernels such as CPU flash attention, matrix-vector
  products, the vector math of exp, log, tanh, erf) in conditional numerical reproducibility mode
  ``COMPATIBLE``
  (``MKL_CBWR=COMPATIBLE``). MKL honours a CBWR branch only where it supports it on the running CPU:
  on AMD it ignores ``MKL_CBWR=AVX2`` (``MKL_VERBOSE`` says ``CNR:AUTO``: its own kernel choice) and
  honours only ``COMPATIBLE``, the mode Intel documents as giving the same results on Intel and
  non-Intel processors (SSE2 code without approximate instructions), at about a quarter of the
  machine's GEMM rate;
- with matrix products through numpy's OpenBLAS (pinned below) and exact square roots, in place of
  torch's MKL kernels (:mod:`kit.core.kernels`: MKL's reproducible GEMM runs at a quarter of the
  machine's rate, and its vector square root rounded differently on an Intel Xeon and an AMD EPYC,
  the one primitive of ``kit zoo fingerprint`` that differed between the two);
- without oneDNN (``torch.backends.mkldnn.enabled = False``), whose JIT kernels follow the CPU's ISA
  and cache sizes; ``ONEDNN_MAX_CPU_ISA=AVX2`` in case anything calls it regardless;
- with numpy/scipy's bundled OpenBLAS on one kernel set and one thread
  (``OPENBLAS_CORETYPE=Haswell``, ``OPENBLAS_NUM_THREADS=1``): OpenBLAS built with DYNAMIC_ARCH
  picks kernels per CPU model (SkylakeX, Cooperlake, SapphireRapids on AVX-512 Intel; Zen on AMD),
  Haswell's are AVX2 + FMA;
- with numpy's own SIMD loops at the AVX2 level: ``NPY_DISABLE_CPU_FEATURES`` lists every dispatch
  target of the installed numpy above AVX2 (``X86_V4``, ``AVX512_ICL``, ``AVX512_SPR`` in numpy 2.4;
  the AVX-512 loops use other algorithms, SVML among them). numpy skips a named target the machine
  lacks without a word, so one list serves every CPU; it is computed from numpy's own dispatch list
  because numpy ignores the whole variable when one name is not a target of its build.

Python's ``math`` and glibc's libm pick their FMA variants on every AVX2 CPU (glibc's ifuncs test
FMA + AVX2, not the vendor), and Python's ``random`` and torch's CPU generator are integer
algorithms.

Each variable must be set before torch, MKL, OpenBLAS and numpy initialise, hence a subprocess:
:func:`run_pinned` runs ``python -m <module> <args>`` with :data:`PINNED_ENV` added. A pin that a
library ignores is silent, so :func:`pinned_report` asks a fresh pinned process what actually runs
(MKL's own ``MKL_VERBOSE`` line of an SGEMM, torch's CPU capability, oneDNN, threadpoolctl's view of
OpenBLAS, numpy's active features); the test suite and ``kit zoo verify`` check it, and ``kit zoo
build`` prints it. A CPU without AVX2 (before ~2013-2015) cannot run the AVX2 kernels and gets a
different world; :func:`enter_pinned` warns there.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

from numpy._core._multiarray_umath import __cpu_dispatch__ as _NUMPY_DISPATCH

from kit.core import kernels

NUMPY_AVX2_LEVEL = frozenset(
    {
        "SSE",
        "SSE2",
        "SSE3",
        "SSSE3",
        "SSE41",
        "POPCNT",
        "SSE42",
        "X86_V2",
        "AVX",
        "F16C",
        "FMA3",
        "AVX2",
        "X86_V3",
    }
)
"""numpy CPU features (old and new names) that every AVX2 CPU of both vendors has."""
NUMPY_DISABLED = tuple(f for f in _NUMPY_DISPATCH if f not in NUMPY_AVX2_LEVEL)
"""The installed numpy's dispatch targets above AVX2 (or vendor-specific, such as AMD's
FMA4/XOP)."""
OPENBLAS_CORE = "Haswell"

PINNED_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OPENBLAS_CORETYPE": OPENBLAS_CORE,
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    **({"NPY_DISABLE_CPU_FEATURES": " ".join(NUMPY_DISABLED)} if NUMPY_DISABLED else {}),
}
"""Set in every pinned process (see the module docstring for why each one)."""

_PR_SET_PDEATHSIG = 1


def is_pinned() -> bool:
    """True when this process was started with :data:`PINNED_ENV`."""
    return all(os.environ.get(k) == v for k, v in PINNED_ENV.items())


def enter_pinned() -> None:
    """In a pinned process: switch off oneDNN (its kernels follow the CPU's ISA) and use one
    thread."""
    import torch  # lazy: this module is imported by processes that never load torch (the runner)

    if not is_pinned():
        raise RuntimeError(
            "enter_pinned() needs a process started with kit.core.pinned.PINNED_ENV; "
            "use run_pinned()"
        )
    torch.backends.mkldnn.enabled = False
    torch.set_num_threads(1)
    kernels.install()
    if torch.backends.cpu.get_cpu_capability() != "AVX2":
        warnings.warn(
            f"this CPU runs torch's {torch.backends.cpu.get_cpu_capability()} kernels, not AVX2: "
            "worlds and numbers computed here will differ from the committed cards and figures",
            stacklevel=2,
        )


def die_with_parent() -> None:
    """(Linux) Ask the kernel to SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``),
    so a killed ``kit zoo build`` leaves no training child behind; a ``preexec_fn`` of
    :func:`run_pinned`."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: nothing to ask
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def pinned_command(module: str, *args: str) -> list[str]:
    return [sys.executable, "-m", module, *args]


def pinned_environ(env: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with ``env`` and :data:`PINNED_ENV` added (the pins win)."""
    return {**os.environ, **(env or {}), **PINNED_ENV}


def run_pinned(module: str, *args: str, env: dict[str, str] | None = None) -> None:
    """Run ``python -m module *args`` in a fresh process with :data:`PINNED_ENV` (and ``env``) that
    dies with this one; raise if it fails. A child that exits with :data:`EXIT_NO_SPACE` printed
    why."""
    cmd = pinned_command(module, *args)
    proc = subprocess.Popen(cmd, env=pinned_environ(env), preexec_fn=die_with_parent)
    try:
        code = proc.wait()
    # Ctrl-C reaches the child too (same process group); do not leave it behind
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if code == EXIT_NO_SPACE:
        raise OSError(28, f"{' '.join(cmd)} ran out of disk space (its message is above)")
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed with exit code {code} (its output is above)")


EXIT_NO_SPACE = 28
"""Exit status of a pinned child that stopped because a disk was full (errno ENOSPC is 28)."""


# ------------------------------------------------------------------ what really runs


@dataclass(frozen=True)
class PinnedReport:
    """What a pinned process actually runs, as the libraries themselves report it."""

    mkl_cnr: str
    """MKL's CNR mode from its ``MKL_VERBOSE`` line of an SGEMM (``COMPATIBLE``, ``AUTO``, ...)."""
    mkl_verbose: str
    """That ``MKL_VERBOSE`` line (and MKL's version line)."""
    torch_capability: str
    """``torch.backends.cpu.get_cpu_capability()`` (``AVX2``, ``AVX512``, ``DEFAULT``)."""
    onednn_enabled: bool
    torch_threads: int
    openblas: list[dict] = field(default_factory=list)
    """Per OpenBLAS library threadpoolctl finds: ``{"library", "architecture", "num_threads"}``."""
    numpy_above_avx2: list[str] = field(default_factory=list)
    """numpy dispatch targets above the AVX2 level that are active (should be none)."""
    cpu: str = ""
    sqrt_exact: bool = False
    """Whether ``torch.sqrt`` returns correctly rounded roots (:mod:`kit.core.kernels`)."""
    gemm_openblas: bool = False
    """Whether ``torch.mm`` runs in numpy's OpenBLAS (:mod:`kit.core.kernels`)."""

    def problems(self) -> list[str]:
        """Every way this process differs from the pinned environment (empty: it is pinned)."""
        out = []
        if self.mkl_cnr != "COMPATIBLE":
            out.append(f"MKL runs CNR:{self.mkl_cnr}, not CNR:COMPATIBLE (MKL_CBWR ignored?)")
        if self.torch_capability != "AVX2":
            out.append(f"torch runs its {self.torch_capability} kernels, not AVX2")
        if self.onednn_enabled:
            out.append("oneDNN is enabled")
        if self.torch_threads != 1:
            out.append(f"torch uses {self.torch_threads} threads, not 1")
        if not self.openblas:
            out.append("threadpoolctl finds no OpenBLAS (numpy's)")
        for lib in self.openblas:
            if lib["architecture"] != OPENBLAS_CORE or lib["num_threads"] != 1:
                out.append(
                    f"OpenBLAS {lib['library']} runs {lib['architecture']} kernels on "
                    f"{lib['num_threads']} thread(s), not {OPENBLAS_CORE} on 1"
                )
        if self.numpy_above_avx2:
            out.append(f"numpy dispatches {', '.join(self.numpy_above_avx2)} loops")
        if not self.sqrt_exact:
            out.append("torch.sqrt runs MKL's vector sqrt, not exact roots (kit.core.kernels)")
        if not self.gemm_openblas:
            out.append("torch.mm runs MKL, not numpy's OpenBLAS (kit.core.kernels)")
        return out

    def summary(self) -> str:
        blas = ", ".join(
            sorted({f"{b['architecture']} x{b['num_threads']}" for b in self.openblas})
        )
        return (
            f"MKL CNR:{self.mkl_cnr}, ATen {self.torch_capability}, oneDNN "
            f"{'on' if self.onednn_enabled else 'off'}, {self.torch_threads} thread, OpenBLAS "
            f"{blas}, numpy {'+'.join(self.numpy_above_avx2) or 'AVX2 level'}, GEMM "
            f"{'OpenBLAS' if self.gemm_openblas else 'MKL'}, sqrt "
            f"{'exact' if self.sqrt_exact else 'MKL'} ({self.cpu})"
        )


_REPORT_TAG = "kit-pinned-report "


def cpuinfo(field: str) -> str:
    """A field of ``/proc/cpuinfo``'s first processor (``model name``; ``vendor_id``:
    ``GenuineIntel``, ``AuthenticAMD``), or ``""`` where there is none (not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith(field)), "")
    except OSError:
        return ""


def _report_here() -> None:
    """In a pinned child started with ``MKL_VERBOSE=1``: one SGEMM (MKL prints its line to stdout),
    then this process's facts as one JSON line."""
    import scipy.linalg  # noqa: F401  (lazy: only this child needs them) scipy bundles its own OpenBLAS
    import threadpoolctl
    import torch
    from numpy._core._multiarray_umath import __cpu_features__

    a = torch.ones(64, 64)
    # an SGEMM before enter_pinned sends products to OpenBLAS: MKL prints "MKL_VERBOSE SGEMM(...)
    # ... CNR:<mode> ..." (its mode still matters to the fused kernels that call MKL themselves)
    (a @ a).sum()
    sys.stdout.flush()
    if is_pinned():
        enter_pinned()
    blas = [
        {
            "library": os.path.basename(i["filepath"]),
            "architecture": i.get("architecture"),
            "num_threads": i["num_threads"],
        }
        for i in threadpoolctl.threadpool_info()
        if i["internal_api"] == "openblas"
    ]
    facts = {
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "onednn_enabled": bool(torch.backends.mkldnn.enabled),
        "torch_threads": torch.get_num_threads(),
        "openblas": blas,
        "cpu": cpuinfo("model name"),
        "sqrt_exact": kernels.sqrt_is_exact(),
        "gemm_openblas": kernels.gemm_is_openblas(),
        "numpy_above_avx2": [
            f for f in _NUMPY_DISPATCH if f not in NUMPY_AVX2_LEVEL and __cpu_features__.get(f)
        ],
    }
    print(_REPORT_TAG + json.dumps(facts), flush=True)


def child_json(module: str, *args: str, env: dict[str, str], tag: str) -> tuple[dict, list[str]]:
    """Run ``python -m module *args`` with exactly ``env`` in a fresh process that dies with this
    one; return the JSON it printed after ``tag`` on a line of its own, and all its stdout lines.
    Raises RuntimeError with the child's output if it fails or prints no such line."""
    cmd = pinned_command(module, *args)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, preexec_fn=die_with_parent)
    lines = out.stdout.splitlines()
    tagged = [line[len(tag) :] for line in lines if line.startswith(tag)]
    if out.returncode != 0 or not tagged:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
        )
    return json.loads(tagged[0]), lines


def pinned_report(env: dict[str, str] | None = None) -> PinnedReport:
    """Start a fresh pinned process and report what it runs. ``env`` is applied after the pins (a
    test passes a broken pin, e.g. ``{"MKL_CBWR": "AVX2"}``, to see it reported). Raises
    RuntimeError with the child's output if it fails."""
    facts, lines = child_json(
        "kit.core.pinned",
        "--report",
        env={**pinned_environ(), **(env or {}), "MKL_VERBOSE": "1"},
        tag=_REPORT_TAG,
    )
    sgemm = [line for line in lines if line.startswith("MKL_VERBOSE SGEMM")]
    cnr = re.search(r"\bCNR:(\S+)", sgemm[0]) if sgemm else None
    version = [line for line in lines if line.startswith("MKL_VERBOSE") and "SGEMM" not in line][:1]
    return PinnedReport(
        mkl_cnr=cnr.group(1) if cnr else "(no MKL_VERBOSE SGEMM line: torch without MKL?)",
        mkl_verbose="\n".join(version + sgemm[:1]),
        **facts,
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--report"]:
        raise SystemExit("usage: python -m kit.core.pinned --report (started by pinned_report())")
    _report_here()
