"""Whole reviews on cloud platforms through the CLI: Bedrock signed with the environment's AWS
credentials, Vertex AI with Application Default Credentials, Azure OpenAI with its key, each
against the wire server; the report names the platform and holds no credential."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import report_schema
from tests.flows.reviewer import ScriptedReviewer
from tests.flows.test_review_e2e import LEAK, SPLIT, _repo
from tests.gitutil import GitRepo
from tests.platforms import AWS_SECRET_KEY, AWS_SESSION_TOKEN, aws_credentials, google_adc
from tests.wire_server import GOOGLE_TOKEN, WireServer

pytestmark = pytest.mark.usefixtures("prefect_harness")
AZURE_KEY = "azk-e2e-test-0c4f1d8b2a"


@pytest.mark.parametrize(
    ("platform", "protocol", "name"),
    [
        ("bedrock", "anthropic", "anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("vertex", "gemini", "gemini-2.5-pro"),
        ("azure", "openai", "gpt-4o"),
    ],
)
def test_a_review_on_a_cloud_platform(
    platform: str,
    protocol: str,
    name: str,
    repo: GitRepo,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    rf_home: Path,
    tmp_path: Path,
) -> None:
    reviewer = ScriptedReviewer({"app/settings.py": [LEAK, SPLIT]})
    wire.respond(protocol, reviewer)
    _repo(repo.root)
    monkeypatch.setenv("REVIEWFLOW_MODEL_PLATFORM", platform)
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", name)
    monkeypatch.setenv("REVIEWFLOW_MODEL_ENDPOINT", wire.url)
    if platform == "bedrock":
        aws_credentials(monkeypatch, tmp_path)
        monkeypatch.setenv("AWS_REGION", "eu-west-1")
    elif platform == "vertex":
        google_adc(monkeypatch, tmp_path, wire)
        monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "europe-west4")
    else:
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", AZURE_KEY)
    out = tmp_path / "out"
    argv = ["review", "--repo", str(repo.root), "--commit", "HEAD", "--console", "summary"]
    assert main([*argv, "--report-dir", str(out)]) == 1  # the high finding gates
    report = json.loads((out / "review-report.json").read_text())
    jsonschema.validate(report, report_schema())
    assert report["status"] == "complete" and len(report["findings"]) == 1
    assert report["metadata"]["model"] == {
        "protocol": protocol,
        "name": name,
        "endpoint": wire.url,
        "platform": platform,
    }
    records = wire.requests(protocol)
    assert records and {r.platform for r in records} == {platform}
    assert report["usage"]["requests"] == len(records)
    secrets = [AWS_SECRET_KEY, AWS_SESSION_TOKEN, GOOGLE_TOKEN, AZURE_KEY]
    for path in [*out.iterdir(), *rf_home.rglob("*")]:  # reports, logs, cached results
        if path.is_file():
            data = path.read_bytes()
            assert not [s for s in secrets if s.encode() in data], path
