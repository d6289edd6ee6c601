"""Silencing rules (`silence[]` of rules.json): the schema's checks, the text edit `--apply`
makes (every other byte kept), the proposals `dismissed --suggest` groups from a repository's
dismissal file, and how a rule silences, expires and is named as unused."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from flows.cli.main import main
from reviewflow.errors import ConfigError, RulesError
from reviewflow.findings.finalize import Finalized
from reviewflow.findings.models import DropReason, Finding, PlacedBy
from reviewflow.findings.silence import silence
from reviewflow.models import Category, Severity
from reviewflow.report.learn import suggest
from reviewflow.rules.dismissals import Dismissed
from reviewflow.rules.edit import add_silence
from reviewflow.rules.schema import parse_rules_file
from reviewflow.rules.silencing import RuleUsage, SilenceRule, counted_usage
from tests.gitutil import GitRepo

ENTRY = {"category": "tests", "path": "tests/**", "reason": "fixtures", "expires": "2030-01-01"}
TODAY = date(2026, 12, 7)


def _parse(data: object) -> object:
    return parse_rules_file(json.dumps(data).encode(), "rules.json")


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({**ENTRY, "rule_id": "R1"}, "give exactly one of 'category' and 'rule_id'"),
        ({"path": "x", "reason": "r"}, "give exactly one of 'category' and 'rule_id'"),
        ({**ENTRY, "category": "style"}, "'style' is not a category"),
        ({**ENTRY, "expires": "2030-1-1"}, "'2030-1-1' is not a date (YYYY-MM-DD)"),
        ({**ENTRY, "reason": ""}, "silence[0].reason"),
        ({**ENTRY, "colour": "red"}, "silence[0].colour"),
    ],
)
def test_a_bad_entry_is_named(entry: dict[str, str], message: str) -> None:
    with pytest.raises(RulesError, match=r"rules\.json") as raised:
        _parse({"silence": [entry]})
    assert message in str(raised.value) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        '{\n    "rules": [],\n    "silence": [\n        {"category": "security", "path": "a/**", '
        '"reason": "r"}\n    ]\n}\n',
        '{"exclude": ["vendor"],   "silence": []}',
        '\ufeff{\n\t"include": ["*.sql"]\n}\n',
        "{}",
        '{"rules": [{"path": "**/*.go", "rule": "x"}]}',
    ],
)
def test_add_silence_edits_the_text_and_nothing_else(text: str) -> None:
    edited = add_silence(text, [ENTRY], "rules.json")
    before = json.loads(text.lstrip("\ufeff"))
    after = json.loads(edited.lstrip("\ufeff"))
    assert after == {**before, "silence": [*before.get("silence", []), ENTRY]}
    assert edited.startswith("\ufeff") == text.startswith("\ufeff")
    kept = [line.rstrip(",") for line in text.splitlines() if line.strip() not in ("]", "}")]
    new_lines = [line.rstrip(",") for line in edited.splitlines()]
    if "\n" in text:  # a multi-line file: each of its lines is still there, in its order
        at = 0
        for line in kept:
            at = new_lines.index(line, at) + 1 if line in new_lines[at:] else -1
            assert at > 0, (line, edited)


def test_add_silence_writes_a_new_file_and_refuses_what_is_not_a_rules_file() -> None:
    assert json.loads(add_silence(None, [ENTRY], "rules.json")) == {"silence": [ENTRY]}
    with pytest.raises(RulesError, match=r"rules\.json"):
        add_silence("[1, 2]", [ENTRY], "rules.json")
    with pytest.raises(RulesError, match=r"rules\.json"):
        add_silence('{"silence": {}}', [ENTRY], "rules.json")


def _fingerprint(n: int) -> str:
    return f"{n:064x}"


def _dismissals(repo: GitRepo, *items: tuple[str, str | None, str | None, str]) -> None:
    entries = [
        {
            "fingerprint": _fingerprint(n),
            "path": path,
            **({"category": category} if category else {}),
            **({"rule_id": rule_id} if rule_id else {}),
            "reason": reason,
            "by": "ann",
            "at": f"2026-11-{n + 1:02d}T10:00:00Z",
        }
        for n, (path, category, rule_id, reason) in enumerate(items)
    ]
    repo.write(".reviewflow/dismissed.json", json.dumps({"version": 1, "dismissed": entries}))


def test_proposals_take_the_narrowest_place_with_enough_dismissals(
    repo: GitRepo, rf_home: Path
) -> None:
    _dismissals(
        repo,
        ("tests/unit/a.py", "security", None, "fixture key"),
        ("tests/unit/b.py", "security", None, "fixture key"),
        ("tests/e2e/c.py", "security", None, "test token"),
        ("tests/e2e/c.py", "performance", None, "one only"),
        ("src/x.py", "correctness", "PY001", "known"),
        ("lib/y.py", "correctness", "PY001", "known"),
        ("lib/z.py", None, None, "no category"),
    )
    found = suggest(repo.root, rf_home, TODAY, min_count=2, days=30)
    shown = [(p.target, len(p.support)) for p in found.proposals]
    assert shown == [
        ("rule PY001 in **", 2),
        ("security findings in tests/unit/**", 2),
    ]
    assert [e.path for e in found.unclassified] == ["lib/z.py"]
    assert {p.expires for p in found.proposals} == {"2027-01-06"}
    same = suggest(repo.root, rf_home, date(2026, 12, 9), min_count=2, days=30)
    assert [p.id for p in same.proposals] == [p.id for p in found.proposals]  # stable IDs
    one = suggest(repo.root, rf_home, TODAY, min_count=1)
    assert ("security findings in tests/e2e/c.py", 1) in [
        (p.target, len(p.support)) for p in one.proposals
    ]


def test_apply_with_an_unknown_id_is_one_line_exit_2_and_writes_nothing(
    repo: GitRepo, rf_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _dismissals(repo, ("a/b.py", "security", None, "x"), ("a/c.py", "security", None, "y"))
    args = ["dismissed", "--repo", str(repo.root), "--suggest"]
    assert main([*args, "--apply", "Snope00"]) == 2
    assert main([*args, "--min-count", "0"]) == 2
    assert main([*args[:3], "--expires-in", "30"]) == 2  # without --suggest
    assert main([*args[:3], "--apply", "all"]) == 2  # without --suggest
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and "Snope00: no such proposal now" in err[0]
    assert "--min-count must be 1 or more, not 0" in err[1]
    assert "--expires-in goes with --suggest" in err[2]
    assert "--apply goes with --suggest (reviewflow dismissed --suggest --apply IDS)" in err[3]
    assert not (repo.root / ".reviewflow/rules.json").exists()
    assert main([*args, "--apply", "all"]) == 0
    [rule] = json.loads((repo.root / ".reviewflow/rules.json").read_text())["silence"]
    assert (rule["category"], rule["path"], rule["dismissals"]) == ("security", "a/**", 2)


def _finding(path: str, category: Category, rule_id: str | None = None) -> Finding:
    return Finding(
        id="F" + path,
        fingerprint=_fingerprint(len(path)),
        path=path,
        start_line=1,
        end_line=1,
        severity=Severity.HIGH,
        category=category,
        title=f"{category.value} in {path}",
        problem="p",
        evidence="e",
        suggestion="s",
        confidence=0.9,
        existing_code="x = 1",
        placed_by=PlacedBy.EXACT,
        rule_id=rule_id,
    )


def _rule(index: int, **fields: str) -> SilenceRule:
    data = {"path": "tests/**", "reason": "fixtures", **fields}
    return SilenceRule(layer="project", source=".reviewflow/rules.json", index=index, **data)


def test_a_rule_silences_until_it_expires_and_an_unused_one_is_named() -> None:
    rules = (
        _rule(0, category="security", expires="2026-12-08", added_by="ann"),
        _rule(1, rule_id="R9", path="**"),
        _rule(2, category="performance", expires="2026-12-01"),
    )
    found = (
        _finding("tests/a.py", Category.SECURITY),
        _finding("src/b.py", Category.TESTS, "R9"),
        _finding("src/c.py", Category.SECURITY),
        _finding("tests/d.py", Category.PERFORMANCE),
    )
    finalized = Finalized(findings=found, dropped=(), warnings=())
    usage = {rules[2].identity: RuleUsage(reviews=4, silenced=0, first="2026-09-01", last="x")}
    out = silence(finalized, {}, Dismissed(rules=rules), True, today=TODAY, usage=usage)
    assert [f.path for f in out.findings] == ["src/c.py", "tests/d.py"]
    drops = {d.path: d for d in out.dropped}
    assert {d.reason for d in drops.values()} == {DropReason.SILENCE_RULE}
    assert drops["tests/a.py"].rule == ".reviewflow/rules.json silence[0]"
    assert drops["tests/a.py"].detail == (
        "silenced by .reviewflow/rules.json silence[0] (security findings in tests/** by ann, "
        "until 2026-12-08): fixtures"
    )
    assert drops["src/b.py"].rule == ".reviewflow/rules.json silence[1]"
    codes = [(w.code, w.message.split(" (")[0]) for w in out.warnings]
    assert codes == [
        ("silence_rule_expired", "silencing rule .reviewflow/rules.json silence[2]"),
        ("silence_rule_unused", "silencing rule .reviewflow/rules.json silence[2]"),
    ]
    after = counted_usage(rules, usage, {".reviewflow/rules.json silence[0]": 1}, TODAY)
    assert after[rules[0].identity] == RuleUsage(
        reviews=1, silenced=1, first="2026-12-07", last="2026-12-07"
    )
    assert after[rules[2].identity] == usage[rules[2].identity]  # expired: not counted
    on_expiry = silence(
        finalized, {}, Dismissed(rules=rules), True, today=date(2026, 12, 8), usage=after
    )
    assert "tests/a.py" in [f.path for f in on_expiry.findings]  # expires that day


def test_a_ci_report_given_with_report_counts_its_request_dismissals(
    repo: GitRepo, rf_home: Path, tmp_path: Path
) -> None:
    _dismissals(repo, ("api/a.py", "security", None, "behind the gateway"))
    dropped = {
        "path": "api/b.py",
        "title": "t",
        "reason": "dismissed",
        "detail": "thread resolved by @bob",
        "fingerprint": _fingerprint(7),
        "category": "security",
    }
    elsewhere = {"path": "x.py", "title": "t", "reason": "dismissed", "detail": "dismissed in f"}
    report = {
        "metadata": {"started_at": "2026-12-03T09:00:00Z"},
        "pull_request": {"url": "https://gitlab.example/acme/app/-/merge_requests/4"},
        "dropped": [dropped, elsewhere],
    }
    path = tmp_path / "review-report.json"
    path.write_text(json.dumps(report))
    assert suggest(repo.root, rf_home, TODAY).proposals == ()
    [proposal] = suggest(repo.root, rf_home, TODAY, reports=[path]).proposals
    assert proposal.target == "security findings in api/**"
    request = proposal.support[-1]
    assert (request.by, request.at, request.reason) == ("@bob", "2026-12-03", "")
    assert request.where == "pull request https://gitlab.example/acme/app/-/merge_requests/4"
    with pytest.raises(ConfigError, match="no such file"):
        suggest(repo.root, rf_home, TODAY, reports=[tmp_path / "missing.json"])
