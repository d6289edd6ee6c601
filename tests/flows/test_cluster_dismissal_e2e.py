"""A dismissal silences every member of its cluster (issue 41, the ClickHouse complaint of a
finding re-posted despite its dismissal), on a real repository and a pull request on GitHub's
fake, reviewed through the CLI with two passes of the scripted model.

Both passes find one defect, placed on two overlapping spans of the same length: two
fingerprints, one cluster; the more confident member is kept. The first review keeps one and
posts it (its comment's marker holding the other's fingerprint). The second review, its
passes' confidences swapped, keeps the other member: the publisher knows it by the thread
already open and posts nothing, resolves nothing. A person dismisses the thread; a third review
(one pass, finding only the member that was never posted) drops it as dismissed, as the
dismissal of the thread, and posts nothing; `dismissed --suggest` counts that dismissal once.
The repository's dismissal store is checked the same way: `reviewflow dismiss` of a kept member
records its cluster, and a review keeping another member drops it; the store's and the
request's dismissals of one cluster are one dismissal to `--suggest`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.test_passes_e2e import PassReviewer
from tests.publish.scenario import LEAK, PullRequest, use_env
from tests.publish.sides import open_side
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

# One defect, as two passes place it: lines 4-5 and 5-6 of the request's settings.py (the
# same length, overlapping; the same title), so only confidence decides which one is kept.
ABOVE = {**LEAK, "existing_code": "def load(path):\n    handle = open(path)"}
BELOW = {**LEAK, "existing_code": "    handle = open(path)\n    return parse(handle.read())"}


def _sure(finding: dict[str, Any], confidence: float) -> dict[str, Any]:
    return {**finding, "confidence": confidence}


def _review(pr: PullRequest, out: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    """A review of the request's commit (the whole request each time), its answers asked
    afresh, its JSON report read (and checked against the schema)."""
    argv = ["review", "--repo", str(pr.repo.root), "--commit", "HEAD", "--no-cache"]
    argv += ["--console", "off", "--no-progress", "--report-dir", str(out), *flags]
    code = main(argv)
    report = json.loads((out / "review-report.json").read_text())
    jsonschema.validate(report, report_schema())
    return code, report


def test_a_dismissal_silences_whichever_member_of_its_cluster_is_kept(
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with open_side("github") as side:
        pr = PullRequest.create(tmp_path, side)
        publish = ["--publish", "auto"]

        def env() -> None:
            use_env(monkeypatch, wire, side.env())  # the token again (a review takes it out)

        env()
        wire.respond("openai", PassReviewer([[_sure(ABOVE, 0.9)], [_sure(BELOW, 0.8)]]))
        code, first = _review(pr, tmp_path / "first", "--passes", "2", *publish)
        [kept] = first["findings"]
        above = kept["fingerprint"]
        [below] = kept["cluster_fingerprints"]
        assert (code, kept["existing_code"], kept["agreement"]) == (
            1,
            ABOVE["existing_code"],
            "2/2",
        )
        assert [d["reason"] for d in first["dropped"]] == ["duplicate"]
        [thread] = side.posted()
        assert (thread.fingerprint, thread.resolved) == (above, False)

        env()  # the passes swapped: the other member is kept, under its own fingerprint
        wire.respond("openai", PassReviewer([[_sure(ABOVE, 0.8)], [_sure(BELOW, 0.9)]]))
        code, second = _review(pr, tmp_path / "second", "--passes", "2", *publish)
        [kept] = second["findings"]
        assert (kept["fingerprint"], kept["cluster_fingerprints"]) == (below, [above])
        assert code == 1
        assert side.posted() == [thread]  # no new comment, the thread neither resolved nor new
        summary = side.summaries()[-1]
        assert "This run: 0 new comments, 0 threads resolved." in summary

        side.dismiss(thread.id, "reviewflow: dismiss the caller closes it")
        env()  # one pass, finding only the member never posted
        wire.respond("openai", PassReviewer([[_sure(BELOW, 0.9)]]))
        code, third = _review(pr, tmp_path / "third", *publish)
        assert (code, third["findings"]) == (0, [])
        [dropped] = third["dropped"]
        assert (dropped["reason"], dropped["fingerprint"]) == ("dismissed", below)
        assert dropped["dismissed_as"] == above
        assert dropped["detail"] == "dismissed by @alice: the caller closes it"
        assert third["pull_request"]["dismissed"] == {above: dropped["detail"]}
        assert [p.fingerprint for p in side.posted()] == [above]  # nothing posted
        for name in side.env():
            monkeypatch.delenv(name, raising=False)

    capsys.readouterr()
    root, third_report = str(pr.repo.root), str(tmp_path / "third/review-report.json")
    learn = ["dismissed", "--repo", root, "--suggest", "--json", "--min-count", "1"]
    assert main([*learn, "--report", third_report]) == 0
    [proposal] = json.loads(capsys.readouterr().out)["proposals"]
    assert [d["fingerprint"] for d in proposal["dismissals"]] == [above]  # one dismissal, once

    # The repository's store: the second review's kept member dismissed, with its cluster
    second_report = str(tmp_path / "second/review-report.json")
    assert main(["dismiss", "--repo", root, "--report", second_report, "F" + below[:12]]) == 0
    [entry] = json.loads((pr.repo.root / ".reviewflow/dismissed.json").read_text())["dismissed"]
    assert (entry["fingerprint"], entry["cluster_fingerprints"]) == (below, [above])
    wire.respond("openai", PassReviewer([[_sure(ABOVE, 0.9)]]))  # only the other member
    code, local = _review(pr, tmp_path / "local")
    assert (code, local["findings"]) == (0, [])
    [dropped] = local["dropped"]
    assert (dropped["fingerprint"], dropped["dismissed_as"]) == (above, below)
    assert dropped["detail"].startswith("dismissed in .reviewflow/dismissed.json by Test")
    recorded = f"(recorded for F{below[:12]}: this finding as another pass placed it)"
    assert dropped["detail"].endswith(recorded)
    capsys.readouterr()  # the store's and the request's dismissal of one cluster: counted once
    assert main([*learn, "--report", third_report]) == 0
    [proposal] = json.loads(capsys.readouterr().out)["proposals"]
    assert [d["fingerprint"] for d in proposal["dismissals"]] == [below]
