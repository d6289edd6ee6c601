"""The review's context packs (`reviewflow.review.packs`): which files may fill one."""

from __future__ import annotations

import json
from pathlib import Path

from reviewflow.config import ReviewSettings
from reviewflow.request import ReviewRequest
from reviewflow.review.jobs import snapshot_of
from reviewflow.review.packs import context_packs
from reviewflow.select.scope import prepare
from tests.context.conftest import make_repo

FILES = {
    "pkg/util.py": "def helper(x):\n    return x * 2\n",
    "pkg/main.py": "from pkg.util import helper\n\n\ndef run():\n    return helper(3)\n",
    "pkg/side.py": "from pkg.util import helper\n\n\ndef side():\n    return helper(4)\n",
    "vendor/lib.py": "from pkg.util import helper\n\n\ndef vend():\n    return helper(5)\n",
    "third_party/x.py": "from pkg.util import helper\n\n\ndef x():\n    return helper(6)\n",
}


def _packs(root: Path, home: Path, rules: dict[str, list[str]] | None) -> str:
    if rules is not None:
        (root / ".reviewflow").mkdir(exist_ok=True)
        (root / ".reviewflow" / "rules.json").write_text(json.dumps(rules))
    (root / "pkg" / "util.py").write_text("def helper(x, k=2):\n    return x * k\n")
    request = ReviewRequest.from_flags(str(root), home=str(home))
    scope = prepare(request, ReviewSettings())
    packs = context_packs(scope, snapshot_of(scope), ReviewSettings(), str(home))
    return packs["pkg/util.py"].text


def test_vendored_and_user_excluded_files_never_fill_a_pack(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    text = _packs(repo.root, tmp_path / "home", None)
    assert "pkg/main.py:5" in text and "pkg/side.py:5" in text
    assert "vendor/" not in text and "third_party/" not in text  # the filter's defaults

    text = _packs(repo.root, tmp_path / "home", {"exclude": ["pkg/side.py"],
                                                 "include": ["vendor/**"]})  # fmt: skip
    assert "pkg/main.py:5" in text
    assert "pkg/side.py" not in text  # a user exclude
    assert "vendor/lib.py:5" in text  # a user include brings it back
    assert "third_party/" not in text


def test_off_builds_no_pack_and_no_index(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", FILES)
    (repo.root / "pkg" / "util.py").write_text("def helper(x, k=2):\n    return x * k\n")
    request = ReviewRequest.from_flags(str(repo.root), home=str(tmp_path / "home"))
    scope = prepare(request, ReviewSettings())
    off = ReviewSettings(context=False)
    assert context_packs(scope, snapshot_of(scope), off, str(tmp_path / "home")) == {}
    assert not (tmp_path / "home" / "index").exists()
