"""Code answers (kit.data.code_answers): the program in a response, an item's test program, and
its isolated run."""

from __future__ import annotations

from kit.data.code_answers import code_program, extract_code, run_program
from kit.data.items import Item
from kit.data.scorers import score

# --- code execution -----------------------------------------------------------------------------

HE_ITEM = Item(
    id="humaneval/test/HumanEval/0",
    prompt='def add(a, b):\n    """Add two numbers."""\n',
    answer="    return a + b\n",
    metadata={
        "entry_point": "add",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert "
        "candidate(-1, 1) == 0\n",
    },
)


def test_extract_code_fence():
    assert extract_code("Here:\n```python\nx = 1\n```\ntrailing") == "x = 1\n"
    assert extract_code("x = 2") == "x = 2"


def test_code_program_humaneval_full_function():
    prog = code_program("humaneval", HE_ITEM, "```python\ndef add(a, b):\n    return a + b\n```")
    assert "check(add)" in prog and prog.count("def add") == 2
    compile(prog, "<prog>", "exec")  # the docstring-only prompt plus a redefinition is valid Python


def test_run_program_isolation():
    assert run_program("print('ok')")
    assert not run_program("raise SystemExit(1)")
    assert not run_program("while True: pass", timeout=1.0), (
        "an infinite loop must be killed by the timeout"
    )
    assert not run_program("x = bytearray(512 << 20)", timeout=5.0, memory_mb=256), (
        "the address-space limit must stop a 512 MiB allocation under memory_mb=256"
    )
    assert run_program("x = bytearray(16 << 20)", timeout=5.0, memory_mb=256), (
        "a small allocation must still work"
    )


def test_score_code_simple():
    assert score("humaneval", HE_ITEM, "    return a + b\n")
    assert not score("humaneval", HE_ITEM, "    return a - b\n")
    assert score("humaneval", HE_ITEM, "def add(a, b):\n    return b + a\n")
    mbpp = Item(
        id="mbpp/test/1",
        prompt="Write add.",
        answer="def add(a, b):\r\n  return a + b",
        metadata={"test_list": ["assert add(1, 2) == 3"], "test_setup_code": ""},
    )
    assert score("mbpp", mbpp, "def add(a, b):\n    return a + b")
    assert not score("mbpp", mbpp, "def add(a, b):\n    return 0")
    assert not score("mbpp", mbpp, "this is not python"), (
        "a syntax error must fail, not crash the scorer"
    )
