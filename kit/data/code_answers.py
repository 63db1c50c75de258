"""Code benchmarks' answers (humaneval, mbpp): the program in a response (:func:`extract_code`), the
complete test program of an item (:func:`code_program`) and whether it passes
(:func:`run_program`).

The response and the benchmark's tests run in a separate Python subprocess with a wall-clock
timeout and resource limits, never in this process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from kit.data.items import Item

__all__ = ["extract_code", "code_program", "run_program"]

CODE_BENCHMARKS = ("humaneval", "mbpp")


def extract_code(response: str) -> str:
    """The program in a response: the first fenced code block (```python ... ```) if any,
    else the response unchanged."""
    m = re.search(r"```(?:python|py|Python)?[ \t]*\n(.*?)```", response or "", flags=re.DOTALL)
    return m.group(1) if m else (response or "")


def code_program(benchmark: str, item: Item, response: str) -> str:
    """The complete test program for a code item: solution followed by the item's tests.

    humaneval: ``prompt + completion`` (the HumanEval convention: the response continues the
    function body); if the response defines ``def <entry_point>(`` itself, it is appended after
    the prompt instead (a docstring-only function is valid Python and is then redefined).
    Then the item's ``test`` and ``check(<entry_point>)``.
    mbpp: the response code, ``test_setup_code``, then every assert in ``test_list``.
    """
    code = extract_code(response)
    meta = item.metadata
    if benchmark == "humaneval":
        entry = meta["entry_point"]
        if re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", code, flags=re.MULTILINE):
            solution = item.prompt + "\n    pass\n\n" + code
        else:
            solution = item.prompt + code
        return f"{solution}\n\n{meta['test']}\n\ncheck({entry})\n"
    if benchmark == "mbpp":
        tests = "\n".join(meta["test_list"])
        return f"{code}\n\n{meta.get('test_setup_code', '')}\n{tests}\n"
    raise ValueError(
        f"benchmark={benchmark!r} is not a code benchmark; allowed values: "
        f"{', '.join(CODE_BENCHMARKS)}"
    )


def _limit_resources(memory_bytes: int, cpu_seconds: int) -> None:
    import resource

    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (10 << 20, 10 << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_program(program: str, timeout: float = 10.0, memory_mb: int = 1024) -> bool:
    """Run ``program`` in a fresh ``python -I`` subprocess in a temporary directory.

    True iff it exits 0 within ``timeout`` seconds (wall clock). The child gets its own session
    (killed as a group on timeout), an address-space limit of ``memory_mb``, a CPU-time limit,
    a 10 MiB file-size limit and an empty environment apart from ``PATH``. This isolates
    accidents (infinite loops, memory blow-ups, stray files), not a determined attacker.
    """
    with tempfile.TemporaryDirectory(prefix="kit-code-") as tmp:
        path = Path(tmp) / "program.py"
        path.write_text(program)
        proc = subprocess.Popen(
            [sys.executable, "-I", str(path)],
            cwd=tmp,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONHASHSEED": "0"},
            preexec_fn=lambda: _limit_resources(memory_mb << 20, int(timeout) + 1),
        )
        try:
            return proc.wait(timeout=timeout) == 0
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            return False
