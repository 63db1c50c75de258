"""The pinned numerical environment really runs as pinned: each library asked for
itself."""

import os
import signal
import subprocess
import sys
import time

import pytest

from kit.core.pinned import (
    NUMPY_AVX2_LEVEL,
    NUMPY_DISABLED,
    OPENBLAS_CORE,
    PINNED_ENV,
    pinned_report,
)


@pytest.fixture(scope="module")
def report():
    return pinned_report()


def test_the_pinned_process_runs_in_the_pinned_mode(report):
    """MKL's own MKL_VERBOSE line of an SGEMM says CNR:COMPATIBLE (MKL ignores a CBWR branch it does
    not support on the CPU without a word, as AVX2 on AMD), torch runs its AVX2 kernels, oneDNN is
    off, threadpoolctl sees every OpenBLAS on the pinned core type with one thread, numpy has no
    loop above AVX2: a pin that stops working fails here, on any machine."""
    assert "MKL_VERBOSE SGEMM" in report.mkl_verbose and "CNR:COMPATIBLE" in report.mkl_verbose, (
        report.mkl_verbose
    )
    assert report.mkl_cnr == "COMPATIBLE"
    assert report.torch_capability == "AVX2"
    assert report.onednn_enabled is False and report.torch_threads == 1
    assert report.openblas and all(
        b["architecture"] == OPENBLAS_CORE and b["num_threads"] == 1 for b in report.openblas
    ), report.openblas
    assert report.numpy_above_avx2 == []
    assert report.sqrt_exact and report.gemm_openblas  # kit.core.kernels
    assert report.problems() == []


def test_an_ignored_or_missing_pin_is_reported():
    """The report reads what runs, not what was asked for: with MKL's AVX2 branch asked for (ignored
    on AMD: CNR:AUTO; honoured on Intel: CNR:AVX2) and torch's default kernels, both show up as
    problems."""
    bad = pinned_report({"MKL_CBWR": "AVX2", "ATEN_CPU_CAPABILITY": "default"})
    assert bad.mkl_cnr in ("AUTO", "AVX2") and bad.torch_capability == "DEFAULT"
    problems = " / ".join(bad.problems())
    assert (
        "not CNR:COMPATIBLE" in problems
        and "DEFAULT kernels" in problems
        and "oneDNN is enabled" in problems
        and "not exact roots" in problems
        and "not numpy's OpenBLAS" in problems
    )


def test_numpy_pins_name_only_numpys_own_targets_above_avx2():
    """numpy ignores the whole NPY_DISABLE_CPU_FEATURES when one name is not a dispatch target of
    its build (an ImportWarning, hidden by default), so the list comes from numpy itself; and it
    skips a named target the CPU lacks without a word (here: an AVX2 CPU told to drop AVX-512)."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    assert set(NUMPY_DISABLED) <= set(__cpu_dispatch__)
    assert not set(NUMPY_DISABLED) & NUMPY_AVX2_LEVEL
    assert set(__cpu_dispatch__) - set(NUMPY_DISABLED) <= NUMPY_AVX2_LEVEL
    env = {**os.environ, **PINNED_ENV}
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", "import numpy"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_compute_card_refuses_an_unpinned_process():
    from kit.world.card import compute_card

    with pytest.raises(RuntimeError, match="pinned"):
        compute_card("micro")


def test_a_pinned_child_dies_with_its_parent(tmp_path):
    """run_pinned's children ask the kernel for SIGKILL when their parent dies (PR_SET_PDEATHSIG):
    a parent killed with SIGKILL (no chance to clean up) leaves no child running."""
    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import subprocess, sys, time; from kit.core.pinned import die_with_parent\n"
                "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], "
                f"preexec_fn=die_with_parent)\nopen({str(pidfile)!r}, 'w').write(str(c.pid)); "
                "time.sleep(120)"
            ),
        ]
    )
    try:
        # a loaded machine takes a while to import numpy and start both
        deadline = time.time() + 300
        while (
            not (pidfile.is_file() and pidfile.read_text())
            and time.time() < deadline
            and parent.poll() is None
        ):
            time.sleep(0.1)
        child = int(pidfile.read_text())
        assert _alive(child)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.time() + 60
        while _alive(child) and time.time() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "the child outlived its SIGKILLed parent"
    finally:
        parent.kill()


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
