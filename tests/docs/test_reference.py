"""The documentation says what the code does: the generated reference pages are current, and
the architecture page names the layers the import test holds."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tests import test_architecture

ROOT = Path(__file__).resolve().parents[2]


def _generator():  # docs/gen is not a package: load it by path
    spec = importlib.util.spec_from_file_location("reference", ROOT / "docs/gen/reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "page", ["configuration.md", "commands.md", "report-schema.md", "platforms.md"]
)
def test_a_generated_page_is_what_the_code_generates(page: str) -> None:
    pages = {path.name: text for path, text in _generator().pages().items()}
    committed = (ROOT / "docs/reference" / page).read_text()
    assert committed == pages[page], f"docs/reference/{page} is stale: run `make docs`"


def test_every_config_key_is_documented_once() -> None:
    from reviewflow.config.messages import known_keys

    page = (ROOT / "docs/reference/configuration.md").read_text()
    assert re.findall(r"^### `([\w.]+)`$", page, re.M) == known_keys()


def test_the_architecture_page_ranks_the_layers_as_the_import_test_does() -> None:
    page = (ROOT / "docs/architecture.md").read_text()
    rows = re.findall(r"^\| (`(?:flows|tasks|reviewflow)[^|]*) \|", page, re.M)
    layers = tuple(tuple(re.findall(r"`([\w.]+)`", names)) for names in rows)
    assert layers == test_architecture.LAYERS
    ranks = re.findall(r"^\| (\d+) \| (.+) \|$", page, re.M)
    domain = tuple(tuple(re.findall(r"`([\w.]+)`", names)) for _, names in ranks)
    assert domain == test_architecture.DOMAIN
