"""A review on a cloud platform says so in its report (metadata.model.platform), never a key."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import jsonschema
import pytest
from pydantic import SecretStr

from reviewflow.config import Config, ModelSettings
from reviewflow.report.assemble import review_metadata
from reviewflow.report.outcome import ModelInfo, report_json
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import collect, select
from tests.gitutil import GitRepo
from tests.report.samples import make_outcome, metadata, validate_report


def test_the_report_names_the_platform_and_its_endpoint(repo: GitRepo) -> None:
    repo.write("app.py", "print(1)\n")
    request = ReviewRequest.from_flags(str(repo.root), home=str(repo.root / ".home"))
    scope = select(collect(request, 3), request, 1 << 20)
    model = ModelSettings(
        platform="azure",
        name="gpt-4o",
        endpoint="https://contoso.openai.azure.com",
        api_key=SecretStr("azure-key-never-in-reports"),
    )
    now = datetime(2026, 12, 2, 1, 0, tzinfo=UTC)
    meta = review_metadata(scope, request, Config(model=model), (now, now))
    text = report_json(make_outcome(metadata=meta))
    report = json.loads(text)
    validate_report(report)
    assert report["metadata"]["model"] == {
        "protocol": "openai",
        "name": "gpt-4o",
        "endpoint": "https://contoso.openai.azure.com",
        "platform": "azure",
    }
    assert "azure-key-never-in-reports" not in text


def test_the_schema_refuses_an_unknown_platform() -> None:
    info = ModelInfo(protocol="anthropic", name="m", endpoint=None, platform="aws")
    report = json.loads(report_json(make_outcome(metadata=metadata(model=info))))
    with pytest.raises(jsonschema.ValidationError):
        validate_report(report)
