"""``python -m kit.core.jobs worker|selftest|overhead``: the worker process of the local engine, and
checks of an engine (or a Ray cluster) from the command line."""

from __future__ import annotations

import argparse
import sys

from kit.core.jobs.schedule import ENGINES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kit.core.jobs", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="(internal) run jobs from stdin; the local engine starts it")
    w.add_argument("--once", action="store_true", help="exit after one job")
    w.add_argument("--pinned", action="store_true", help="enter the pinned environment first")
    checks = {
        "selftest": "run a DAG of toy jobs (a worker killed mid-job), compare with inline",
        "overhead": "time trivial jobs: start-up and seconds per job of an engine",
    }
    for name, what in checks.items():
        s = sub.add_parser(name, help=what)
        s.add_argument("--engine", choices=ENGINES, default="local")
        s.add_argument("--max-workers", type=int, default=None)
        s.add_argument("--ray-address", default=None, help="auto, ray://HEAD:10001 or HEAD:6379")
        if name == "selftest":
            s.add_argument(
                "--root",
                default=None,
                help="folder for the toy files, on storage every node sees (default: "
                "under KIT_CACHE_DIR)",
            )
        else:
            s.add_argument("--n", type=int, default=100, help="number of jobs (default 100)")
    args = parser.parse_args(argv)
    if args.command == "worker":
        from kit.core.jobs.local import worker_main

        return worker_main(once=args.once, pinned=args.pinned)
    from kit.core.jobs import selftest

    options = {
        "engine": args.engine,
        "max_workers": args.max_workers,
        "ray_address": args.ray_address,
    }
    if args.command == "selftest":
        return selftest.main_selftest(root=args.root, **options)
    return selftest.main_overhead(n=args.n, **options)


if __name__ == "__main__":
    sys.exit(main())
