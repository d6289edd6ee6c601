"""One job per kept file: its hunks cut into chunks on hunk boundaries, its rule, its budget.

A chunk's diff text stays within `CHUNK_SHARE` of `review.max_chunk_tokens`, so the session
has room for the prompt, tool results and candidates before compression (60%) and the token
guard (80%) step in. A hunk too large for one chunk is split into parts with their own
`@@` headers. A file's context pack (`reviewflow.review.packs`), when the review has one, rides
in its job, so the model stages' cache keys change with it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from pydantic import BaseModel, ConfigDict

from reviewflow.anchors import tag
from reviewflow.config import ReviewSettings
from reviewflow.git.models import DiffLine, FileDiff, Hunk
from reviewflow.review.packs import FileContext
from reviewflow.review.reader import Snapshot
from reviewflow.review.tokens import estimate_tokens
from reviewflow.rules.models import ResolvedRule, RuleLayer
from reviewflow.sast.models import SastResult, SastScan
from reviewflow.select.scope import Scope

CHUNK_SHARE = 0.4
MAX_DIFF_LINE_CHARS = 2000
PLAN_MIN_CHANGED_LINES = 50


class Chunk(BaseModel):
    """A run of whole hunks (or parts of one huge hunk) reviewed in one tool-loop session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    count: int
    text: str
    changed_lines: int


class FileJob(BaseModel):
    """One kept file to review: what the prompts need, nothing read from the repository."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    old_path: str | None = None
    status: str
    changed_lines: int
    chunks: tuple[Chunk, ...]
    rule: str
    rule_label: str
    language: str
    instructions: str | None = None  # the team's, trusted: for the plan and main system prompts
    sast: tuple[SastResult, ...] = ()  # the pre-scan's results on added lines (`--sast`)
    context: FileContext | None = None  # the context pack (`review.context`), untrusted data
    review_pass: int = 1  # which independent pass (`review.passes`) this job is of

    @property
    def needs_plan(self) -> bool:
        return self.changed_lines >= PLAN_MIN_CHANGED_LINES

    def cache_identity(self) -> dict[str, object]:
        """What the model stages' keys hash: the job, and its pass from the second on (so a
        first pass is keyed exactly as a review without passes)."""
        return self.model_dump(
            mode="json", exclude={"review_pass"} if self.review_pass == 1 else None
        )


def snapshot_of(scope: Scope) -> Snapshot:
    """The snapshot the tools of this change read (None ref: the working tree)."""
    change = scope.change
    return Snapshot(repo_root=str(change.repo_root), ref=change.snapshot_ref)


def file_jobs(
    scope: Scope,
    settings: ReviewSettings,
    language: str,
    sast: SastScan | None = None,
    packs: Mapping[str, FileContext] | None = None,
) -> list[FileJob]:
    """A job per kept file, in selection order, with its chunks (and SAST results, and its
    context pack from `packs`)."""
    budget = max(1, int(settings.max_chunk_tokens * CHUNK_SHARE))
    return [
        FileJob(
            path=kept.file.path,
            old_path=kept.file.old_path,
            status=kept.file.status.value,
            changed_lines=kept.file.added + kept.file.removed,
            chunks=tuple(chunk_file(kept.file, budget)),
            rule=kept.rule.text,
            rule_label=rule_label(kept.rule),
            language=language,
            instructions=scope.instructions.text if scope.instructions else None,
            sast=sast.for_path(kept.file.path) if sast is not None else (),
            context=(packs or {}).get(kept.file.path),
        )
        for kept in scope.selection.kept
    ]


def rule_label(rule: ResolvedRule) -> str:
    """A short name for the rule: the system rule's name, or its layer, source and pattern."""
    if rule.name and rule.layer is RuleLayer.SYSTEM:
        return f"system:{rule.name}"
    return f"{rule.layer.value}:{rule.source}:{rule.pattern}"


def chunk_file(diff: FileDiff, budget: int) -> list[Chunk]:
    """The file's hunks packed into chunks of at most `budget` estimated tokens each."""
    groups: list[list[tuple[str, int]]] = [[]]
    used = 0
    for piece in _pieces(diff.hunks, budget):
        cost = estimate_tokens(piece[0])
        if groups[-1] and used + cost > budget:
            groups.append([])
            used = 0
        groups[-1].append(piece)
        used += cost
    texts = [g for g in groups if g] or [[("(no textual change)", 0)]]
    return [
        Chunk(
            index=i,
            count=len(texts),
            text="\n".join(text for text, _ in group),
            changed_lines=sum(n for _, n in group),
        )
        for i, group in enumerate(texts)
    ]


def _pieces(hunks: tuple[Hunk, ...], budget: int) -> Iterator[tuple[str, int]]:
    """Each hunk rendered, or split into parts that fit `budget`: (text, changed lines)."""
    for hunk in hunks:
        rendered = _lines(hunk.lines)
        if estimate_tokens("\n".join(rendered)) <= budget:
            yield _render(hunk.lines, rendered, hunk.section, None), hunk.added + hunk.removed
            continue
        parts = list(_split(hunk.lines, rendered, budget))
        for number, (lines, texts) in enumerate(parts, 1):
            label = f"part {number}/{len(parts)}"
            changed = sum(1 for line in lines if line.kind != "context")
            yield _render(lines, texts, hunk.section, label), changed


def _split(
    lines: tuple[DiffLine, ...], rendered: list[str], budget: int
) -> Iterator[tuple[tuple[DiffLine, ...], list[str]]]:
    start, used = 0, 0
    for index, text in enumerate(rendered):
        cost = estimate_tokens(text) + 1
        if index > start and used + cost > budget:
            yield lines[start:index], rendered[start:index]
            start, used = index, 0
        used += cost
    yield lines[start:], rendered[start:]


def _render(
    lines: tuple[DiffLine, ...], rendered: list[str], section: str, label: str | None
) -> str:
    old = next((ln.old_no for ln in lines if ln.old_no is not None), 0)
    new = next((ln.new_no for ln in lines if ln.new_no is not None), 0)
    olds = sum(1 for ln in lines if ln.kind != "add")
    news = sum(1 for ln in lines if ln.kind != "del")
    tail = " ".join(part for part in (section.strip(), f"({label})" if label else "") if part)
    header = f"@@ -{old},{olds} +{new},{news} @@" + (f" {tail}" if tail else "")
    return "\n".join([header, *rendered])


def _lines(lines: tuple[DiffLine, ...]) -> list[str]:
    """A hunk's lines, each new-side one behind its tag (`L12#a3f`, `reviewflow.anchors`),
    the tags padded to the hunk's widest so the markers line up."""
    tags = [tag(line.new_no, line.text) if line.new_no is not None else "" for line in lines]
    width = max(map(len, tags), default=0)
    return [_line(line, label, width) for line, label in zip(lines, tags, strict=True)]


def _line(line: DiffLine, label: str, width: int) -> str:
    """A diff line behind its tag: `L12#a3f +text`, `L12#a3f  text`, `        -text`."""
    marker = {"add": "+", "del": "-", "context": " "}[line.kind]
    text = line.text
    if len(text) > MAX_DIFF_LINE_CHARS:
        text = f"{text[:MAX_DIFF_LINE_CHARS]}…[line cut: {len(text)} chars]"
    return f"{label:<{width}} {marker}{text}"
