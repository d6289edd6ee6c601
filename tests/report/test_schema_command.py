"""`reviewflow schema` prints the published JSON Schema of the report."""

from __future__ import annotations

import json

import jsonschema
import pytest

from flows.cli.main import main
from reviewflow.report.outcome import build_report, report_schema
from tests.report.samples import make_outcome


def test_schema_command_prints_the_report_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == report_schema()
    jsonschema.Draft202012Validator(printed).validate(build_report(make_outcome()))
