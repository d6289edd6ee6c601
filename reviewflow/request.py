"""What one review is asked to do: the change, the rule file and trust settings (never secrets)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from reviewflow.errors import ConfigError
from reviewflow.git.models import ChangeSpec, DiffMode
from reviewflow.pullrequest.context import PullRequestContext


class ReviewRequest(BaseModel):
    """The change to review. Safe to use as a flow parameter: it holds no secret."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    repo: str
    mode: DiffMode = DiffMode.WORKSPACE
    commit: str | None = None
    from_ref: str | None = None
    to_ref: str | None = None
    diff_source: str | None = None
    """`-` for stdin, or the diff file as the user named it."""
    stdin_copy: str | None = None
    """Where the CLI saved a diff read from stdin, for the review's tasks to read."""
    custom_rule: str | None = None
    trusted_ref: str | None = None
    no_cache: bool = False
    home: str
    """The reviewflow home (user rules live there); the CLI sets it from REVIEWFLOW_HOME."""
    ci_variables: tuple[str, ...] = ()
    """The CI variables that were set: in CI, repository rules come from a trusted ref."""
    pull_request: PullRequestContext | None = None
    """The pull/merge request the findings are published to (`--publish`), as read before."""
    deployed: bool = False
    """A deployment's run (its settings are parameters, such as `trusted_ref`), not the CLI's
    (flags, such as `--trusted-ref`): messages name the one the user sets."""
    files: tuple[str, ...] = ()
    """An audit's (`--files`) paths, absolute or from the repository's top; none with `--all`."""
    sast_prescanned: bool = False
    """The CLI started this review's SAST pre-scan ahead of the flow (`reviewflow.sast.early`):
    the flow's stage reads its results from the cache, `--no-cache` or not."""

    @classmethod
    def from_flags(
        cls,
        repo: str,
        *,
        commit: str | None = None,
        from_ref: str | None = None,
        to_ref: str | None = None,
        diff_source: str | None = None,
        custom_rule: str | None = None,
        trusted_ref: str | None = None,
        no_cache: bool = False,
        home: str,
        ci_variables: tuple[str, ...] = (),
        deployed: bool = False,
        files: tuple[str, ...] | None = None,
        audit_all: bool = False,
    ) -> ReviewRequest:
        """Check the flag combination and pick the diff mode: an audit (`--files`, `--all`)
        reads the working tree, or the tree of `commit` when one is given."""
        names = _DEPLOYED_NAMES if deployed else _CLI_NAMES
        audit = _audit_flags(files, audit_all, from_ref is not None, diff_source is not None, names)
        if (from_ref is None) != (to_ref is None):
            raise ConfigError("--from and --to must be given together")
        if commit is not None and from_ref is not None:
            raise ConfigError("--commit cannot be combined with --from/--to")
        if diff_source is not None and (commit is not None or from_ref is not None):
            raise ConfigError("--diff cannot be combined with --commit or --from/--to")
        for flag, value in (("--commit", commit), ("--from", from_ref), ("--to", to_ref)):
            if value is not None and not value.strip():
                raise ConfigError(f"{flag} needs a non-empty ref")
        if audit:
            mode = DiffMode.AUDIT
        elif diff_source is not None:
            mode = DiffMode.STDIN
        elif commit is not None:
            mode = DiffMode.COMMIT
        elif from_ref is not None:
            mode = DiffMode.RANGE
        else:
            mode = DiffMode.WORKSPACE
        return cls(
            repo=repo,
            mode=mode,
            commit=commit,
            from_ref=from_ref,
            to_ref=to_ref,
            diff_source=diff_source,
            custom_rule=custom_rule,
            trusted_ref=trusted_ref,
            no_cache=no_cache,
            home=home,
            ci_variables=ci_variables,
            deployed=deployed,
            files=tuple(files or ()),
        )

    def for_pull_request(self, context: PullRequestContext) -> ReviewRequest:
        """This request publishing to `context`'s request: unless the flags named a change, the
        range `context` chose; the repository's rules from the request's base unless
        `--trusted-ref` says otherwise (the change, or an earlier push of it, never chooses)."""
        update: dict[str, object] = {
            "pull_request": context,
            "trusted_ref": self.trusted_ref or context.base,
        }
        if self.mode is DiffMode.WORKSPACE:
            update.update(mode=DiffMode.RANGE, from_ref=context.from_ref, to_ref=context.head)
        return self.model_copy(update=update)

    @property
    def audit(self) -> bool:
        """A whole-file audit (`--files`, `--all`): no diff, every file read as added."""
        return self.mode is DiffMode.AUDIT

    @property
    def mode_name(self) -> str:
        """The mode as reports name it: `diff` for a diff file, `stdin` for `--diff -`."""
        if self.mode is DiffMode.STDIN and self.diff_source != "-":
            return "diff"
        return self.mode.value

    def change_spec(self, context_lines: int) -> ChangeSpec:
        return ChangeSpec(
            mode=self.mode,
            commit=self.commit,
            from_ref=self.from_ref,
            to_ref=self.to_ref,
            diff_source=self.stdin_copy or self.diff_source,
            context_lines=context_lines,
            paths=self.files,
        )


_CLI_NAMES = ("--files", "--all", "--from/--to")
_DEPLOYED_NAMES = ("'files'", "'all_files'", "'from_ref'/'to_ref'")  # the deployment's parameters


def _audit_flags(
    files: tuple[str, ...] | None,
    audit_all: bool,
    has_range: bool,
    has_diff: bool,
    names: tuple[str, str, str],
) -> bool:
    """Whether the flags ask for an audit; ConfigError for a combination that cannot be one,
    naming the flags (or a deployment's parameters: `names`) as the user set them."""
    files_flag, all_flag, range_flags = names
    if files is not None and audit_all:
        raise ConfigError(
            f"{files_flag} and {all_flag} cannot be combined ({all_flag} audits every file)"
        )
    if files is None and not audit_all:
        return False
    flag = all_flag if audit_all else files_flag
    if has_range or has_diff:
        other = range_flags if has_range else "--diff"
        raise ConfigError(f"{flag} audits files as they are: it cannot be combined with {other}")
    if files is not None and (not files or any(not f.strip() for f in files)):
        raise ConfigError(f"{files_flag} needs one or more paths (files or directories)")
    return True
