"""Every platform's side of a request's life (`scenario.Side`) on its fake, by key (a platform's
name; `bitbucket-dc`: Bitbucket Data Center, a side named `bitbucket`): the life test and the
failure tests run each platform the same way. A fake with its platform's API spec in
`tests/data/schemas/` (Gitea, Azure DevOps) is held to it when the test is done
(`spec_check.py`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tests.publish import (
    fake_azure_devops,
    fake_bitbucket,
    fake_bitbucket_dc,
    fake_gitea,
    fake_github,
    fake_gitlab,
    spec_check,
)
from tests.publish.azure_devops_side import AzureDevOpsSide
from tests.publish.bitbucket_dc_side import BitbucketDCSide
from tests.publish.bitbucket_side import BitbucketSide
from tests.publish.gitea_side import GiteaSide
from tests.publish.scenario import GitHubSide, GitLabSide, Side
from tests.publish.spec_check import spec_violations

PLATFORMS = ("github", "gitlab", "bitbucket", "bitbucket-dc", "gitea", "azure")
READ_ONLY_TOKENS = {
    "gitlab": fake_gitlab.READ_ONLY_TOKEN,
    "bitbucket": fake_bitbucket.READ_ONLY_TOKEN,
    "bitbucket-dc": fake_bitbucket_dc.READ_ONLY_TOKEN,
    "gitea": fake_gitea.READ_ONLY_TOKEN,
    "azure": fake_azure_devops.READ_ONLY_TOKEN,
}


@contextlib.contextmanager
def open_side(name: str) -> Iterator[Side]:
    """The platform's fake, started, as a Side (stopped at the end)."""
    if name == "github":
        with fake_github.FakeGitHub() as github:
            yield GitHubSide(github)
    elif name == "gitlab":
        with fake_gitlab.FakeGitLab() as gitlab:
            yield GitLabSide(gitlab)
    elif name == "bitbucket":
        with fake_bitbucket.FakeBitbucket() as bitbucket:
            yield BitbucketSide(bitbucket)
    elif name == "bitbucket-dc":  # `--publish bitbucket` with a Data Center server's URL
        with fake_bitbucket_dc.FakeBitbucketDC(prefix="/bitbucket") as server:
            yield BitbucketDCSide(server)
    elif name == "gitea":
        with fake_gitea.FakeGitea() as gitea:
            yield GiteaSide(gitea)
            assert spec_violations(gitea, spec_check.gitea()) == []  # the life kept to the spec
    else:
        with fake_azure_devops.FakeAzureDevOps() as azure:
            yield AzureDevOpsSide(azure)
            assert spec_violations(azure, spec_check.azure_devops()) == []
