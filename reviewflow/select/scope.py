"""The front half of a review: from a request to the files reviewed and the rule for each.

`prepare` is the one way through it: the CLI calls it before Prefect starts (bad input fails
there, in one line) and hands the result to the flow; the flow's `prepare_review` task calls it
only when handed none (a deployment's run). `--preview` calls it too, and never pays for Prefect.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from reviewflow.config import ReviewSettings
from reviewflow.git.models import Change, DiffMode
from reviewflow.git.repo import collect_change, find_repo_root
from reviewflow.models import ReviewWarning
from reviewflow.request import ReviewRequest
from reviewflow.rules.instructions import Instructions, load_instructions
from reviewflow.rules.loader import RuleSet, load_rules
from reviewflow.rules.trust import choose_trusted_ref
from reviewflow.select.filtering import Selection, select_files


@dataclass(frozen=True, slots=True)
class Scope:
    """A change, the rules it is reviewed by, and the files kept and left out."""

    change: Change
    rules: RuleSet
    selection: Selection
    trusted_ref: str | None
    instructions: Instructions | None = None  # the team's (`--instructions`), for every file

    @property
    def warnings(self) -> list[ReviewWarning]:
        notes = [ReviewWarning("encoding", text, path) for path, text in self.change.encoding_notes]
        return (
            [ReviewWarning("git", text) for text in self.change.warnings]
            + notes
            + list(self.rules.warnings)
        )


def prepare(
    request: ReviewRequest, settings: ReviewSettings, stdin: BinaryIO | None = None
) -> Scope:
    """The change `request` names, its rules and its files kept or left out, as `settings`
    (context lines, the size limit, the team's instructions) say."""
    change = collect(request, settings.context_lines, stdin)
    return select(change, request, settings.max_file_bytes, settings.instructions)


def collect(request: ReviewRequest, context_lines: int, stdin: BinaryIO | None = None) -> Change:
    """Read the requested change from Git (or the given diff)."""
    root = find_repo_root(Path(request.repo))
    return collect_change(root, request.change_spec(context_lines), stdin)


def select(
    change: Change, request: ReviewRequest, max_file_bytes: int, instructions: str | None = None
) -> Scope:
    """Load the rules and the instructions file `instructions` names (from a trusted ref in CI)
    and filter the change's files.

    Every input is a parameter or on the request (home, CI variables), none in the environment;
    a file whose diff text is over `max_file_bytes` is left out as too large.
    """
    custom = Path(request.custom_rule) if request.custom_rule else None
    # A range's merge-base, a commit's parent: what the change was made against. Workspace and
    # diff changes have no base the change could not have written.
    base = change.base_sha if change.spec.mode in (DiffMode.RANGE, DiffMode.COMMIT) else None
    trusted = choose_trusted_ref(
        request.ci_variables, request.trusted_ref, base, deployed=request.deployed
    )
    rules = load_rules(change.repo_root, Path(request.home), custom, trusted)
    guidance, notes = load_instructions(
        instructions, change.repo_root, trusted, request.ci_variables, change, request.deployed
    )
    rules.warnings.extend(notes)
    worktree = change.repo_root if change.snapshot_ref is None else None
    selection = select_files(change.files, rules, worktree, max_file_bytes)
    return Scope(change, rules, selection, trusted, guidance)
