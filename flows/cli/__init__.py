"""The `reviewflow` command line: entry point, commands, argument parser, one-line failures.

`entry` hands a review to the warm process before importing anything heavy; `main` runs one
command in this process. Only a real review imports Prefect (preview, config and rules commands
stay instant).
"""
