"""The publishing token is held by the review that checked it, in that review's context only:
the publishing task finds it there, and nothing outside the block (after it, another thread,
another request) can reach it; its holder never shows it."""

from __future__ import annotations

import threading

import pytest
from pydantic import SecretStr

from reviewflow.errors import PublishSetupError
from reviewflow.publish.tokens import HeldToken, client_for, holding
from tasks.publish import publish_findings
from tests.publish import fake_github
from tests.publish.memory import all_lines, finding, full_context, outcome_of


def test_the_publishing_task_uses_the_token_held_for_its_request_inside_the_block_only() -> None:
    findings = [finding("a.py", 1, "x = 1")]
    with fake_github.FakeGitHub() as fake:
        fake.add_pull(7, commentable=all_lines(findings))
        ref = fake.ref(7)
        context = full_context(ref, fake_github.BASE_SHA, fake_github.HEAD_SHA)
        with holding(ref, SecretStr(fake_github.TOKEN)):
            assert publish_findings.fn(outcome_of(findings), context).posted == 1
        with pytest.raises(PublishSetupError, match=f"no github token held for {ref.repo}#7"):
            publish_findings.fn(outcome_of(findings), context)  # the review's block has ended
    assert len(fake.reviews(7)) == 1


def test_a_held_token_is_out_of_reach_of_another_request_and_another_thread() -> None:
    with fake_github.FakeGitHub() as fake:
        ref, other = fake.ref(7), fake.ref(8)
        seen: list[BaseException] = []

        def elsewhere() -> None:  # a thread this review did not start with its context
            try:
                client_for(ref)
            except PublishSetupError as error:
                seen.append(error)

        with holding(ref, SecretStr(fake_github.TOKEN)):
            client_for(ref)
            with pytest.raises(PublishSetupError):
                client_for(other)
            thread = threading.Thread(target=elsewhere)
            thread.start()
            thread.join()
    assert len(seen) == 1


def test_the_holder_never_shows_the_token() -> None:
    with fake_github.FakeGitHub() as fake:
        held = HeldToken(fake.ref(7), SecretStr(fake_github.TOKEN))
    assert fake_github.TOKEN not in repr(held) and fake_github.TOKEN not in str(held)
