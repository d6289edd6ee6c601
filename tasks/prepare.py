"""Stages 1 and 2, prepare_review: the change read from Git (or the given diff), its rules
loaded (from the trusted ref in CI) and its files kept or left out; and `Prepared`, that front
half as a flow is handed it (a CLI review's, from `reviewflow.entry`)."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, ConfigDict, SkipValidation, model_serializer

from reviewflow.config import ReviewSettings
from reviewflow.request import ReviewRequest
from reviewflow.review.packs import FileContext
from reviewflow.select.scope import Scope, prepare


class Prepared(BaseModel):
    """The front half as the CLI prepared it, handed to the flow in this process.

    Prefect stores a flow run's parameters in its database; this one is stored as its summary
    (the files kept and left out), never as the change itself, which can be a release branch's
    thousands of files, nor its context packs (source text). A run started from a deployment
    has none: its first task prepares. `packs`: the context packs the CLI's estimate counted
    (None: the index stage makes them)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    scope: SkipValidation[Scope]
    packs: SkipValidation[dict[str, FileContext]] | None = None

    @model_serializer
    def summary(self) -> dict[str, Any]:
        selection = self.scope.selection
        return {"kept": len(selection.kept), "excluded": len(selection.excluded)}


@task(name="prepare_review", cache_policy=NO_CACHE, retries=0)
def prepare_review(
    request: ReviewRequest, settings: ReviewSettings, handed: Prepared | None = None
) -> Prepared:
    """The front half as the CLI prepared it (`handed`), or prepared here; Git and rule errors
    fail the task (and the review) at once."""
    return handed if handed is not None else Prepared(scope=prepare(request, settings))
