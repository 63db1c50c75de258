"""``python -m kit <command>``: run (notebooks), bench (speed ratios), zoo (the tiny world),
docs (the generated pages), notebooks (their shipped outputs), twins, jupyter (the kernel, trust),
models (the forms of model names)."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "run": (
        "kit.core.runner",
        "execute the notebooks with papermill into runs/<profile>/<timestamp>/",
    ),
    "bench": ("kit.bench", "time workloads against their baselines, as ratios"),
    "zoo": ("kit.world.cli", "build or describe the embedded tiny world (zoo build | zoo card)"),
    "docs": (
        "kit.core.docs",
        "docs/results.md and docs/timings.md from run records (docs record RUN_DIR | docs build)",
    ),
    "notebooks": (
        "kit.core.notebook_outputs",
        "the outputs the committed notebooks ship (notebooks adopt RUN_DIR | check | sync)",
    ),
    "twins": (
        "kit.models.twins",
        "write tiny random twins of real architectures as HF directories (twins build | list)",
    ),
    "jupyter": (
        "kit.core.jupyter",
        "the project's Jupyter kernel and notebook trust (jupyter kernel --sys-prefix --user | "
        "jupyter trust PATHS)",
    ),
    "models": (
        "kit.models.sources",
        "the forms a model name can take, an example each (--markdown; --list KEY)",
    ),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        lines = [f"  {name:9s} {doc}" for name, (_, doc) in COMMANDS.items()]
        print("usage: python -m kit {" + ",".join(COMMANDS) + "} ...\n" + "\n".join(lines))
        if argv and argv[0] not in ("-h", "--help"):
            print(f"\nunknown command {argv[0]!r}; allowed: {', '.join(COMMANDS)}", file=sys.stderr)
            return 2
        return 0
    try:
        module = importlib.import_module(COMMANDS[argv[0]][0])
        return int(module.main(argv[1:]) or 0)
    except KeyboardInterrupt:  # before a command has its own handler (importing, checking)
        print("\ninterrupted (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
