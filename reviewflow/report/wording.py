"""The reports' words: counts in sentences (`1 finding`, `2 findings`), what was reviewed."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, plural unless `count` is 1 (`plural` for irregular nouns)."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def change_words(mode: str, source: str = "") -> str:
    """What was reviewed, before the repository: `range change in`, or `audit of` (an audit
    has no change: its files as they are)."""
    if mode == "audit":
        return "audit of"
    return f"{mode}{source} change in"
