"""Report language tags: a well-formed BCP 47 (RFC 5646) tag whose language, script, region and
variant subtags are registered, checked by `langcodes` against the IANA Language Subtag Registry
it ships (ISO 639, ISO 15924, ISO 3166-1 and UN M.49 codes).
"""

from __future__ import annotations

import re

# BCP 47's own syntax: subtags of 1-8 letters and digits joined by hyphens. langcodes also reads
# `en_US` (a POSIX locale, not a BCP 47 tag): refused here so the tag means what it says.
_SYNTAX = re.compile(r"[A-Za-z0-9]{1,8}(?:-[A-Za-z0-9]{1,8})*")


def is_known_tag(tag: str) -> bool:
    """True for a well-formed tag whose language, script, region and variant subtags exist."""
    if not _SYNTAX.fullmatch(tag):
        return False
    import langcodes  # ~50 ms: only when a language is set, not on every CLI start

    return bool(langcodes.tag_is_valid(tag))
