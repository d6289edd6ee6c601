"""The code index's first build is shown on a terminal while the estimate waits for it (a large
tree parses for seconds), never on a stream that is no terminal nor with progress off, and a
second review, whose blobs are all indexed, says nothing."""

from __future__ import annotations

import io
from pathlib import Path

from flows.cli.indexing import indexing_progress
from reviewflow.config import Config
from reviewflow.cost.review import scope_estimate
from reviewflow.request import ReviewRequest
from reviewflow.select.scope import prepare
from tests.gitutil import GitRepo


class Terminal(io.StringIO):
    """What the CLI writes to, as a terminal (the callback writes only to one)."""

    def isatty(self) -> bool:
        return True


def _estimate(repo: GitRepo, home: Path, stream: io.StringIO) -> None:
    config = Config.model_validate({})
    request = ReviewRequest.from_flags(str(repo.root), home=str(home), commit="HEAD")
    scope = prepare(request, config.review)
    shown = indexing_progress(stream, config.output.progress)
    scope_estimate(scope, config, home=str(home), progress=shown)


def test_the_first_build_is_shown_then_nothing(repo: GitRepo, rf_home: Path) -> None:
    repo.write("util.py", "def helper(x):\n    return x + 1\n")
    repo.write("app.py", "from util import helper\n\nprint(helper(1))\n")
    repo.commit("base")
    repo.write("app.py", "from util import helper\n\nprint(helper(2))\n")
    repo.commit("change")
    first = Terminal()
    _estimate(repo, rf_home, first)
    assert first.getvalue() == "\rreviewflow: indexing 2/2 files\n"
    again = Terminal()
    _estimate(repo, rf_home, again)  # every blob is in the home's index now
    assert again.getvalue() == ""


def test_no_terminal_or_progress_off_shows_nothing() -> None:
    assert indexing_progress(io.StringIO()) is None
    assert indexing_progress(Terminal(), enabled=False) is None
    shown = indexing_progress(Terminal())
    assert shown is not None
