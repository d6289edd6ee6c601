"""The local runtime: the managed Prefect server, the records of the reviews running on it,
`reviewflow server` commands, and the warm review process (`warm/`). See docs/architecture.md."""
