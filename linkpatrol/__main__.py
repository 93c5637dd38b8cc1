"""The ``linkpatrol`` command, as the installed script and as ``python -m linkpatrol``."""

from __future__ import annotations

from linkpatrol import _uncollected


def main() -> None:
    """Load the command without collecting garbage (see ``_uncollected``), then run it."""
    with _uncollected():
        from linkpatrol.cli import run
    run()


if __name__ == "__main__":
    main()
