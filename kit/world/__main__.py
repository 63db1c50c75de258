"""``python -m kit.world``: the pinned child process of ``kit.world.build`` (see
``kit.world.build.main``)."""

from kit.world.build import main

if __name__ == "__main__":
    raise SystemExit(main())
