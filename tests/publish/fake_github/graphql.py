"""The fake GitHub's GraphQL: a small parser and the part of GitHub's schema publishing uses.

An answer holds exactly the fields the document selected (as GitHub's does); a field the schema
here lacks is an `undefinedField` error. Supported: `repository { pullRequest { reviewThreads {
nodes { comments } pageInfo } } }`, `node(id:)` of a review thread
(with inline fragments `... on Type`), and the mutations `resolveReviewThread`,
`unresolveReviewThread` and `addPullRequestReviewThreadReply`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.publish.fake_github.state import FieldError, ReviewComment, ReviewThread, Store, User

MAX_PAGE = 100
_TOKEN = re.compile(r'\s+|,|#[^\n]*|"(?:[^"\\]|\\.)*"|-?\d+|[A-Za-z_]\w*|\.\.\.|[{}()\[\]:$=!@]')


class SchemaError(Exception):
    """A document GitHub rejects before running it (answered with `errors` and no `data`)."""


@dataclass
class Field:
    name: str
    alias: str
    args: dict[str, Any] = field(default_factory=dict)
    selections: list[Field] = field(default_factory=list)


@dataclass
class Document:
    operation: str  # "query" or "mutation"
    fields: list[Field]


def _tokens(text: str) -> list[str]:
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise SchemaError(f"Parse error on {text[pos]!r} at offset {pos}")
        token, pos = match.group(), match.end()
        if token.strip() and token != "," and not token.startswith("#"):
            tokens.append(token)
    return tokens


class _Parser:
    def __init__(self, text: str, variables: dict[str, Any]) -> None:
        self.tokens = _tokens(text)
        self.pos, self.variables = 0, variables

    def peek(self) -> str:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if not token or (expected is not None and token != expected):
            raise SchemaError(f"Parse error on {token!r} (expected {expected or 'more'})")
        self.pos += 1
        return token

    def document(self) -> Document:
        operation = "query"
        if self.peek() in ("query", "mutation"):
            operation = self.take()
            if self.peek() not in ("(", "{"):
                self.take()  # the operation's name
            if self.peek() == "(":
                self.skip_group("(", ")")
        fields = self.selection_set()
        if self.peek():
            raise SchemaError("Parse error: one operation per document here")
        return Document(operation, fields)

    def skip_group(self, opening: str, closing: str) -> None:
        depth = 0
        while True:
            token = self.take()
            depth += (token == opening) - (token == closing)
            if depth == 0:
                return

    def selection_set(self) -> list[Field]:
        self.take("{")
        fields = []
        while self.peek() != "}":
            fields.append(self.field())
        self.take("}")
        return fields

    def field(self) -> Field:
        if self.peek() == "...":  # an inline fragment: `... on Type { fields }`
            self.take()
            self.take("on")
            return Field("...", self.take(), selections=self.selection_set())
        name = alias = self.take()
        if self.peek() == ":":
            self.take()
            name = self.take()
        found = Field(name, alias)
        if self.peek() == "(":
            self.take()
            while self.peek() != ")":
                key = self.take()
                self.take(":")
                found.args[key] = self.value()
            self.take(")")
        if self.peek() == "{":
            found.selections = self.selection_set()
        return found

    def value(self) -> Any:
        token = self.take()
        if token == "$":
            return self.variables.get(self.take())
        if token == "{":
            obj = {}
            while self.peek() != "}":
                key = self.take()
                self.take(":")
                obj[key] = self.value()
            self.take("}")
            return obj
        if token == "[":
            items = []
            while self.peek() != "]":
                items.append(self.value())
            self.take("]")
            return items
        if token.startswith('"'):
            return token[1:-1].encode().decode("unicode_escape")
        if token.lstrip("-").isdigit():
            return int(token)
        return {"true": True, "false": False, "null": None}.get(token, token)


def parse(query: str, variables: dict[str, Any] | None) -> Document:
    return _Parser(query, variables or {}).document()


def root_names(document: Document) -> list[str]:
    return [f.name for f in document.fields]


# An object: field name -> value, or a resolver taking the field's arguments.
Obj = dict[str, Any]


class _Run:
    """One execution: the errors of fields that failed (each then null)."""

    def __init__(self) -> None:
        self.errors: list[dict[str, Any]] = []

    def select(
        self, obj: Obj, selections: Sequence[Field], typename: str, path: list[str | int]
    ) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for sel in selections:
            if sel.name == "...":  # applies only to an object of its type
                if sel.alias == typename:
                    out.update(self.select(obj, sel.selections, typename, path))
                continue
            if sel.name not in obj:
                raise SchemaError(f"Field '{sel.name}' doesn't exist on type '{typename}'")
            here = [*path, sel.alias]
            try:
                value = obj[sel.name]
                value = value(sel.args) if callable(value) else value
                out[sel.alias] = self.shaped(value, sel, here)
            except FieldError as exc:
                out[sel.alias] = None
                self.errors.append({"type": exc.type, "path": here, "message": str(exc)})
        return out

    def shaped(self, value: Any, sel: Field, path: list[str | int]) -> Any:
        if isinstance(value, tuple):  # (typename, object)
            return self.select(value[1], sel.selections, value[0], path)
        if isinstance(value, list):
            return [self.shaped(item, sel, [*path, i]) for i, item in enumerate(value)]
        if isinstance(value, dict) and sel.selections:
            return self.select(value, sel.selections, sel.name, path)
        return value


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def connection(
    items: Sequence[tuple[str, Obj]], args: dict[str, Any], name: str
) -> tuple[str, Obj]:
    """A connection's page (`first`/`after`), as GitHub pages one."""
    first = args.get("first")
    if first is None:
        raise FieldError(
            "MISSING_PAGINATION_BOUNDARIES",
            "You must provide a `first` or `last` value to properly paginate the "
            f"`{name}` connection.",
        )
    if first > MAX_PAGE:
        raise FieldError(
            "EXCESSIVE_PAGINATION",
            f"Requesting {first} records on the `{name}` connection exceeds the `first` limit "
            f"of {MAX_PAGE} records.",
        )
    start = 0
    if args.get("after"):
        start = int(base64.b64decode(args["after"]).decode().rsplit(":", 1)[1]) + 1
    page = items[start : start + first]
    edges = [{"cursor": _cursor(start + i), "node": node} for i, node in enumerate(page)]
    info = {
        "hasNextPage": start + first < len(items),
        "hasPreviousPage": start > 0,
        "startCursor": _cursor(start) if page else None,
        "endCursor": _cursor(start + len(page) - 1) if page else None,
    }
    return f"{name}Connection", {
        "nodes": list(page),
        "edges": edges,
        "totalCount": len(items),
        "pageInfo": ("PageInfo", info),
    }


def _actor(user: User) -> tuple[str, Obj]:
    kind = "Bot" if user.bot else "User"
    return kind, {"login": user.graphql_login, "__typename": kind}


def _comment(comment: ReviewComment) -> tuple[str, Obj]:
    return "PullRequestReviewComment", {
        "id": comment.node_id,
        "databaseId": comment.id,
        "body": comment.body,
        "author": _actor(comment.author),
        "createdAt": comment.created_at,
    }


def _thread(thread: ReviewThread) -> tuple[str, Obj]:
    by = thread.resolved_by
    return "PullRequestReviewThread", {
        "id": thread.id,
        "isResolved": thread.resolved,
        "isOutdated": False,
        "path": thread.path,
        "line": thread.line,
        "startLine": thread.start_line,
        # `resolvedBy` is a User: null when a bot (GitHub Actions' token) resolved the thread
        "resolvedBy": _actor(by) if by is not None and not by.bot else None,
        "comments": lambda a: connection([_comment(c) for c in thread.comments], a, "comments"),
    }


def query_root(store: Store) -> Obj:
    def repository(args: dict[str, Any]) -> tuple[str, Obj]:
        name = f"{args.get('owner')}/{args.get('name')}"
        if not any(repo == name for repo, _ in store.pulls):
            raise FieldError(
                "NOT_FOUND", f"Could not resolve to a Repository with the name '{name}'."
            )
        return "Repository", {"nameWithOwner": name, "pullRequest": lambda a: pull(name, a)}

    def pull(repo: str, args: dict[str, Any]) -> tuple[str, Obj]:
        number = args.get("number")
        if not isinstance(number, int) or (repo, number) not in store.pulls:
            raise FieldError(
                "NOT_FOUND", f"Could not resolve to a PullRequest with the number of {number}."
            )
        threads = [_thread(t) for t in store.pull_threads(repo, number)]
        return "PullRequest", {
            "number": number,
            "reviewThreads": lambda a: connection(threads, a, "reviewThreads"),
        }

    def node(args: dict[str, Any]) -> tuple[str, Obj]:
        return _thread(store.thread(str(args.get("id"))))

    return {"repository": repository, "node": node}


def mutation_root(store: Store, user: User) -> Obj:
    def writable(args: dict[str, Any], key: str) -> ReviewThread:
        if user.read_only:
            raise FieldError("FORBIDDEN", "Resource not accessible by integration")
        return store.thread(str((args.get("input") or {}).get(key)))

    def resolve(args: dict[str, Any], resolved: bool) -> Obj:
        thread = writable(args, "threadId")
        thread.resolved, thread.resolved_by = resolved, user if resolved else None
        return {"thread": _thread(thread), "clientMutationId": None}

    def reply(args: dict[str, Any]) -> Obj:
        thread = writable(args, "pullRequestReviewThreadId")
        body = str((args.get("input") or {}).get("body") or "")
        if not body:
            raise FieldError("UNPROCESSABLE", "Body can't be blank")
        return {"comment": _comment(store.reply(thread, user, body)), "clientMutationId": None}

    resolvers: dict[str, Callable[[dict[str, Any]], Obj]] = {
        "resolveReviewThread": lambda a: resolve(a, True),
        "unresolveReviewThread": lambda a: resolve(a, False),
        "addPullRequestReviewThreadReply": reply,
    }
    return resolvers


def execute(document: Document, store: Store, user: User) -> dict[str, Any]:
    """Run `document`, root field after root field; a field that fails is null, with its error."""
    root = query_root(store) if document.operation == "query" else mutation_root(store, user)
    run = _Run()
    data = run.select(root, document.fields, document.operation.title(), [])
    return {"data": data, "errors": run.errors} if run.errors else {"data": data}
