"""``python -m kit zoo build|card`` (the lead's ``kit/__main__.py`` dispatches ``zoo`` here)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from kit.core.paths import WORLDS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kit zoo", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build (or finish building) a world")
    b.add_argument("--world", choices=WORLDS, default=None, help="default: $KIT_WORLD or tiny")
    b.add_argument("--force", action="store_true", help="rebuild from scratch")
    c = sub.add_parser("card", help="print the zoo card of a built world")
    c.add_argument("--world", choices=WORLDS, default=None, help="default: $KIT_WORLD or tiny")
    c.add_argument("--json", action="store_true", help="print the card as JSON")
    args = parser.parse_args(argv)

    import kit.world as world

    if args.command == "build":
        t0 = time.time()
        path = world.build(args.world, force=args.force)
        print(f"world built in {path} ({time.time() - t0:.0f} s)")
        print(world.format_card(world.card(args.world)))
        return 0
    try:
        c = world.card(args.world)
    except world.WorldNotBuilt as e:
        print(str(e), file=sys.stderr)
        return 2
    print(json.dumps(c, indent=1) if args.json else world.format_card(c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
