"""The Dockerfile, prefect.yaml and the CI examples, checked without a Docker engine or a server.

The install steps themselves run in a fresh venv through `make image-check` (network: the
package index), which `.ci/run` calls after the test suite, followed by the image's
`reviewflow server prepare` (twice) in a fresh home.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import yaml
from packaging.requirements import Requirement

from flows.cli.parser import build_parser
from flows.deployed import ci_review
from flows.release import release_review
from flows.review_flow import review

ROOT = Path(__file__).resolve().parents[2]
HADOLINT = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")


def _instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    rows = [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]
    return [(row.split(None, 1)[0], row.split(None, 1)[1]) for row in rows]


def test_hadolint_passes() -> None:
    result = subprocess.run(
        [HADOLINT, "--failure-threshold", "info", "Dockerfile"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_image_is_slim_quiet_non_root_and_installs_pinned() -> None:
    steps = _instructions()
    assert steps[0] == ("FROM", "python:3.11-slim-bookworm")
    env = " ".join(arg for op, arg in steps if op == "ENV")
    assert "DO_NOT_TRACK=1" in env and "PREFECT_SERVER_ANALYTICS_ENABLED=false" in env
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert "install -y --no-install-recommends git" in runs
    assert "sh deployments/docker/install.sh" in runs
    install = (ROOT / "deployments/docker/install.sh").read_text()
    assert "--constraint deployments/docker/constraints.txt" in install
    lines = (ROOT / "deployments/docker/constraints.txt").read_text().splitlines()
    pins = [line for line in lines if line and not line.startswith("#")]
    assert "prefect==3.9.1" in pins and "prefect-dask==0.3.7" in pins
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+!-]+", pin) for pin in pins)
    assert [arg for op, arg in steps if op == "USER"] == ["10001"]
    # The managed Prefect home's first start at build time, as that user, in the image's home.
    prepare = steps.index(("RUN", "reviewflow server prepare"))
    assert steps.index(("USER", "10001")) < prepare
    assert "REVIEWFLOW_HOME=/home/reviewflow/.reviewflow" in env
    assert "--create-home" in runs and "useradd" in runs
    assert steps[-2] == ("ENTRYPOINT", '["reviewflow"]')
    assert "*" in (ROOT / ".dockerignore").read_text().splitlines()  # all not named: out


def test_prefect_yaml_deployments() -> None:
    text = (ROOT / "prefect.yaml").read_text()
    header = text[: text.index("\nname: ")]
    for name in ("PREFECT_API_URL", "REVIEWFLOW_CODE_DIR", "REVIEWFLOW_NIGHTLY_REPOSITORY"):
        assert f"#   {name} " in header  # what must be set before `prefect deploy`, at the top
    spec = yaml.safe_load(text)
    deployments = {d["name"]: d for d in spec["deployments"]}
    assert set(deployments) == {"ci-review", "nightly-release-review"}
    assert all(d["work_pool"]["name"] == "reviewflow" for d in deployments.values())
    nightly = deployments["nightly-release-review"]
    assert nightly["schedules"][0]["timezone"] == "UTC"
    assert nightly["parameters"]["branches"] == ["release/*"]
    # One run at a time, as docs/deployments.md says; one started meanwhile waits its turn.
    assert nightly["concurrency_limit"] == {"limit": 1, "collision_strategy": "ENQUEUE"}
    assert "concurrency_limit" not in deployments["ci-review"]  # CI jobs never wait on each other
    assert deployments["ci-review"]["entrypoint"] == "flows/deployed.py:ci_review"
    assert nightly["entrypoint"] == "flows/release.py:release_review"
    names = {*ci_review.parameters.properties, *release_review.parameters.properties}
    assert not [name for name in names if "key" in name or "token" in name or "secret" in name]
    assert ci_review.name == "ci-review" and release_review.name == "release-review"
    assert review.name == "review"  # the CLI's flow: no two flows share a name


def test_ci_examples_parse() -> None:
    for path in (
        "github/review-deployment.yml",
        "github/review-image.yml",
        "gitlab/.gitlab-ci.yml",
    ):
        assert yaml.safe_load((ROOT / "deployments" / path).read_text())
    workflow = yaml.safe_load((ROOT / "deployments/github/review-deployment.yml").read_text())
    [step] = workflow["jobs"]["review"]["steps"]
    command = shlex.split(step["run"])
    at = command.index("registry.example.com/tools/reviewflow:0.1.0")
    args = build_parser().parse_args(command[at + 1 :])  # the flags this CLI really has
    assert (args.command, args.deployment) == ("deployment-run", "ci-review/ci-review")
    assert [p.split("=")[0] for p in args.param] == ["repository", "from_ref", "to_ref"]
    image = (ROOT / "deployments/github/review-image.yml").read_text()
    assert "upload-sarif" in image and "--sarif reviewflow.sarif" in image
    assert "codequality:" in (ROOT / "deployments/gitlab/.gitlab-ci.yml").read_text()
    assert "archiveArtifacts" in (ROOT / "deployments/jenkins/Jenkinsfile").read_text()


def _closure(extras: set[str]) -> set[str]:
    """Every distribution reviewflow[extras] needs: its requirements as pyproject.toml has them,
    theirs read from the installed packages' metadata."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"]]
    for extra in extras:
        wanted += project["optional-dependencies"][extra]
    found: set[str] = set()
    todo = [(Requirement(raw).name, frozenset(Requirement(raw).extras)) for raw in wanted]
    found.update(_norm(dist) for dist, _ in todo)
    done: set[tuple[str, frozenset[str]]] = set()
    while todo:
        dist, wanted = todo.pop()
        if (_norm(dist), wanted) in done:
            continue
        done.add((_norm(dist), wanted))
        for raw in metadata.distribution(dist).requires or []:
            req = Requirement(raw)
            envs = [{"extra": extra} for extra in wanted] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                found.add(_norm(req.name))
                todo.append((req.name, frozenset(req.extras)))
    return found


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_image_has_the_azure_extra_and_pins_every_dependency() -> None:
    """Entra ID is how Azure users sign in: the image installs the azure extra, and the
    constraints pin everything reviewflow[dask,bedrock,azure] needs (nothing left to chance)."""
    install = (ROOT / "deployments/docker/install.sh").read_text()
    assert '".[dask,bedrock,azure]"' in install
    lines = (ROOT / "deployments/docker/constraints.txt").read_text().splitlines()
    pinned = {_norm(line.split("==")[0]) for line in lines if line and line[0] != "#"}
    needed = _closure({"dask", "bedrock", "azure"})
    assert {"azure-identity", "msal", "langcodes"} <= needed
    assert sorted(needed - pinned) == []
