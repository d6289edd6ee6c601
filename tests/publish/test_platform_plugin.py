"""The platform registry: a code review platform an installed package registers through the
entry point group `reviewflow.platforms` (here `tests/publish/forge/rf_forge`, with its small
fake `fake_forge.py`, and no line of reviewflow edited for it) is a `--publish` choice, a
`publish.target`, a CI the trust model and `--publish auto` recognize, a token stripped from a
review's children, and a review publishes to it like a built-in one; unknown, broken and
shadowing plugins fail plainly."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.main import main
from flows.cli.parser import build_parser
from reviewflow.ci import ci_variables
from reviewflow.config import PublishSettings
from reviewflow.errors import ConfigError
from reviewflow.platforms import PlatformSpec, builtin, platform_names, platforms, token_variables
from reviewflow.publish.platforms import spec_of
from reviewflow.publish.target import platform_of, request_ref
from reviewflow.pullrequest.markers import finding_fingerprint, summary_state
from tests.flows.reviewer import ScriptedReviewer
from tests.gitutil import GitRepo
from tests.publish import fake_forge
from tests.publish.scenario import NUMBER, PROJECT, SPLIT, Posted, PullRequest, use_env
from tests.wire_server import TEST_KEY, WireServer

PLUGIN_SOURCE = Path(__file__).with_name("forge")  # the plugin's package, as it would ship


def _install(site: Path, dist: str, entry_points: str) -> None:
    """A distribution's metadata on `site` as pip leaves it (its code is on sys.path)."""
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[reviewflow.platforms]\n{entry_points}\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory on sys.path for this test's distributions, their modules forgotten after."""
    path = tmp_path / "site"
    path.mkdir()
    monkeypatch.syspath_prepend(str(PLUGIN_SOURCE))
    monkeypatch.syspath_prepend(str(path))
    yield path
    for name in [n for n in sys.modules if n.startswith("rf_")]:
        del sys.modules[name]


@pytest.fixture
def forge(site: Path) -> Iterator[fake_forge.FakeForge]:
    _install(site, "rf_forge", "forge = rf_forge:PLATFORM")
    with fake_forge.FakeForge() as fake:
        yield fake


class ForgeSide:
    """The fake as `tests.publish.scenario.PullRequest` drives a platform."""

    name = "forge"

    def __init__(self, fake: fake_forge.FakeForge) -> None:
        self.fake = fake

    def open(self, repo: GitRepo, base: str, head: str) -> None:
        self.fake.add_request(PROJECT, NUMBER, base, head)

    def posted(self) -> list[Posted]:
        threads = self.fake.pulls[(PROJECT, NUMBER)]["threads"]
        return [
            Posted(
                str(t["id"]),
                finding_fingerprint(t["comments"][0]["body"]) or "",
                t["resolved"],
                tuple(c["body"] for c in t["comments"][1:]),
            )
            for t in threads
        ]

    def env(self, token: str | None = None) -> dict[str, str]:
        return {
            "FORGE_CI": "true",
            "FORGE_REPOSITORY": PROJECT,
            "FORGE_REQUEST": str(NUMBER),
            "FORGE_API_URL": self.fake.api_url,
            "FORGE_TOKEN": token or fake_forge.TOKEN,
        }


def _publish_choices() -> list[str]:
    review = build_parser()._subparsers._group_actions[0].choices["review"]  # type: ignore[union-attr]
    [action] = [a for a in review._actions if "--publish" in a.option_strings]
    return list(action.choices or ())


@pytest.mark.usefixtures("forge")
def test_a_plugin_platform_is_in_every_place_the_registry_feeds() -> None:
    assert platform_names() == (*sorted(builtin()), "forge")
    assert "forge" in _publish_choices() and _publish_choices()[:2] == ["off", "auto"]
    assert PublishSettings(target="forge").target == "forge"
    assert "FORGE_TOKEN" in token_variables()
    assert ci_variables({"FORGE_CI": "true"}) == ("FORGE_CI",)
    env = {"FORGE_CI": "true", "FORGE_REPOSITORY": "acme/app", "FORGE_REQUEST": "3"}
    env["FORGE_API_URL"] = "https://forge.example/api"
    assert platform_of(PublishSettings(target="auto"), env) == "forge"
    found = request_ref(PublishSettings(target="auto"), env)
    assert found is not None and found[0].platform == "forge" and found[0].number == 3
    assert spec_of("forge").noun == "change request"


@pytest.mark.usefixtures("prefect_harness")
def test_a_review_publishes_to_a_plugin_platform(
    forge: fake_forge.FakeForge,
    tmp_path: Path,
    wire: WireServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    side = ForgeSide(forge)
    pr = PullRequest.create(tmp_path, side)  # type: ignore[arg-type]
    use_env(monkeypatch, wire, side.env())
    wire.respond("openai", ScriptedReviewer({"app/settings.py": [SPLIT]}))
    out = tmp_path / "out"
    argv = ["review", "--repo", str(pr.repo.root), "--report-dir", str(out), "--console", "off"]
    assert main([*argv, "--no-progress", "--publish", "auto"]) == 1  # the finding gates
    [posted] = side.posted()
    assert posted.fingerprint and not posted.resolved
    [note] = forge.pulls[(PROJECT, NUMBER)]["notes"]
    assert summary_state(note["body"]) is not None and "change request" in note["body"]
    report = json.loads((out / "review-report.json").read_text())
    assert report["pull_request"]["platform"] == "forge"
    assert forge.count("post") == 1 and forge.count("note") == 1
    for path in [*out.iterdir(), *tmp_path.rglob("*.json")]:
        if path.is_file():
            text = path.read_bytes()
            assert fake_forge.TOKEN.encode() not in text and TEST_KEY.encode() not in text, path
    assert fake_forge.TOKEN not in capsys.readouterr().err

    assert main([*argv, "--no-progress", "--publish", "forge"]) == 1  # nothing new to post
    assert forge.count("post") == 1 and forge.count("edit") == 1


def test_an_unknown_platform_is_one_line_naming_what_is_accepted(
    rf_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ValueError, match="unknown platform 'forge'"):
        PublishSettings(target="forge")
    (rf_home / "config.yaml").write_text("publish:\n  target: forge\n")
    monkeypatch.setenv("REVIEWFLOW_MODEL_NAME", "m")
    assert main(["config", "test"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "publish.target" in err and "'forge'" in err, err
    assert "github" in err and "reviewflow.platforms" in err, err


def test_a_broken_plugin_is_named_when_it_is_used_and_never_breaks_a_listing(
    site: Path,
) -> None:
    _install(site, "rf_broken", "gone = rf_gone:PLATFORM\nodd = rf_forge.target:locate")
    assert {"gone", "odd"} <= set(platform_names())  # listing loads nothing
    assert ci_variables({"GITLAB_CI": "true"}) == ("GITLAB_CI",)
    assert set(platforms()) == set(builtin()) and "GITHUB_TOKEN" in token_variables()
    assert platform_of(PublishSettings(target="auto"), {"GITLAB_CI": "true"}) == "gitlab"
    with pytest.raises(ConfigError, match=r"the platform plugin gone \(rf_gone:PLATFORM\)"):
        spec_of("gone")
    with pytest.raises(ConfigError, match="is not a PlatformSpec named 'odd'"):
        PublishSettings(target="odd")


def test_a_plugin_cannot_replace_a_built_in_platform(site: Path) -> None:
    _install(site, "rf_shadow", "github = rf_shadow:PLATFORM")
    assert platform_names() == tuple(sorted(builtin()))
    assert spec_of("github") is builtin()["github"]
    assert "rf_shadow" not in sys.modules


def test_auto_asks_a_platform_before_those_whose_variables_its_ci_also_sets() -> None:
    order = list(platforms())
    assert order.index("gitea") < order.index("github")
    both = {"GITHUB_ACTIONS": "true", "GITEA_ACTIONS": "true"}
    assert platform_of(PublishSettings(target="auto"), both) == "gitea"


def test_every_built_in_platform_is_a_package_of_reviewflow_publish() -> None:
    root = Path(__file__).parents[2] / "reviewflow" / "publish"
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    assert {spec.locate.split(".")[2] for spec in builtin().values()} == packages
    for spec in builtin().values():
        assert spec.locator() and spec.locate.startswith(
            f"reviewflow.publish.{spec.locate.split('.')[2]}."
        )


def test_a_spec_with_an_unusable_name_or_path_is_refused() -> None:
    def spec(**changes: object) -> PlatformSpec:
        fields: dict[str, object] = {
            "name": "mine",
            "title": "Mine",
            "detect": lambda env: False,
            "locate": "m:f",
            "client": "m:C",
            "token_env": ("MINE_TOKEN",),
        }
        return PlatformSpec(**{**fields, **changes})  # type: ignore[arg-type]

    for name in ("My Forge", "auto", "off", "x"):
        with pytest.raises(ConfigError, match="not a lowercase word"):
            spec(name=name)
    with pytest.raises(ConfigError, match="locate is not module:attribute"):
        spec(locate="m.f")
    with pytest.raises(ConfigError, match="no token variable"):
        spec(token_env=())
