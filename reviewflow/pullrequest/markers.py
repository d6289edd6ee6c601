"""Hidden markers in the comments reviewflow posts: how a later run finds them again.

Every marker is an HTML comment at the very start of a comment's body, which neither platform
renders. Model text cannot forge one: `safe.py` escapes `<` in everything the model wrote.

- a finding's comment:   `<!-- reviewflow:finding <sha256 fingerprint> <base64 of its JSON> -->`
  (the JSON: severity, path, lines and title where it was posted, so an open thread alone says
  which finding stays open, and in a review of several passes its cluster's other
  fingerprints; comments of earlier versions carry the fingerprint only)
- reviewflow's reply that resolved a thread: `<!-- reviewflow:resolved -->`
- the summary comment:   `<!-- reviewflow:summary <base64 of the state's JSON> -->`
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from pydantic import ValidationError

from reviewflow.pullrequest.state import PriorFinding, SummaryState

_FINDING = re.compile(r"\A<!-- reviewflow:finding ([0-9a-f]{64})(?: ([A-Za-z0-9+/=]+))? -->")
_SUMMARY = re.compile(r"\A<!-- reviewflow:summary ([A-Za-z0-9+/=]*) -->")
RESOLVED = "<!-- reviewflow:resolved -->"
_DISMISS = re.compile(r"\A\s*reviewflow:\s*dismiss\b[\s:.,-]*(.*)", re.IGNORECASE | re.DOTALL)


def finding_marker(fingerprint: str, finding: PriorFinding | None = None) -> str:
    if finding is None:
        return f"<!-- reviewflow:finding {fingerprint} -->"
    data = finding.model_dump_json(exclude={"fingerprint"}, exclude_none=True).encode()
    return f"<!-- reviewflow:finding {fingerprint} {base64.b64encode(data).decode()} -->"


def finding_fingerprint(body: str) -> str | None:
    """The fingerprint a finding comment's marker holds (None: not one of ours)."""
    match = _FINDING.match(body)
    return match.group(1) if match else None


def posted_finding(body: str) -> PriorFinding | None:
    """The finding a comment's marker describes, where it was posted (None: not one of ours,
    a comment of an earlier version that holds its fingerprint only, or unreadable)."""
    match = _FINDING.match(body)
    if not match or not match.group(2):
        return None
    try:
        data = json.loads(base64.b64decode(match.group(2), validate=True))
        return PriorFinding.model_validate({**data, "fingerprint": match.group(1)})
    except (binascii.Error, ValueError, TypeError, ValidationError):
        return None


def summary_marker(state: SummaryState) -> str:
    """The summary's marker: its state, each finding without its cluster (the comments'
    markers keep those; the state stays within a comment's size)."""
    plain = {"findings": {"__all__": {"cluster_fingerprints"}}}
    data = base64.b64encode(state.model_dump_json(exclude=plain).encode()).decode()
    return f"<!-- reviewflow:summary {data} -->"


def is_summary(body: str) -> bool:
    return _SUMMARY.match(body) is not None


def summary_state(body: str) -> SummaryState | None:
    """The state an earlier run kept in its summary (None: not a summary, or unreadable —
    a person may have edited it: the next run then reviews the whole request)."""
    match = _SUMMARY.match(body)
    if not match:
        return None
    try:
        return SummaryState.model_validate(json.loads(base64.b64decode(match.group(1))))
    except (binascii.Error, ValueError, ValidationError):
        return None


def is_resolution(body: str) -> bool:
    """Whether `body` is the reply reviewflow posts when it resolves a thread."""
    return body.startswith(RESOLVED)


def dismissal(body: str) -> str | None:
    """The reason of a `reviewflow: dismiss [reason]` reply ("" without one); None if the
    reply is something else."""
    match = _DISMISS.match(body)
    return match.group(1).strip()[:300] if match else None
