"""What the docs and README give to copy or look up: a Dask scheduler is never shown listening on
every interface (it runs whatever any client sends, unauthenticated); configuration.md's full
config file has every key and its environment list every `REVIEWFLOW_MODEL_*` variable."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from reviewflow.config.load import ENV_FIELDS
from reviewflow.config.messages import known_keys
from reviewflow.config.schema import ENV_PREFIX

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _code_lines() -> list[tuple[str, str]]:
    found = []
    for path in SOURCES:
        for block in re.findall(r"```[a-z]*\n(.*?)```", path.read_text(), flags=re.S):
            found += [(path.name, line) for line in block.replace("\\\n", " ").splitlines()]
    return found


def test_every_dask_scheduler_binds_a_private_host() -> None:
    schedulers = [(page, line) for page, line in _code_lines() if "dask scheduler" in line]
    assert {page for page, _ in schedulers} >= {"README.md", "deployments.md"}
    for page, line in schedulers:
        words = shlex.split(line.split("#")[0])
        assert "--host" in words, f"{page}: {line}"
        host = words[words.index("--host") + 1]
        assert host not in {"0.0.0.0", "::", "*", ""}, f"{page}: {line}"


def test_the_full_config_file_has_every_key() -> None:
    page = (ROOT / "docs/configuration.md").read_text()
    [full] = [b for b in re.findall(r"```yaml\n(.*?)```", page, flags=re.S) if "model:" in b]
    shown = {f"{section}.{key}" for section, keys in yaml.safe_load(full).items() for key in keys}
    assert sorted(set(known_keys()) - shown) == []
    assert sorted(shown - set(known_keys())) == []


def test_the_environment_list_has_every_variable() -> None:
    page = (ROOT / "docs/configuration.md").read_text()
    listed = page[page.index("\nEnvironment: ") :].split("\n\n")[0]
    missing = [f for f in ENV_FIELDS if f"`{ENV_PREFIX}{f.upper()}`" not in listed]
    assert missing == []
