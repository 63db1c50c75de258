"""``python -m kit zoo build|card|verify`` (the lead's ``kit/__main__.py`` dispatches ``zoo``
here)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from kit.core.jobs.schedule import count_arg
from kit.core.paths import WORLDS


def _seed_arg(text: str) -> int:
    from kit.world.recipes import world_seed

    try:
        return world_seed(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def main(argv: list[str] | None = None) -> int:
    from kit.world.build import DEFAULT_ENGINE, ENGINES

    parser = argparse.ArgumentParser(prog="python -m kit zoo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser(
        "build",
        help="build, finish or repair a world (rebuilds exactly the missing or damaged members)",
    )
    c = sub.add_parser("card", help="print the zoo card of a built world")
    v = sub.add_parser(
        "verify", help="compare a world's card with the committed one (kit/world/cards/)"
    )
    f = sub.add_parser(
        "fingerprint",
        help="print this machine's numerical fingerprint (one digest per primitive, pinned) as "
        "JSON; compare it with another machine's",
    )
    f.add_argument(
        "--compare",
        metavar="FILE",
        default=None,
        help="another machine's fingerprint JSON (default: the committed one, "
        "kit/world/cards/fingerprint.json); exit 1 naming the primitives that differ",
    )
    f.add_argument("--no-compare", action="store_true", help="only print this machine's")
    for p in (b, c, v):
        p.add_argument("--world", choices=WORLDS, default=None, help="default: $KIT_WORLD or tiny")
    for p in (b, c):
        p.add_argument(
            "--seed",
            type=_seed_arg,
            default=None,
            help="world seed (default $KIT_WORLD_SEED or 0, the canonical world; others are not "
            "committed)",
        )
    for p in (b, v):
        p.add_argument(
            "--engine",
            choices=ENGINES,
            default=DEFAULT_ENGINE,
            help=f"how the members' jobs run (default {DEFAULT_ENGINE}: concurrently, one pinned "
            "process per core; inline: one after another); every engine gives the same bits",
        )
        p.add_argument(
            "--max-workers",
            type=count_arg("--max-workers"),
            default=None,
            help="concurrent jobs (default: the cores)",
        )
    b.add_argument("--force", action="store_true", help="rebuild from scratch")
    c.add_argument("--json", action="store_true", help="print the card as JSON")
    v.add_argument(
        "--fresh",
        action="store_true",
        help="rebuild the world from scratch in a temporary cache first (micro a few min, tiny "
        "~20)",
    )
    args = parser.parse_args(argv)
    if args.command == "fingerprint":
        return _fingerprint(args)
    if getattr(args, "seed", None) is not None:
        from kit.world.recipes import SEED_ENV

        # every call below, and every child, uses this world seed
        os.environ[SEED_ENV] = str(args.seed)

    import kit.world as world
    from kit.core.paths import current_world
    from kit.world.storage import NoSpaceLeft

    try:  # a bad --world or $KIT_WORLD is named before anything runs, without a traceback
        current_world(getattr(args, "world", None))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if args.command == "build":
            return _build(world, args)
        if args.command == "verify":
            return _verify_command(world, args)
        return _card(world, args)
    except NoSpaceLeft as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _build(world, args) -> int:
    t0 = time.time()
    path = world.build(
        args.world, force=args.force, engine=args.engine, max_workers=args.max_workers
    )
    print(f"world built in {path} ({time.time() - t0:.0f} s)")
    c = world.card(args.world)
    print(world.format_card(c))
    failed = [ch["name"] for ch in c["checks"] if not ch["passed"]]
    if failed:  # the build itself succeeded: explain, but do not fail `make run`
        print(explain_failed_checks(c["world"], failed, len(c["checks"])))
    if c.get("seed"):
        print(
            f"world seed {c['seed']}: not a committed world, so there is no card to compare it with"
        )
        return 0
    try:
        print(_platform_line(c, args.world))  # a note here; `zoo verify` fails on a difference
    except FileNotFoundError as e:  # a new world spec has no committed card yet
        print(e, file=sys.stderr)
    return 0


def _platform_line(card: dict, world: str | None) -> str:
    """One line: does the card built here equal the committed one, and if not, is that expected on
    this machine (another numerical platform, kit.world.fingerprint) or a finding."""
    from kit.world.card import card_diff, committed_card
    from kit.world.fingerprint import matches_committed

    name = f"kit/world/cards/{card['world']}.json"
    diffs = card_diff(card, committed_card(world), "card")
    if not diffs:
        return f"zoo card of world {card['world']} equals the committed {name}"
    same, why = matches_committed()
    passed = sum(ch["passed"] for ch in card["checks"])
    if same:
        return (
            f"WARNING: zoo card of world {card['world']} differs from the committed {name} in "
            f"{len(diffs)} places on the platform that made it ({why}): the world's code changed "
            "or this is a bug; `python -m kit zoo verify` lists the differences"
        )
    return (
        f"zoo card of world {card['world']} differs from the committed {name} in {len(diffs)} "
        f"places, as expected here: {why}; so will the figures a run writes (git status shows "
        f"them); {passed} of {len(card['checks'])} card checks pass here"
    )


def _intact_or_explain(world, name: str | None) -> bool:
    """True when every member, SAE and the card are intact; else print what is not, and the fix."""
    from kit.world.build import world_status
    from kit.world.recipes import world_spec
    from kit.world.storage import build_command

    status = world_status(name)
    damaged = status.damaged()
    if not damaged:
        if status.card.startswith("stale"):
            print(
                f"warning: the card is {status.card}; `{build_command(world_spec(name))}` "
                "recomputes it",
                file=sys.stderr,
            )
        return True
    print(
        f"{len(damaged)} member(s) or SAE(s) of the world are damaged, so the card does not "
        "describe them:",
        file=sys.stderr,
    )
    print("\n".join(f"  {n}: {why}" for n, why in damaged.items()), file=sys.stderr)
    print(
        f"run `{build_command(world_spec(name))}`: it rebuilds exactly these (the same bits)",
        file=sys.stderr,
    )
    return False


def _card(world, args) -> int:
    try:
        c = world.card(args.world)
    except world.WorldNotBuilt as e:
        print(str(e), file=sys.stderr)
        return 2
    if not _intact_or_explain(world, args.world):
        return 2
    print(json.dumps(c, indent=1) if args.json else world.format_card(c))
    failed = [ch["name"] for ch in c["checks"] if not ch["passed"]]
    if failed:
        print(explain_failed_checks(c["world"], failed, len(c["checks"])), file=sys.stderr)
        return 1
    return 0


def _verify_command(world, args) -> int:
    from kit.world.recipes import SEED_ENV

    if os.environ.get(SEED_ENV, "0") != "0":
        print(
            f"${SEED_ENV}={os.environ[SEED_ENV]}: only the canonical world (seed 0) has a "
            "committed card",
            file=sys.stderr,
        )
        return 2
    from kit.core.pinned import pinned_report

    report = pinned_report()
    print(f"pinned environment: {report.summary()}")
    for problem in report.problems():
        print(f"WARNING: {problem}", file=sys.stderr)
    if not args.fresh:
        try:
            c = world.card(args.world)
        except world.WorldNotBuilt as e:
            print(f"{e} (or pass --fresh)", file=sys.stderr)
            return 2
        if not _intact_or_explain(world, args.world):
            return 2
        return _verify(c, args.world)
    old = os.environ.get("KIT_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="kit-verify-") as tmp:
        os.environ["KIT_CACHE_DIR"] = tmp  # the build's pinned children inherit it
        try:
            t0 = time.time()
            world.build(args.world, engine=args.engine, max_workers=args.max_workers)
            print(
                f"world {world.card(args.world)['world']} rebuilt from scratch in "
                f"{time.time() - t0:.0f} s"
            )
            c = world.card(args.world)
        finally:
            if old is None:
                del os.environ["KIT_CACHE_DIR"]
            else:
                os.environ["KIT_CACHE_DIR"] = old
    return _verify(c, args.world)


def _fingerprint(args) -> int:
    from kit.world.fingerprint import COMMITTED, differences, fingerprint

    mine = fingerprint()
    print(json.dumps(mine, indent=1, sort_keys=True))
    if args.no_compare:
        return 0
    path = args.compare or COMMITTED
    try:
        other = json.loads(open(path).read())
    except (OSError, ValueError) as e:
        print(f"error: --compare {path}: {e}", file=sys.stderr)
        return 2
    diff = differences(mine, other)
    where = f"{path} ({other.get('info', {}).get('cpu', '?')})"
    if diff:
        print(f"{len(diff)} primitive(s) differ from {where}: {', '.join(diff)}", file=sys.stderr)
        return 1
    print(f"all {len(mine['digests'])} primitives equal {where}", file=sys.stderr)
    return 0


def explain_failed_checks(world_name: str, failed: list[str], n_checks: int) -> str:
    """What a [FAIL] on the card means, and what (not) to do about it."""
    why = (
        "expected in the micro world, which is sized for the test suite's speed, not to show "
        "every effect"
        if world_name == "micro"
        else "the build is deterministic, so rebuilding gives the same result; the effect is "
        "weaker than the world's design asks"
    )
    return (
        f"{len(failed)} of {n_checks} zoo card checks failed ({', '.join(failed)}): the world is "
        "built and every member verifies and loads, but it does not show these properties "
        f"({why}); notebook results "
        "that measure them are weak or absent in this world."
    )


def _verify(card: dict, world: str | None) -> int:
    """0 if ``card`` equals the committed card exactly, else print the differences and return 1."""
    from kit.world.card import card_diff, committed_card

    diffs = card_diff(card, committed_card(world), "card")
    if not diffs:
        print(
            f"zoo card of world {card['world']} equals the committed "
            f"kit/world/cards/{card['world']}.json"
        )
        return 0
    print(
        f"zoo card of world {card['world']} differs from the committed "
        f"kit/world/cards/{card['world']}.json in {len(diffs)} places (built here / committed):",
        file=sys.stderr,
    )
    print(
        "\n".join(f"  {d}" for d in diffs[:30]) + ("\n  ..." if len(diffs) > 30 else ""),
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
