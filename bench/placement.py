"""Placement benchmark: noisy scripted candidates over real defect lines in a real Git change.

Deterministic placement only (no model: the Relocation request is refused, so what placement
cannot place is dropped). Candidates carry the defect's code with line numbers shifted by
±1..±20; whitespace variants re-indent, squeeze or pad the code; duplicates repeat a defect
with another shift; diff quotes keep the `+` markers; expressions quote part of one line;
lines-only candidates have no code (step 2 alone, for comparison); ghost paths name files
outside the change; context candidates quote unchanged code.

A second run adds anchors (the line tags the prompt shows, `reviewflow.anchors`) to every
noisy candidate, and per defect four more: the tags alone (no code, no line numbers), the tags
alone with their numbers off by 1-3, a stale tag (wrong hash) beside the quoted code, and the
valid tag of another added line beside the quoted code. Both runs count per kind and per
placement method (the report's `placed_by`).

Targets: 100% of exact-code candidates on the right lines, >= 95% of whitespace variants,
none ever placed on an unchanged line or outside the change; with anchors: 100% of exact-code
candidates and >= 99% of anchor-only ones right.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reviewflow.anchors import tag
from reviewflow.config import ReviewSettings
from reviewflow.errors import ProviderError
from reviewflow.findings import finalize, group_candidates, relocate_file
from reviewflow.findings.models import FileFindings, PlacedBy
from reviewflow.git.models import ChangeSpec, DiffMode, FileDiff
from reviewflow.git.repo import collect_change
from reviewflow.models import Candidate
from reviewflow.providers import ModelRequest, ModelResponse

SEED = 20261130
FILES = 6

EXISTING = [
    "def {n}_name(record):\n    return record.get('name', '').strip()\n",
    "def {n}_is_active(user):\n    return bool(user and user.active)\n",
    "class {N}Cache:\n    def __init__(self):\n        self.items = {{}}\n\n"
    "    def get(self, key):\n        return self.items.get(key)\n",
    "def {n}_format_amount(cents):\n    return f'{{cents / 100:.2f}}'\n",
]

# (template, the defect's lines within the template: 1-based first and last)
DEFECTS = [
    ("def {n}_average(values):\n    total = sum(values)\n    return total / len(values)\n", 3, 3),
    ("def {n}_load(path):\n    handle = open(path)\n    return handle.read()\n", 2, 2),
    (
        "def {n}_find(db, name):\n"
        "    query = \"SELECT * FROM {n} WHERE name = '%s'\" % name\n"
        "    return db.execute(query).fetchall()\n",
        2,
        2,
    ),
    (
        "def {n}_last(items):\n    if not items:\n        return None\n"
        "    return items[len(items)]\n",
        4,
        4,
    ),
    (
        "def {n}_retry(call, attempts=3):\n    for attempt in range(attempts):\n"
        "        try:\n            return call()\n        except Exception:\n            pass\n",
        5,
        6,
    ),
    (
        "class {N}Counter:\n    def __init__(self):\n        self.count = 0\n\n"
        "    def add(self):\n        current = self.count\n        self.count = current + 1\n",
        6,
        7,
    ),
    ("def {n}_token(user):\n    return hashlib.md5(user.password.encode()).hexdigest()\n", 2, 2),
    (
        "def {n}_merge(defaults, overrides={{}}):\n    overrides.update(defaults)\n"
        "    return overrides\n",
        1,
        1,
    ),
    (
        "def {n}_parse(text):\n    data = yaml.load(text)\n    return data['{n}']\n",
        2,
        2,
    ),
    (
        "def {n}_slice(items, page, size):\n    start = page * size\n"
        "    return items[start:start + size + 1]\n",
        3,
        3,
    ),
]


@dataclass(frozen=True)
class Truth:
    path: str
    start: int
    end: int
    code: str


def refuse(request: ModelRequest) -> ModelResponse:
    raise ProviderError("no model in the placement benchmark")


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def build(root: Path) -> tuple[dict[str, FileDiff], list[Truth]]:
    """A repository whose last commit inserts defective functions between existing ones."""
    root.mkdir(parents=True)
    _git(root, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Bench"), ("user.email", "bench@example.invalid")):
        _git(root, "config", key, value)
    truths: list[Truth] = []
    new_texts: dict[str, str] = {}
    for f in range(FILES):
        path = f"src/pkg{f}/module{f}.py"
        names = [f"m{f}x{i}" for i in range(12)]
        old = [EXISTING[i % len(EXISTING)].format(n=n, N=n.title()) for i, n in enumerate(names)]
        text = ""
        for i, block in enumerate(old):
            text += block + "\n\n"
            if i % 2 == 0:
                template, first, last = DEFECTS[(f * 6 + i // 2) % len(DEFECTS)]
                defect = template.format(n=f"{names[i]}d", N=f"{names[i]}d".title())
                at = text.count("\n") + 1
                code = "\n".join(defect.split("\n")[first - 1 : last])
                truths.append(Truth(path, at + first - 1, at + last - 1, code))
                text += defect + "\n\n"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("\n\n".join(old))
        new_texts[path] = text
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    for path, text in new_texts.items():
        (root / path).write_text(text)
    _git(root, "commit", "-qam", "change")
    change = collect_change(root, ChangeSpec(DiffMode.COMMIT, commit="HEAD"))
    return {f.path: f for f in change.files}, truths


def _shift(rng: random.Random) -> int:
    return rng.choice((-1, 1)) * rng.randint(1, 20)


def _respace(code: str, rng: random.Random) -> str:
    """A whitespace variant of `code` as models quote it."""
    lines = code.split("\n")
    kind = rng.randrange(6)
    if kind == 0:  # indentation dropped
        lines = [line.strip() for line in lines]
    elif kind == 1:  # two-space indentation
        lines = [" " * ((len(ln) - len(ln.lstrip())) // 2) + ln.lstrip() for ln in lines]
    elif kind == 2:  # tabs
        lines = ["\t" * ((len(ln) - len(ln.lstrip())) // 4) + ln.lstrip() for ln in lines]
    elif kind == 3:  # inner runs of spaces
        lines = [ln.replace(" = ", "  =   ").replace(", ", ",  ") for ln in lines]
    elif kind == 4:  # trailing spaces and CRLF
        return "\r\n".join(ln + "   " for ln in lines) + "\r\n"
    else:  # padded with blank lines, re-indented by 8
        return "\n" + "\n".join("        " + ln.strip() for ln in lines) + "\n\n"
    return "\n".join(lines)


def _candidate(title: str, path: str, code: str, line: int, span: int) -> Candidate:
    return Candidate(
        path=path,
        file=path,
        severity="high",
        category="correctness",
        title=title,
        problem="A defect.",
        existing_code=code,
        start_line=line,
        end_line=line + span,
        confidence=0.9,
    )


def noisy_candidates(
    files: dict[str, FileDiff], truths: list[Truth], rng: random.Random
) -> tuple[list[Candidate], dict[str, Truth | None]]:
    """Noisy candidates of every kind per defect; ghost-path and context ones."""
    out: list[Candidate] = []
    expected: dict[str, Truth | None] = {}

    def add(truth: Truth | None, candidate_of: Candidate) -> None:
        out.append(candidate_of)
        expected[candidate_of.title] = truth

    for k, t in enumerate(truths):
        span = t.end - t.start
        add(t, _candidate(f"exact:{k}", t.path, t.code, t.start + _shift(rng), span))
        variant = _respace(t.code, rng)
        add(
            t,
            _candidate(f"whitespace:{k}", t.path, variant, t.start + _shift(rng), span),
        )
        line = t.start + _shift(rng)
        add(t, _candidate(f"lines-only:{k}", t.path, "", line, span))
        quoted = "\n".join("+" + ln for ln in t.code.split("\n"))
        add(t, _candidate(f"diff-quote:{k}", t.path, quoted, t.start + _shift(rng), span))
        if span == 0:
            part = t.code.strip().removeprefix("return ").split(" = ", 1)[-1]
            add(t, _candidate(f"expression:{k}", t.path, part, t.start + _shift(rng), 0))
        if rng.random() < 0.4:
            add(
                t,
                _candidate(f"duplicate:{k}", t.path, t.code, t.start + _shift(rng), span),
            )
    for k in range(12):
        t = rng.choice(truths)
        ghost = rng.choice((f"src/ghost{k}.py", t.path.replace(".py", "_old.py"), f"../{t.path}"))
        add(
            None,
            _candidate(f"ghost:{k}", t.path, t.code, t.start, 0).model_copy(update={"file": ghost}),
        )
    context = [
        (path, line.new_no, line.text)
        for path, file in files.items()
        for hunk in file.hunks
        for line in hunk.lines
        if line.kind == "context" and line.new_no is not None and len(line.text.strip()) > 12
    ]
    for k, (path, no, text) in enumerate(rng.sample(context, 12)):
        add(None, _candidate(f"context:{k}", path, text, no + _shift(rng) // 4, 0))
    return out, expected


def measure(
    files: dict[str, FileDiff], candidates: list[Candidate]
) -> tuple[list[FileFindings], list, float]:
    start = time.perf_counter()
    groups, outside = group_candidates(candidates, files)
    found = [relocate_file(files[path], group, refuse) for path, group in groups.items()]
    return found, outside, time.perf_counter() - start


ANCHOR_KINDS = ("anchor-only", "anchor-shifted", "anchor-stale", "anchor-wrong")


def _lines_of(files: dict[str, FileDiff]) -> dict[str, dict[int, tuple[str, bool]]]:
    """Every new-side line of the change: path -> line -> (text, added)."""
    return {
        path: {
            line.new_no: (line.text, line.kind == "add")
            for hunk in file.hunks
            for line in hunk.lines
            if line.new_no is not None
        }
        for path, file in files.items()
    }


def _anchor(lines: dict[int, tuple[str, bool]], start: int, end: int) -> str:
    first = tag(start, lines[start][0])
    return first if start == end else f"{first}-{tag(end, lines[end][0])}"


def anchored_candidates(
    files: dict[str, FileDiff],
    candidates: list[Candidate],
    expected: dict[str, Truth | None],
    rng: random.Random,
) -> tuple[list[Candidate], dict[str, Truth | None]]:
    """The noisy candidates with the tags of their lines as the prompt shows them (`anchored`
    kinds: code and noisy line numbers kept), then `_variants` of the tags per defect."""
    lines = _lines_of(files)
    out: list[tuple[str, Truth | None, Candidate]] = []
    for candidate in candidates:
        truth = expected[candidate.title]
        at = (
            (truth.start, truth.end)
            if truth
            else (candidate.start_line or 0, candidate.end_line or 0)
        )
        shown = lines.get(truth.path if truth else candidate.path, {})
        real = all(n in shown for n in at)  # else lines the change does not show: no real tag
        anchor = _anchor(shown, *at) if real else f"L{at[0]}#000"
        update = {"anchor": anchor}
        out.append((f"anchored {candidate.title}", truth, candidate.model_copy(update=update)))
    for k, t in enumerate(dict.fromkeys(t for t in expected.values() if t is not None)):
        out += [(f"{kind}:{k}", t, c) for kind, c in _variants(t, lines[t.path], rng)]
    return [c.model_copy(update={"title": title}) for title, _, c in out], {
        title: truth for title, truth, _ in out
    }


def _variants(
    t: Truth, lines: dict[int, tuple[str, bool]], rng: random.Random
) -> list[tuple[str, Candidate]]:
    """The tags alone (`anchor-only`), the tags alone with their numbers off by 1-3
    (`anchor-shifted`), a wrong hash beside the quoted code (`anchor-stale`), the valid tag of
    another added line beside the quoted code (`anchor-wrong`)."""
    anchor = _anchor(lines, t.start, t.end)
    only = _candidate("", t.path, "", 0, 0).model_copy(
        update={"existing_code": None, "start_line": None, "end_line": None, "anchor": anchor}
    )
    shift = rng.choice((-1, 1)) * rng.randint(1, 3)
    shifted = anchor.replace(f"L{t.start}#", f"L{t.start + shift}#", 1)
    if t.end != t.start:
        shifted = shifted.replace(f"L{t.end}#", f"L{t.end + shift}#", 1)
    digest = int(anchor[anchor.index("#") + 1 :][:3], 16)
    stale = f"L{t.start}#{(digest + 1) % 4096:03x}"  # not the hash of that line
    coded = _candidate("", t.path, t.code, t.start + _shift(rng), t.end - t.start)
    other = rng.choice([n for n, (_, added) in lines.items() if added and abs(n - t.start) > 5])
    return [
        ("anchor-only", only),
        ("anchor-shifted", only.model_copy(update={"anchor": shifted})),
        ("anchor-stale", coded.model_copy(update={"anchor": stale})),
        ("anchor-wrong", coded.model_copy(update={"anchor": _anchor(lines, other, other)})),
    ]


def tally(
    files: dict[str, FileDiff],
    found: list[FileFindings],
    outside: list,
    expected: dict[str, Truth | None],
) -> tuple[Counter[tuple[str, str]], Counter[tuple[str, str]], int]:
    """Per kind: right / misplaced / dropped; per placement method: right / misplaced; and how
    many were placed on an unchanged line or outside the change."""
    kinds: Counter[tuple[str, str]] = Counter()
    methods: Counter[tuple[str, str]] = Counter()
    unsafe = 0
    for file in found:
        changed = set(file.changed_lines)
        for p in file.placed:
            truth = expected[p.candidate.title]
            right = truth is not None and (truth.path, truth.start, truth.end) == (
                file.path,
                p.start_line,
                p.end_line,
            )
            verdict = "right" if right else "misplaced"
            kinds[p.candidate.title.split(":")[0], verdict] += 1
            methods[p.placed_by.value, verdict] += 1
            if file.path not in files or changed.isdisjoint(range(p.start_line, p.end_line + 1)):
                unsafe += 1
        for d in file.dropped:
            kinds[d.title.split(":")[0], "dropped"] += 1
    for d in outside:
        kinds[d.title.split(":")[0], "dropped"] += 1
    return kinds, methods, unsafe


def _table(counts: Counter[tuple[str, str]], rows: tuple[str, ...], what: tuple[str, ...]) -> None:
    print(f"{'':<22} {'total':>5} " + " ".join(f"{name:>14}" for name in what))
    for row in rows:
        numbers = [counts[row, name] for name in what]
        total = sum(numbers)
        if not total:
            continue
        share = " ".join(f"{n:>4} ({100 * n / total:5.1f}%)" for n in numbers)
        print(f"{row:<22} {total:>5} {share}")


def report(
    files: dict[str, FileDiff],
    candidates: list[Candidate],
    expected: dict[str, Truth | None],
    rows: tuple[str, ...],
) -> None:
    found, outside, seconds = measure(files, candidates)
    kinds, methods, unsafe = tally(files, found, outside, expected)
    final = finalize(found, ReviewSettings(), outside)
    duplicates = sum(1 for d in final.dropped if d.reason == "duplicate")
    _table(kinds, rows, ("right", "misplaced", "dropped"))
    print("by placement method (placed_by):")
    _table(methods, tuple(method.value for method in PlacedBy), ("right", "misplaced"))
    print(f"placed on an unchanged line or outside the change: {unsafe}")
    print(f"duplicates removed by finalize: {duplicates}; findings: {len(final.findings)}")
    print(f"placement time: {seconds * 1000:.1f} ms for {len(candidates)} candidates")


def main() -> None:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="rf-bench-placement-") as work:
        files, truths = build(Path(work) / "repo")
    candidates, expected = noisy_candidates(files, truths, rng)
    kinds = ("exact", "whitespace", "diff-quote", "expression", "duplicate", "lines-only")
    print(f"defect lines: {len(truths)} in {len(files)} files; candidates: {len(candidates)}")
    report(files, candidates, expected, (*kinds, "ghost", "context"))
    anchored, wanted = anchored_candidates(files, candidates, expected, random.Random(SEED + 1))
    print(f"\nwith anchors (the tags the prompt shows): {len(anchored)} candidates")
    rows = tuple(f"anchored {kind}" for kind in (*kinds, "ghost", "context"))
    report(files, anchored, wanted, (*rows, *ANCHOR_KINDS))


if __name__ == "__main__":
    main()
