"""The ``linkpatrol`` command, as the installed script and as ``python -m linkpatrol``."""

from __future__ import annotations

import gc


def main() -> None:
    """Load the command without collecting garbage, then run it.

    Loading makes tens of thousands of objects (modules, classes, functions, compiled
    patterns) that live as long as the command: the collections their number sets off,
    some thirty before the command reads its arguments, free nothing.
    """
    gc.disable()
    try:
        from linkpatrol.cli import run
    finally:
        gc.enable()
    run()


if __name__ == "__main__":
    main()
