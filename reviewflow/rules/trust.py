"""The CI trust model: in CI the repository's rules come from a trusted ref, never the checkout.

`--trusted-ref` (a deployment's `trusted_ref` parameter) always wins (also locally; `HEAD` trusts
the checked-out commit). Outside CI the
working tree is read. In CI the change's base is used: the caller passes the merge-base of a
range or the parent of a commit as `base_sha`, and None for workspace, diff and audit changes (a
checkout's HEAD is the change under review) and a root commit. Without a base the run fails
closed with TrustError, so a change can never supply the rules it is reviewed by. (A commit's
parent may be an earlier commit of the same pull request: a pull request is reviewed as a range.)
"""

from __future__ import annotations

from collections.abc import Sequence

from reviewflow.errors import TrustError


def choose_trusted_ref(
    ci_vars: Sequence[str], flag: str | None, base_sha: str | None, *, deployed: bool = False
) -> str | None:
    """The ref to read `.reviewflow/rules.json` at (None: the working tree); see the module.
    `deployed`: the run is a deployment's, whose setting is its `trusted_ref` parameter (the
    CLI's is `--trusted-ref`): the messages name the one the user can set."""
    if flag is not None:
        if not flag.strip():
            setting = "the trusted_ref parameter" if deployed else "--trusted-ref"
            raise TrustError(f"{setting} needs a ref (e.g. origin/main, a SHA, or HEAD)")
        return flag.strip()
    if not ci_vars:
        return None
    if base_sha:
        return base_sha
    names = ", ".join(ci_vars)
    fix = (
        "set the deployment's trusted_ref parameter to a base ref (e.g. origin/main), or to "
        "HEAD to trust the checkout"
        if deployed
        else "pass --trusted-ref <base ref> (e.g. origin/main), or --trusted-ref HEAD to trust "
        "the checkout"
    )
    raise TrustError(
        f"running in CI ({names} set) with no trusted base for .reviewflow/rules.json "
        f"(a workspace, a diff, an audit or a root commit): {fix}"
    )
