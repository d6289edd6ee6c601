"""Content checks for the embedded system rule documents (reviewflow/rules/system/*/SKILL.md).

These tests parse every SKILL.md on their own (front matter between ``---`` lines) and resolve a
table of sample paths with a small local matcher, so the documents and their globs are guarded
independently of the real loader.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

import reviewflow.rules

SYSTEM_DIR = Path(reviewflow.rules.__file__).parent / "system"

KINDS = {"language", "target", "fallback"}
PRIORITY = {"target": 10, "language": 50, "fallback": 1000}
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MIN_BODY_LINES = 25
# Every tool-loop request of a file resends the rule: a body over this budget pushes a small
# review's prompt past the 50,000-character target (bench/prompt_size.py).
MAX_BODY_CHARS = 2200
MIN_ITEMS = 15

REQUIRED_LANGUAGES = {
    "python",
    "javascript-typescript",
    "java",
    "go",
    "kotlin",
    "rust",
    "c-cpp",
    "csharp",
    "ruby",
    "php",
    "shell",
}
REQUIRED_TARGETS = {
    "dockerfile",
    "github-actions",
    "gitlab-ci",
    "jenkinsfile",
    "kubernetes",
    "terraform",
}


@dataclass(frozen=True)
class RuleDoc:
    directory: str
    meta: dict[str, Any]
    body: str

    @property
    def name(self) -> str:
        return str(self.meta["name"])

    @property
    def metadata(self) -> dict[str, Any]:
        value = self.meta.get("metadata")
        return value if isinstance(value, dict) else {}


def parse_skill(path: Path) -> tuple[dict[str, Any], str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines and lines[0] == "---", f"{path}: must start with a '---' line"
    try:
        end = lines.index("---", 1)
    except ValueError:
        pytest.fail(f"{path}: front matter is not closed by a '---' line")
    meta = yaml.safe_load("\n".join(lines[1:end]))
    assert isinstance(meta, dict), f"{path}: front matter must be a mapping"
    return meta, "\n".join(lines[end + 1 :])


@cache
def load_docs() -> tuple[RuleDoc, ...]:
    docs = []
    for skill in sorted(SYSTEM_DIR.glob("*/SKILL.md")):
        meta, body = parse_skill(skill)
        docs.append(RuleDoc(directory=skill.parent.name, meta=meta, body=body))
    return tuple(docs)


def doc_ids() -> list[str]:
    return [d.directory for d in load_docs()]


# --- a small stand-in for the loader's matcher --------------------------------------------------

_BRACE_RE = re.compile(r"\{([^{}]*)\}")


def expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` groups (not nested) into every combination."""
    match = _BRACE_RE.search(pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    out: list[str] = []
    for choice in match.group(1).split(","):
        out.extend(expand_braces(head + choice + tail))
    return out


@cache
def compile_glob(pattern: str) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for expanded in expand_braces(pattern):
        regex, include = GitIgnoreSpecPattern.pattern_to_regex(expanded)
        assert regex is not None and include, f"unusable pattern {expanded!r}"
        compiled.append(re.compile(regex, re.IGNORECASE))
    return tuple(compiled)


def glob_matches(pattern: str, path: str) -> bool:
    for regex in compile_glob(pattern):
        m = regex.match(path)
        # A gitignore pattern also matches everything below a matching directory; a rule path
        # pattern must match the file itself.
        if m is not None and m.groupdict().get("ps_d") is None:
            return True
    return False


def resolve(path: str) -> str | None:
    docs = sorted(load_docs(), key=lambda d: (d.metadata["priority"], d.name))
    for doc in docs:
        if any(glob_matches(p, path) for p in doc.metadata["paths"]):
            return doc.name
    return None


# --- document shape ----------------------------------------------------------------------------


def test_documents_exist() -> None:
    assert SYSTEM_DIR.is_dir(), SYSTEM_DIR
    assert load_docs(), "no SKILL.md documents found"
    stray = [p.name for p in SYSTEM_DIR.iterdir() if p.is_dir() and not (p / "SKILL.md").is_file()]
    assert not stray, f"rule directories without SKILL.md: {stray}"


def test_required_rules_present() -> None:
    names = {d.name for d in load_docs()}
    missing = (REQUIRED_LANGUAGES | REQUIRED_TARGETS | {"general"}) - names
    assert not missing, f"missing system rules: {sorted(missing)}"


def test_names_unique() -> None:
    names = [d.name for d in load_docs()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("doc", load_docs(), ids=doc_ids())
def test_front_matter(doc: RuleDoc) -> None:
    assert set(doc.meta) <= {"name", "description", "metadata"}, sorted(doc.meta)
    assert doc.name == doc.directory
    assert NAME_RE.fullmatch(doc.name), doc.name
    description = doc.meta.get("description")
    assert isinstance(description, str) and description.strip()
    assert "\n" not in description.strip(), "description must be one line"
    assert len(description) <= 300

    metadata = doc.meta.get("metadata")
    assert isinstance(metadata, dict)
    assert set(metadata) <= {"kind", "paths", "priority"}, sorted(metadata)
    assert metadata.get("kind") in KINDS
    priority = metadata.get("priority")
    assert isinstance(priority, int) and not isinstance(priority, bool)
    assert priority == PRIORITY[metadata["kind"]]
    paths = metadata.get("paths")
    assert isinstance(paths, list) and paths
    for pattern in paths:
        assert isinstance(pattern, str) and pattern.strip() == pattern and pattern
        assert "\\" not in pattern, "use forward slashes"
        assert not pattern.startswith("/"), "patterns are repository-relative"
        assert "{" not in _BRACE_RE.sub("", pattern), f"nested or unbalanced braces: {pattern}"
        compile_glob(pattern)


@pytest.mark.parametrize("doc", load_docs(), ids=doc_ids())
def test_body(doc: RuleDoc) -> None:
    lines = [line for line in doc.body.splitlines() if line.strip()]
    assert len(lines) >= MIN_BODY_LINES, f"{doc.name}: only {len(lines)} non-empty body lines"
    assert lines[0].startswith("# "), "body opens with a heading"
    text = doc.body.lower()
    # The shared reporting guidance: changed lines only, evidence, no style findings.
    assert "changed" in text and "evidence" in text
    assert "do not report" in text and "style" in text
    # Only the fixed categories are named as categories.
    assert "correctness, security, concurrency, performance, compatibility, tests" in text
    assert "todo" not in text


@pytest.mark.parametrize("doc", load_docs(), ids=doc_ids())
def test_body_is_a_compact_checklist(doc: RuleDoc) -> None:
    body = doc.body.strip()
    assert len(body) <= MAX_BODY_CHARS, f"{doc.name}: body is {len(body)} characters"
    lines = [line for line in body.splitlines() if line.strip()]
    continued = [line for line in lines if line[0].isspace()]
    assert not continued, f"{doc.name}: one line per item, continued: {continued[:2]}"
    items = [line for line in lines if line.startswith("- ")]
    assert len(items) >= MIN_ITEMS, f"{doc.name}: only {len(items)} checklist items"


def test_exactly_one_fallback() -> None:
    fallbacks = [d for d in load_docs() if d.metadata["kind"] == "fallback"]
    assert [d.name for d in fallbacks] == ["general"]
    assert fallbacks[0].metadata["paths"] == ["**"]
    others = [d.name for d in load_docs() if "**" in d.metadata["paths"] and d.name != "general"]
    assert not others, f"only the fallback may match everything: {others}"


def test_kinds_of_required_rules() -> None:
    kinds = {d.name: d.metadata["kind"] for d in load_docs()}
    assert all(kinds[n] == "language" for n in REQUIRED_LANGUAGES)
    assert all(kinds[n] == "target" for n in REQUIRED_TARGETS)


# --- which rule a path gets ---------------------------------------------------------------------

SAMPLES = {
    # languages
    "src/app.py": "python",
    "typings/lib.pyi": "python",
    "web/App.TSX": "javascript-typescript",
    "web/index.mjs": "javascript-typescript",
    "server/config.cjs": "javascript-typescript",
    "types/api.d.mts": "javascript-typescript",
    "web/components/Card.vue": "javascript-typescript",
    "src/main/java/App.java": "java",
    "cmd/server/main.go": "go",
    "go.mod": "go",
    "app/src/Main.kt": "kotlin",
    "build.gradle.kts": "kotlin",
    "src/lib.rs": "rust",
    "crates/core/Cargo.toml": "rust",
    "src/io.c": "c-cpp",
    "include/io.h": "c-cpp",
    "src/engine.cpp": "c-cpp",
    "include/Engine.HPP": "c-cpp",
    "src/detail/impl.ipp": "c-cpp",
    "src/a.c++": "c-cpp",
    "src/Api/Program.cs": "csharp",
    "lib/x.rb": "ruby",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "lib/tasks/db.rake": "ruby",
    "mygem.gemspec": "ruby",
    "public/index.php": "php",
    "scripts/run.sh": "shell",
    "tools/setup.bash": "shell",
    "db/migrations/001_init.sql": "sql",
    "src/main/scala/App.scala": "scala",
    "build.sbt": "scala",
    "Sources/App/View.swift": "swift",
    # CI / infra targets
    ".github/workflows/ci.yml": "github-actions",
    ".github/workflows/Release.YAML": "github-actions",
    "sub/project/.github/workflows/ci.yaml": "github-actions",
    ".github/actions/setup/action.yml": "github-actions",
    "action.yaml": "github-actions",
    "deploy/.github/workflows/ci.yml": "github-actions",
    "Dockerfile": "dockerfile",
    "docker/api.Dockerfile": "dockerfile",
    "Dockerfile.dev": "dockerfile",
    "services/api/dockerfile": "dockerfile",
    "build/Containerfile": "dockerfile",
    "deploy/Dockerfile": "dockerfile",
    ".dockerignore": "dockerfile",
    "infra/main.tf": "terraform",
    "envs/prod.tfvars": "terraform",
    "live/prod/terragrunt.hcl": "terraform",
    "deploy/k8s/app.yaml": "kubernetes",
    "k8s/deployment.yml": "kubernetes",
    "charts/api/templates/deployment.yaml": "kubernetes",
    "charts/api/Chart.yaml": "kubernetes",
    "charts/api/values.yaml": "kubernetes",
    "overlays/prod/kustomization.yaml": "kubernetes",
    ".gitlab-ci.yml": "gitlab-ci",
    "ci/build.gitlab-ci.yml": "gitlab-ci",
    ".gitlab/ci/jobs/test.yml": "gitlab-ci",
    ".gitlab/ci/templates/deploy.yaml": "gitlab-ci",
    "Jenkinsfile": "jenkinsfile",
    "Jenkinsfile.release": "jenkinsfile",
    "ci/deploy.jenkinsfile": "jenkinsfile",
    "jenkins/lib/build.groovy": "jenkinsfile",
    "vars/deployApp.groovy": "jenkinsfile",
    # a target directory does not capture other languages
    "deploy/scripts/run.sh": "shell",
    "deploy/k8s/hook.py": "python",
    # fallback
    "README.rst": "general",
    "docs/index.md": "general",
    "config/settings.yaml": "general",
    ".github/dependabot.yml": "general",
    ".github/workflows/README.md": "general",
    "deployments/prefect.yaml": "general",
    "Makefile": "general",
    "package.json": "general",
    "src/app.py.orig": "general",
}


@pytest.mark.parametrize(("path", "expected"), sorted(SAMPLES.items()))
def test_sample_path_resolution(path: str, expected: str) -> None:
    assert resolve(path) == expected


def test_every_path_resolves() -> None:
    assert resolve("some/odd/file.unknown") == "general"
    assert resolve("x") == "general"


def test_matcher_does_not_match_inside_matching_directories() -> None:
    assert not glob_matches("*.py", "weird.py/README")
    assert glob_matches("*.py", "a/b/c.py")


def test_brace_expansion() -> None:
    assert expand_braces("a.{yml,yaml}") == ["a.yml", "a.yaml"]
    assert expand_braces("{x,y}/*.{c,h}") == ["x/*.c", "x/*.h", "y/*.c", "y/*.h"]
    assert expand_braces("plain") == ["plain"]
