"""The warm review process's program: `python -m flows.cli.warm` (started by a review).

Everything a review imports (this CLI, the review flow, Prefect, the SDKs) is imported once
here; then `flows.local.warm.main` serves hand-overs, each child running this CLI's `main`.
"""

from flows.local.startup import startup_gc

with startup_gc():
    from flows.cli.main import main as cli_main
    from flows.local.warm.main import main

if __name__ == "__main__":
    main(None, cli_main)
