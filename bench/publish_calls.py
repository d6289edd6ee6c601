"""API calls publishing a 40-finding review makes on every platform (GitHub, GitLab, Bitbucket
Cloud and Data Center, Gitea, Azure DevOps): a first run, then a re-run on the same head
(nothing new), against the test suite's stateful fakes.

    .venv/bin/python bench/publish_calls.py [--findings 40]

The calls are the clients' own count of HTTP requests (REST and GraphQL alike); the fakes
page as the platforms do (GitHub 100 a page, GitLab and Bitbucket what the client asks, at most
100, Gitea at most 50).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import SecretStr

from reviewflow.publish.publisher import publish
from reviewflow.publish.tokens import client_for
from tests.publish import (
    fake_azure_devops,
    fake_bitbucket,
    fake_bitbucket_dc,
    fake_gitea,
    fake_github,
    fake_gitlab,
)
from tests.publish.memory import all_lines, full_context, many_findings, outcome_of


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=int, default=40)
    count = parser.parse_args().findings
    findings = many_findings(count)
    print("| platform | run | API calls | comments posted | wall (s) |\n|---|---|---|---|---|")
    with (
        fake_github.FakeGitHub() as github,
        fake_gitlab.FakeGitLab() as gitlab,
        fake_bitbucket.FakeBitbucket() as bitbucket,
        fake_gitea.FakeGitea() as gitea,
        fake_bitbucket_dc.FakeBitbucketDC() as bitbucket_dc,
        fake_azure_devops.FakeAzureDevOps() as azure,
    ):
        github.add_pull(7, commentable=all_lines(findings))
        gitlab.add_merge_request(
            "acme/app", 3, head_sha="c" * 40, base_sha="b" * 40, commentable=all_lines(findings)
        )
        bitbucket.add_pull_request(
            "acme/app",
            5,
            source_hash="c" * 40,
            destination_hash="b" * 40,
            commentable=all_lines(findings),
        )
        gitea.add_pull(
            "acme/app", 5, head_sha="c" * 40, base_sha="b" * 40, commentable=all_lines(findings)
        )
        bitbucket_dc.add_pull_request(
            "PROJ/app", 3, head_sha="c" * 40, target_sha="b" * 40, commentable=all_lines(findings)
        )
        changed = dict.fromkeys(all_lines(findings), "edit")
        azure.add_pull_request("acme", "app", 7, head="c" * 40, base="b" * 40, changed=changed)
        sides = (
            (
                "GitHub",
                github.ref(7),
                fake_github.TOKEN,
                fake_github.BASE_SHA,
                fake_github.HEAD_SHA,
            ),
            ("GitLab", gitlab.ref("acme/app", 3), fake_gitlab.BOT_TOKEN, "b" * 40, "c" * 40),
            (
                "Bitbucket Cloud",
                bitbucket.ref("acme/app", 5),
                fake_bitbucket.TOKEN,
                "b" * 40,
                "c" * 40,
            ),
            ("Gitea", gitea.ref("acme/app", 5), fake_gitea.TOKEN, "b" * 40, "c" * 40),
            (
                "Bitbucket DC",
                bitbucket_dc.ref("PROJ/app", 3),
                fake_bitbucket_dc.BOT_TOKEN,
                "b" * 40,
                "c" * 40,
            ),
            ("Azure DevOps", azure.ref("acme/app", 7), fake_azure_devops.TOKEN, "b" * 40, "c" * 40),
        )
        for name, ref, token, base, head in sides:
            for run in ("first", "re-run"):
                client = client_for(ref, SecretStr(token))
                started = time.perf_counter()
                result = publish(client, full_context(ref, base, head), outcome_of(findings))
                wall = time.perf_counter() - started
                print(f"| {name} | {run} | {client.calls} | {result.posted} | {wall:.2f} |")


if __name__ == "__main__":
    main()
