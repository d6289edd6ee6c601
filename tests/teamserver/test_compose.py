"""deployments/server/compose.yaml is the plain-process start in containers (not run here: no
Docker engine): both Prefect containers run start.sh with server.env, the image pins what
pyproject pins, and no secret is written in any of the files."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import Posture

SERVER = Path(__file__).resolve().parents[2] / "deployments" / "server"
PYPROJECT = SERVER.parents[1] / "pyproject.toml"


def _pins() -> dict[str, str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    listed = [*project["dependencies"], *project["optional-dependencies"]["server"]]
    return dict(pin.split("==", 1) for pin in listed if "==" in pin)


def test_both_prefect_containers_run_start_sh_with_server_env() -> None:
    compose = yaml.safe_load((SERVER / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "api", "services", "setup"}
    for part in ("api", "services", "setup"):
        assert services[part]["command"] == [part]
        assert services[part]["env_file"] == "server.env"
        env = services[part]["environment"]
        assert env["PREFECT_API_DATABASE_CONNECTION_URL"].startswith("postgresql+asyncpg://")
        assert env["REVIEWFLOW_REDIS_URL"] == "redis://redis:6379"
    assert services["api"]["ports"] == ["4200:4200"]
    dockerfile = (SERVER / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["sh", "/opt/server/start.sh"]' in dockerfile
    assert "COPY server.env start.sh crash_silent_runs.py /opt/server/" in dockerfile
    # The automation once the API is healthy, through the API's own name on compose's network.
    assert services["setup"]["environment"]["REVIEWFLOW_SETUP_API_URL"] == "http://api:4200/api"
    assert services["setup"]["depends_on"] == {"api": {"condition": "service_healthy"}}
    assert services["setup"]["restart"] == "on-failure"


def test_the_image_pins_what_pyproject_pins() -> None:
    pins = _pins()
    dockerfile = (SERVER / "Dockerfile").read_text()
    assert f"FROM prefecthq/prefect:{pins['prefect']}-python3.11" in dockerfile
    assert f"prefect-redis=={pins['prefect-redis']}" in dockerfile


def test_server_env_sets_every_redis_backend_and_holds_no_secret() -> None:
    settings = _server_env()
    assert settings["PREFECT_MESSAGING_BROKER"] == "prefect_redis.messaging"
    assert settings["PREFECT_MESSAGING_CACHE"] == "prefect_redis.messaging"
    assert settings["PREFECT_SERVER_EVENTS_CAUSAL_ORDERING"] == "prefect_redis.ordering"
    assert settings["PREFECT_SERVER_CONCURRENCY_LEASE_STORAGE"] == "prefect_redis.lease_storage"
    assert settings["PREFECT_SERVER_WORKER_CHANNEL_CLEANUP_QUEUE_STORAGE"] == (
        "prefect_redis.cleanup_queue"
    )
    assert (settings["DO_NOT_TRACK"], settings["PREFECT_SERVER_ANALYTICS_ENABLED"]) == (
        "1",
        "false",
    )
    assert settings["PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED"] == "false"  # issue 40
    assert "PREFECT_API_DATABASE_CONNECTION_URL" not in settings  # its password: environment only
    for path in SERVER.iterdir():  # no password written in any file (compose reads `.env`)
        assert not re.search(r"://[^/\s:@]+:(?!PASSWORD@)[^$@\s]+@", path.read_text()), path


def test_each_backend_setting_names_a_module_that_imports() -> None:
    import importlib

    for module in ("messaging", "ordering", "lease_storage", "cleanup_queue"):
        assert importlib.import_module(f"prefect_redis.{module}")


def _server_env() -> dict[str, str]:
    lines = (SERVER / "server.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def _crash_silent_runs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("crash", SERVER / "crash_silent_runs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_run_is_crashed_after_three_missed_heartbeats_of_the_deployments() -> None:
    deployed = yaml.safe_load((SERVER.parents[1] / "prefect.yaml").read_text())
    env = deployed["definitions"]["work_pools"]["reviewflow"]["job_variables"]["env"]
    heartbeat = int(env["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"])  # every deployment's runs
    assert heartbeat >= 30  # Prefect's shortest
    assert int(_server_env()["REVIEWFLOW_HEARTBEAT_WITHIN"]) == 3 * heartbeat


def test_the_automation_is_prefects_zombie_recipe() -> None:
    crash = _crash_silent_runs()
    made = crash.automation(90)
    trigger = made.trigger
    assert (trigger.posture, trigger.threshold) == (Posture.Proactive, 1)
    assert trigger.after == {"prefect.flow-run.heartbeat"}
    assert trigger.expect == {"prefect.flow-run.*"}  # any of its events: a heartbeat or an end
    assert trigger.for_each == {"prefect.resource.id"}  # each run on its own
    assert trigger.within == timedelta(seconds=90)
    [action] = made.actions
    assert isinstance(action, ChangeFlowRunState) and action.state == StateType.CRASHED
    assert crash.within_seconds("60") == 60
    with pytest.raises(ValueError, match="at least 60"):
        crash.within_seconds("59")
