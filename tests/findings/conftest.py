"""A real repository whose last commit adds real defects, and candidate builders around it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from reviewflow.git.models import ChangeSpec, DiffMode, FileDiff
from reviewflow.git.repo import collect_change
from reviewflow.models import Candidate
from reviewflow.providers import ModelRequest, ModelResponse, ProviderPool
from reviewflow.review.records import Send
from tests.gitutil import GitRepo
from tests.wire_server import PROTOCOLS, WireServer

BILLING_BASE = '''"""Billing helpers."""

from decimal import Decimal


def total(items):
    return sum(item.price * item.qty for item in items)


def apply_discount(amount, percent):
    return amount - amount * percent / 100
'''

BILLING_NEW = '''"""Billing helpers."""

from decimal import Decimal


def total(items):
    return sum(item.price * item.qty for item in items)


def apply_discount(amount, percent):
    return amount - amount * percent / 100


def average_price(items):
    total_price = sum(item.price for item in items)
    return total_price / len(items)


def load_invoice(path):
    handle = open(path)
    data = handle.read()
    return parse_invoice(data)


def find_customer(db, name):
    query = "SELECT * FROM customers WHERE name = '%s'" % name
    return db.execute(query)


def first_item(items):
    if not items:
        return None
    return items[0]


def last_item(items):
    if not items:
        return None
    return items[len(items)]
'''

WORKER_BASE = """import threading


class Counter:
    def __init__(self):
        self.value = 0
"""

WORKER_NEW = """import threading


class Counter:
    def __init__(self):
        self.value = 0
        self.lock = threading.Lock()

    def increment(self):
        current = self.value
        self.value = current + 1
"""

SendTo = Callable[[str], Send]
"""The `send_to` fixture: a Send through a provider pool for one protocol."""

LINES = {
    # the real new-side lines of the defects in BILLING_NEW / WORKER_NEW
    "divide": 16,  # return total_price / len(items)
    "open": 20,  # handle = open(path)
    "sql": 26,  # query = ... % name
    "index": 39,  # return items[len(items)]
    "race": 10,  # current = self.value (worker)
}


def commit_change(repo: GitRepo, base: dict[str, str], new: dict[str, str]) -> dict[str, FileDiff]:
    """Commit `base`, then `new`; the reviewed files of the second commit by path."""
    for path, text in base.items():
        repo.write(path, text)
    repo.commit("base")
    for path, text in new.items():
        repo.write(path, text)
    sha = repo.commit("change")
    change = collect_change(repo.root, ChangeSpec(DiffMode.COMMIT, commit=sha))
    return {f.path: f for f in change.files}


@pytest.fixture
def change(repo: GitRepo) -> dict[str, FileDiff]:
    """app/billing.py and app/worker.py, each with defects the change adds."""
    return commit_change(
        repo,
        {"app/billing.py": BILLING_BASE, "app/worker.py": WORKER_BASE},
        {"app/billing.py": BILLING_NEW, "app/worker.py": WORKER_NEW},
    )


def make_candidate(**fields: Any) -> Candidate:
    """A well-formed candidate on app/billing.py; `fields` override."""
    values: dict[str, Any] = {
        "path": "app/billing.py",
        "file": "app/billing.py",
        "severity": "high",
        "category": "correctness",
        "title": "Division by zero",
        "problem": "average_price divides by len(items), which is 0 for an empty list.",
        "evidence": "return total_price / len(items)",
        "suggestion": "Return 0 for an empty list.",
        "confidence": 0.9,
    }
    values.update(fields)
    return Candidate(**values)


@pytest.fixture
def candidate() -> Callable[..., Candidate]:
    return make_candidate


def no_model(request: ModelRequest) -> ModelResponse:
    """A `Send` for stages that must not ask the model."""
    raise AssertionError(f"unexpected model request: {request.messages[0].content[:80]}")


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def send_to(wire: WireServer) -> Iterator[SendTo]:
    """`send_to(protocol)`: a Send through a provider pool on the wire server."""
    pools: list[ProviderPool] = []

    def make(protocol: str) -> Send:
        pool = ProviderPool(wire.settings(protocol), 1)
        pools.append(pool)
        return pool.complete

    yield make
    for pool in pools:
        pool.close()
