"""Dismissals become silencing rules, on a real repository: one finding dismissed on a pull
request (GitHub's fake, reviewed through the CLI), one with `reviewflow dismiss`; `reviewflow
dismissed --suggest` proposes the rule they support, `--apply` adds it to the rules file as a
readable change, the next review drops what it covers as `silence_rule` (not in CI, where only
the trusted base's rules count), and once expired it silences nothing and is named, as is a
rule that silenced nothing in its whole life."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.publish.scenario import LEAK, RISKY, SPLIT, PullRequest, use_env
from tests.publish.sides import open_side
from tests.wire_server import WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")

OPENED = {
    **LEAK,
    "category": "security",
    "title": "Path from the caller opened unchecked",
    "problem": "any file the process can read",
}
HAND_WRITTEN = """{
    "exclude": ["**/vendor/**"],
    "silence": [
        {"category": "performance", "path": "docs/**", "reason": "the docs team's",
         "expires": "2099-01-01"}
    ],
    "rules": [{"path": "**/*.py", "rule": "Check the callers."}]
}
"""


def _review(pr: PullRequest, out: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    args = ["review", "--repo", str(pr.repo.root), "--console", "summary", "--no-progress"]
    code = main([*args, "--report-dir", str(out), *flags])
    report = json.loads((out / "review-report.json").read_text())
    jsonschema.validate(report, report_schema())
    return code, report


def _suggest(pr: PullRequest, capsys: pytest.CaptureFixture[str], *flags: str) -> Any:
    capsys.readouterr()
    assert main(["dismissed", "--repo", str(pr.repo.root), "--suggest", *flags]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in flags else out


def test_dismissals_on_a_request_and_in_the_repository_become_a_rule_that_expires(
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with open_side("github") as side:
        pr = PullRequest.create(tmp_path, side)
        use_env(monkeypatch, wire, side.env())
        wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK]}))
        publish = ["review", "--repo", str(pr.repo.root), "--publish", "auto", "--no-progress"]
        assert main(publish) == 1  # its report stays in the home, where --suggest reads it
        [first] = rf_home.glob("reports/*/*/review-report.json")
        found = {f["title"]: f for f in json.loads(first.read_text())["findings"]}
        [leak] = [p for p in side.posted() if p.fingerprint == found[LEAK["title"]]["fingerprint"]]
        side.dismiss(leak.id, "reviewflow: dismiss closed by the caller")
        pr.push({"app/settings.py": RISKY + "\n\nDEFAULT = {}\n"}, "a default")  # incremental
        use_env(monkeypatch, wire, side.env())  # the token again (a review takes it out)
        wire.respond("openai", ScriptedReviewer({"app/settings.py": []}))
        assert main(publish) == 1  # the split, carried, still gates
        for name in side.env():
            monkeypatch.delenv(name, raising=False)
    [latest] = [p for p in rf_home.glob("reports/*/*/review-report.json") if p != first]
    on_request = json.loads(latest.read_text())  # the leak not reported again, yet recorded
    assert on_request["pull_request"]["scope"] == "incremental"
    assert on_request["pull_request"]["dismissed"] == {
        leak.fingerprint: "dismissed by @alice: closed by the caller"
    }
    split = found[SPLIT["title"]]

    repo = pr.repo  # the rules file the team wrote, on main (the trusted base in CI)
    repo.git("checkout", "-q", "main")
    repo.write(".reviewflow/rules.json", HAND_WRITTEN)
    repo.commit("rules")
    repo.git("checkout", "-q", "feature")
    repo.git("merge", "-q", "--no-edit", "main")
    dismiss = ["dismiss", split["id"], "--reason", "input validated upstream"]
    assert main([*dismiss, "--repo", str(repo.root)]) == 0

    found = _suggest(pr, capsys, "--json")
    [proposal] = found["proposals"]
    assert (proposal["category"], proposal["path"]) == ("correctness", "app/settings.py")
    support = {d["fingerprint"]: d for d in proposal["dismissals"]}
    assert support[leak.fingerprint]["by"] == "@alice"
    assert support[leak.fingerprint]["where"].startswith("pull request http")
    assert support[split["fingerprint"]]["by"] == "Test <test@example.invalid>"
    assert support[split["fingerprint"]]["where"] == ".reviewflow/dismissed.json"
    reason = proposal["reason"]
    assert reason.startswith("learnt from 2 dismissals: ")
    assert "closed by the caller" in reason and "input validated upstream" in reason
    assert (found["expired"], found["unused"]) == ([], [])
    text = _suggest(pr, capsys)
    assert text.startswith(f"{proposal['id']}  silence correctness findings in app/settings.py")
    assert f"--apply {proposal['id']}" in text

    applied = _suggest(pr, capsys, "--apply", proposal["id"])
    assert applied.startswith("added 1 silencing rule(s) to .reviewflow/rules.json")
    after = (repo.root / ".reviewflow/rules.json").read_text()
    end = HAND_WRITTEN.index("\n    ]")  # the entry added after the last; nothing else moved
    assert after.startswith(HAND_WRITTEN[:end] + ",\n        {\n")
    assert after.endswith(HAND_WRITTEN[end:])
    rule = json.loads(after)["silence"][1]
    assert rule["added_by"] == "Test <test@example.invalid>" and rule["dismissals"] == 2
    assert rule["expires"] > rule["added"] and rule["path"] == "app/settings.py"
    assert _suggest(pr, capsys, "--json")["proposals"] == []  # covered now
    repo.git("add", ".reviewflow")
    repo.commit("silence what the team dismissed")

    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT, LEAK, OPENED]}))
    change = ["--from", "main", "--to", "feature"]
    monkeypatch.setenv("CI", "true")  # only the trusted base's rules (and dismissals) count
    code, ci = _review(pr, tmp_path / "ci", *change)
    assert code == 1 and len(ci["findings"]) == 3 and ci["dropped"] == []
    monkeypatch.delenv("CI")

    code, local = _review(pr, tmp_path / "local", *change)
    assert [f["title"] for f in local["findings"]] == [OPENED["title"]]
    reasons = {d["title"]: d for d in local["dropped"]}
    assert reasons[SPLIT["title"]]["reason"] == "dismissed"
    ruled = reasons[LEAK["title"]]
    assert (ruled["reason"], ruled["rule"]) == ("silence_rule", ".reviewflow/rules.json silence[1]")
    assert ruled["detail"].startswith(
        "silenced by .reviewflow/rules.json silence[1] (correctness findings in app/settings.py "
        "by Test <test@example.invalid>, until "
    )
    assert not [w for w in local["warnings"] if w["code"].startswith("silence_rule")]

    expired = after.replace('"2099-01-01"', '"2020-01-01"').replace(
        f'"expires": "{rule["expires"]}"', '"expires": "2020-01-02"'
    )
    (repo.root / ".reviewflow/rules.json").write_text(expired)
    code, late = _review(pr, tmp_path / "late", *change)
    assert code == 1 and LEAK["title"] in [f["title"] for f in late["findings"]]
    assert not [d for d in late["dropped"] if d["reason"] == "silence_rule"]
    notes = {(w["code"], w["message"].split(" (", 1)[0]) for w in late["warnings"]}
    assert {n for n in notes if n[0].startswith("silence_rule")} == {
        ("silence_rule_expired", "silencing rule .reviewflow/rules.json silence[0]"),
        ("silence_rule_expired", "silencing rule .reviewflow/rules.json silence[1]"),
        ("silence_rule_unused", "silencing rule .reviewflow/rules.json silence[0]"),
    }
    found = _suggest(pr, capsys, "--json")
    assert [e["rule"] for e in found["expired"]] == [
        ".reviewflow/rules.json silence[0]",
        ".reviewflow/rules.json silence[1]",
    ]
    assert [(u["rule"], u["reviews"]) for u in found["unused"]] == [
        (".reviewflow/rules.json silence[0]", 2)
    ]
