"""`python -m flows.cli ARGS` is the `reviewflow ARGS` command."""

from flows.cli.start import run

run()
