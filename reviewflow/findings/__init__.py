"""From candidates to findings: placement, relocation, review filter, localization, finalize.

The pipeline's order: `group_candidates` -> per file `relocate_file` -> `filter_file` ->
`finalize` (revalidate, threshold, fingerprint, dedupe) -> `localize` -> `gate`.
"""

from reviewflow.findings.filter import filter_file
from reviewflow.findings.finalize import Finalized, finalize, fingerprint, gate
from reviewflow.findings.localize import Localized, is_english, localize
from reviewflow.findings.relocate import group_candidates, relocate_file

__all__ = [
    "Finalized",
    "Localized",
    "filter_file",
    "finalize",
    "fingerprint",
    "gate",
    "group_candidates",
    "is_english",
    "localize",
    "relocate_file",
]
