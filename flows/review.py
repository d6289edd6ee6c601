"""`python -m flows.review ARGS`: the same as `reviewflow review ARGS`. A program, not a module
to import: it hands over to the CLI at once, before anything pays for the Prefect import (the
review flow itself is `flows.review_flow`)."""

from __future__ import annotations

import sys

from flows.cli.start import run


def main() -> None:
    run(["review", *sys.argv[1:]])


if __name__ == "__main__":
    main()
