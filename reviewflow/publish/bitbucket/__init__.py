"""Bitbucket Cloud and Bitbucket Data Center: the spec for the platform registry. The client is
`client.py` (Cloud; `dc.py` Data Center, chosen by the API URL), the request's locator
`target.py`, the Markdown each takes `markup.py` and `dc_text.py`."""

from __future__ import annotations

from collections.abc import Mapping

from reviewflow.platforms import PlatformSpec


def detect(env: Mapping[str, str]) -> bool:
    """Whether `env` is a Bitbucket Pipelines build."""
    return bool(env.get("BITBUCKET_BUILD_NUMBER", "").strip())


PLATFORM = PlatformSpec(
    name="bitbucket",
    title="Bitbucket Cloud and Data Center",
    detect=detect,
    locate="reviewflow.publish.bitbucket.target:locate",
    client="reviewflow.publish.bitbucket.client:bitbucket_client",  # Cloud or Data Center
    token_env=("REVIEWFLOW_BITBUCKET_TOKEN", "BITBUCKET_TOKEN"),
    ci_variables=("BITBUCKET_BUILD_NUMBER",),
    request_head=None,  # no pull request refs: the source branch is reviewed
    full_history="a full clone; Bitbucket Pipelines: clone: depth: full",
)
