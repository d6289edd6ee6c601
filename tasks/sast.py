"""Stage 2b, sast_prescan (`--sast`): one semgrep run over the change's reviewed files, before
any model request; its results on added lines go into each file's job."""

from __future__ import annotations

from prefect import task
from prefect.cache_policies import NO_CACHE

from reviewflow.config import ReviewSettings
from reviewflow.sast.models import SastScan
from reviewflow.sast.scan import prescan
from reviewflow.select.scope import Scope


# Not a Prefect cache: results are cached per file (content, path, rules digest, semgrep
# version) under `<home>/cache/sast/` by the stage itself, so one run scans only the files no
# earlier run did. No retries: semgrep missing or failing is the user's to fix (exit 2).
@task(name="sast_prescan", cache_policy=NO_CACHE, retries=0)
def sast_prescan(scope: Scope, settings: ReviewSettings, home: str, refresh: bool) -> SastScan:
    """The SAST results on the change's added lines, by path (`refresh`: `--no-cache`)."""
    return prescan(scope, settings, home, refresh)
