"""Fixtures for rule tests: a small system catalog of our own."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewflow.rules.system import SystemCatalog, load_system_rules
from tests.rules.helpers import SKILLS, write_skills


@pytest.fixture
def system(tmp_path: Path) -> SystemCatalog:
    """A system catalog built from our own SKILL.md fixtures (not the shipped ones)."""
    return load_system_rules(write_skills(tmp_path / "skills", SKILLS))
