"""The MCP tools' typed inputs and outputs, and each call's `reviewflow` command line.

Inputs are the CLI's own flags, a chosen few: what to review and the settings and budgets a
caller may set. Nothing that names a model key, endpoint or protocol (the configured model is
used, with its key from the environment), where reports go, publishing or Dask is accepted:
an MCP client cannot redirect the key or write files beyond the review's own reports."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from reviewflow.findings.models import Finding

Commit = Annotated[
    str | None, Field(description="review the changes one commit introduced (a SHA or ref)")
]
FromRef = Annotated[
    str | None,
    Field(description="range start (with to_ref): the changes of merge-base(from, to)..to"),
]
ToRef = Annotated[str | None, Field(description="range end (with from_ref)")]
Files = Annotated[
    list[str] | None,
    Field(
        description="audit these files or directories as they are, with no diff (relative to "
        "the repository; with commit: as that commit has them)"
    ),
]
AllFiles = Annotated[
    bool, Field(description="audit every file as it is, with no diff (with commit: its tree)")
]
MaxTokens = Annotated[
    str | None,
    Field(description="token budget, e.g. 200k: no request is sent that would cross it"),
]
MaxCost = Annotated[
    str | None,
    Field(description="cost budget in the price's currency, e.g. 2.50 (needs a known price)"),
]
Verify = Annotated[bool | None, Field(description="verify each finding (default: the config)")]
Sast = Annotated[
    bool | None,
    Field(description="true: semgrep pre-scan hints (needs semgrep; default: the config)"),
]
ContextPack = Annotated[
    bool | None,
    Field(description="give the model the context pack beyond the diff (default: config)"),
]
Language = Annotated[str | None, Field(description="report language, e.g. en-US or de-DE")]
Threshold = Annotated[
    float | None, Field(description="drop findings below this confidence (0 to 1)")
]
Instructions = Annotated[
    str | None,
    Field(description="team review instructions, a Markdown file (relative to the repository)"),
]
NoCache = Annotated[bool, Field(description="ignore cached model answers")]
FindingKey = Annotated[
    str, Field(description="a finding ID (F and 12 hex digits) or its fingerprint (64 hex digits)")
]


class Problem(BaseModel):
    """A warning or error of the review, as the JSON report has it."""

    code: str
    message: str
    path: str | None = None


class ReviewResult(BaseModel):
    """A review's result: its JSON report's findings, status and figures, and its report files."""

    review_id: str
    status: Literal["complete", "incomplete"]
    exit_code: int = Field(
        description="the CLI's: 0 nothing matches fail_on, 1 a finding does, 2 incomplete, "
        "130 cancelled"
    )
    findings: list[Finding] = Field(description="the findings, as the JSON report has them")
    stats: dict[str, Any] = Field(description="the JSON report's stats")
    usage: dict[str, Any] = Field(description="requests, tokens and (with a price) cost")
    warnings: list[Problem]
    errors: list[Problem]
    reports: dict[str, str] = Field(description="report kind (json, markdown, ...) -> its file")
    message: str | None = Field(
        None, description="the CLI's line on an incomplete or cancelled review"
    )


class PreviewResult(BaseModel):
    """What a review would cover and cost: `reviewflow review --preview --json -`."""

    metadata: dict[str, Any] = Field(description="the change: repository, mode, refs")
    stats: dict[str, Any] = Field(description="files changed, to review and excluded")
    files: list[dict[str, Any]] = Field(description="each file to review with its rule")
    excluded_files: list[dict[str, Any]] = Field(description="each file left out and why")
    rules: Any = Field(description="the rules in force")
    warnings: list[dict[str, Any]]
    estimate: dict[str, Any] | None = Field(
        None, description="the expected requests, tokens and (with a price) cost"
    )
    text: str = Field(description="the preview as the CLI prints it")


class Placement(BaseModel):
    """Where a finding sits and how it was put there."""

    path: str
    start_line: int
    end_line: int
    placed_by: str = Field(description="the report's placed_by")
    meaning: str = Field(description="what that placement says about the lines")
    existing_code: str = Field(description="the code the finding is about")


class Explanation(BaseModel):
    """One finding of the last review: its evidence, its file's rule and its placement."""

    finding: Finding
    evidence: str
    rule: dict[str, Any] | None = Field(
        description="the rule the finding's file was reviewed under"
    )
    placement: Placement
    report: str = Field(description="the JSON report it was read from")


class Dismissed(BaseModel):
    """What `reviewflow dismiss` did, in its own words."""

    message: str


def change_flags(
    commit: str | None,
    from_ref: str | None,
    to_ref: str | None,
    instructions: str | None,
    files: list[str] | None = None,
    all_files: bool = False,
) -> list[str]:
    """The change's flags: a commit, a range, or none (the workspace); or an audit of files
    as they are (`--files`, `--all`)."""
    flags: list[str] = ["--all"] if all_files else []
    if files is not None:
        # `--files` takes every following argument: a path that looks like a flag is made
        # explicitly relative so it is never read as one.
        flags += ["--files", *(f"./{path}" if path.startswith("-") else path for path in files)]
    for flag, value in (
        ("--commit", commit),
        ("--from", from_ref),
        ("--to", to_ref),
        ("--instructions", instructions),
    ):
        if value is not None:
            flags.append(f"{flag}={value}")  # one argument: a value is never read as a flag
    return flags


def setting_flags(settings: dict[str, Any]) -> list[str]:
    """The settings' flags, as the CLI takes them (None: the configuration's)."""
    flags: list[str] = []
    for name, flag in (
        ("max_tokens", "--max-tokens"),
        ("max_cost", "--max-cost"),
        ("language", "--language"),
        ("confidence_threshold", "--confidence-threshold"),
    ):
        if settings.get(name) is not None:
            flags.append(f"{flag}={settings[name]}")
    if settings.get("verify") is not None:
        flags.append("--verify" if settings["verify"] else "--no-verify")
    if settings.get("sast"):
        flags.append("--sast")
    if settings.get("context") is not None:
        flags.append(f"--context={'on' if settings['context'] else 'off'}")
    if settings.get("no_cache"):
        flags.append("--no-cache")
    return flags
