"""`python -m flows.cli ARGS` is the `reviewflow ARGS` command."""

from flows.cli.entry import entry

raise SystemExit(entry())
