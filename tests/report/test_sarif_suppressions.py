"""SARIF suppressions: a finding under a `reviewflow: ignore` comment and one dismissed in the
dismissals file go into the SARIF run with `suppressions` (inSource / external, accepted,
justified by the reason), valid SARIF 2.1.0, and count neither in the summary nor the gate."""

from __future__ import annotations

import jsonschema

from reviewflow.config import ReviewSettings
from reviewflow.findings.finalize import gate
from reviewflow.findings.silence import read_suppressions, silence
from reviewflow.report.outcome import build_report
from reviewflow.report.sarif import build_sarif
from reviewflow.review.reader import Snapshot
from reviewflow.rules.dismissals import Dismissal, Dismissed
from tests.findings.test_silence import _finalized
from tests.gitutil import GitRepo
from tests.report.samples import make_outcome, sarif_schema


def test_suppressed_and_dismissed_findings_are_sarif_suppressions(repo: GitRepo) -> None:
    final, added = _finalized(repo)
    snapshot = Snapshot(repo_root=str(repo.root), ref=repo.head())
    found, _ = read_suppressions(snapshot, added, [f.path for f in final.findings])
    divide = next(f for f in final.findings if f.title != "Handle never closed")
    dismissed = Dismissed(
        entries={divide.fingerprint: Dismissal(fingerprint=divide.fingerprint, reason="by design")},
        sources={divide.fingerprint: ".reviewflow/dismissed.json"},
    )
    quiet = silence(final, found, dismissed, honour_new=False)  # the added comment: not honoured
    assert quiet.findings == ()
    outcome = make_outcome(findings=quiet.findings, dropped=quiet.dropped, exit_code=0)

    log = build_sarif(outcome)
    jsonschema.Draft4Validator(sarif_schema()).validate(log)
    results = {r["message"]["text"].split("\n")[0]: r for r in log["runs"][0]["results"]}
    details = {d.title: d.detail for d in quiet.dropped}
    assert results["Handle never closed"]["suppressions"] == [
        {
            "kind": "inSource",
            "status": "accepted",
            "justification": details["Handle never closed"],
        }
    ]
    assert "legacy loader" in details["Handle never closed"]
    [external] = results[divide.title]["suppressions"]
    assert external["kind"] == "external" and external["status"] == "accepted"
    assert (
        external["justification"] == details[divide.title]
        and "by design" in external["justification"]
    )
    assert all(
        r["ruleId"] == log["runs"][0]["tool"]["driver"]["rules"][r["ruleIndex"]]["id"]
        for r in results.values()
    )

    report = build_report(outcome)
    assert report["stats"]["findings"] == 0 and set(outcome.severity_counts().values()) == {0}
    assert "finding" not in report["dropped"][-1]
    assert gate(quiet.findings, ReviewSettings().fail_on, True) == 0
