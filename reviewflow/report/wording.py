"""Counts in the reports' sentences: `1 finding`, `2 findings`."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, plural unless `count` is 1 (`plural` for irregular nouns)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
