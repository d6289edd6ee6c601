"""The pages render as written, with the site's own Markdown settings (mkdocs.yml): a command in
a table cell copies as a command (no literal `\\|`), and a list is a list, not one paragraph."""

from __future__ import annotations

import re
from pathlib import Path

import markdown  # what mkdocs renders with (mkdocs is pinned in the dev extra)
import pytest
from mkdocs.config import load_config

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))


def _render(page: str) -> str:
    config = load_config(str(ROOT / "mkdocs.yml"))
    md = markdown.Markdown(
        extensions=config["markdown_extensions"], extension_configs=config["mdx_configs"]
    )
    return md.convert((ROOT / "docs" / page).read_text())


@pytest.mark.parametrize("page", PAGES)
def test_code_and_lists_render_as_written(page: str) -> None:
    html = _render(page)
    codes = re.findall(r"<code>(.*?)</code>", html, flags=re.S)
    assert [code for code in codes if "\\|" in code] == []
    paragraphs = re.findall(r"<p>(.*?)</p>", html, flags=re.S)
    swallowed = [p for p in paragraphs if re.search(r"\n(?:[-*+]|\d+\.) ", p)]
    assert swallowed == [], "a list needs a blank line before it"


def test_the_diff_command_copies_as_a_command() -> None:
    html = _render("getting-started.md")
    assert "<code>git diff ... | reviewflow review --diff -</code>" in html.replace("&#124;", "|")
