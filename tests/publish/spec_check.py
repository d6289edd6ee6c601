"""A platform fake checked against its platform's official API description (swagger 2.0, copied
into `tests/data/schemas/`, its README names the sources): every request the fake answered is
an operation of the spec (path and method), its path, query and body parameters are the ones
the operation takes (what the client sent), and every success the fake answered itself (not a
scripted failure) carries a body the operation's response schema accepts, with no field the
schema does not name (what the fake invented).

    with FakeGitea() as gt:
        ...                                  # a pull request's life
        assert spec_violations(gt, gitea()) == []

Where the platform's wire departs from its spec's letter, the wire wins, each case named here:
swagger 2.0 has no `null`, so a property sent as `null` (Go's nil pointer, .NET's null) is
taken as absent; a field the platform sends beyond the spec is listed, with its source, in
`Spec.undeclared`. Azure DevOps' routes are case-insensitive, it takes `api-version` in the
`Accept` header too (as its library sends it), its lists go out as `{"count": n, "value":
[...]}` around the array the spec describes, its `Change.item` (typed `string`, the generic's
`T`) is a GitItem, and its `OPTIONS /_apis` (the resource locations) belongs to the location
service, not the Git spec, and is not checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from jsonschema import Draft4Validator

from tests.publish.fake_http import Exchange, PlatformFake

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"
Json = dict[str, Any]
LIST_KEYS = {"type", "items", "description"}  # a list schema that asks nothing of the list


class Checked(NamedTuple):
    """What a schema finds wrong in an instance (`Spec.checked`)."""

    errors: tuple[tuple[str, str], ...]  # (path, message)
    unnamed: tuple[str, ...]  # the paths of fields the schema does not name


@dataclass(frozen=True)
class Spec:
    """A swagger 2.0 document and how the platform's wire departs from its letter."""

    name: str
    document: Json
    base: str  # the served path's part before the spec's paths
    prefixed: bool = True  # the fake's prefix comes before `base` (False: it is a spec path's)
    ignore_case: bool = False
    wrapped_lists: bool = False
    unchecked: frozenset[tuple[str, str]] = frozenset()  # (method, path) of other services
    undeclared: dict[str, frozenset[str]] = field(default_factory=dict)  # definition: fields
    version_in_accept: bool = False  # `api-version` may come in `Accept` instead of the query
    _routes: list[tuple[re.Pattern[str], str]] = field(default_factory=list, compare=False)
    _checked: dict[tuple[int, str], Checked] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        flags = re.IGNORECASE if self.ignore_case else 0
        for template in self.document["paths"]:
            pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template))
            self._routes.append((re.compile(pattern, flags), template))

    def operation(self, method: str, path: str) -> tuple[str, Json, dict[str, str]] | None:
        """The template, operation and path values `method path` is, path values typed right;
        of several, the template with the most literal text."""
        found: list[tuple[int, str, Json, dict[str, str]]] = []
        for pattern, template in self._routes:
            match = pattern.fullmatch(path)
            op = self.document["paths"][template].get(method.lower())
            if match is None or op is None:
                continue
            values = match.groupdict()
            if not any(self.bad(p, values.get(p["name"])) for p in self.parameters(op, "path")):
                found.append((len(re.sub(r"\{\w+\}", "", template)), template, op, values))
        if not found:
            return None
        _, template, op, values = max(found, key=lambda f: f[0])
        return template, op, values

    def parameters(self, op: Json, where: str) -> list[Json]:
        resolved = [self.resolve(p) for p in op.get("parameters", [])]
        return [p for p in resolved if p.get("in") == where]

    def resolve(self, item: Json) -> Json:
        while "$ref" in item:
            item = self._pointer(item["$ref"])
        return item

    def validator(self, schema: Json) -> Draft4Validator:
        return Draft4Validator({"definitions": self.document["definitions"], "allOf": [schema]})

    def checked(self, schema: Json, instance: Any) -> Checked:
        """What `schema` (a node of this spec's document) finds wrong in `instance`: the
        schema's errors (path, message) and the fields it does not name. Once per schema and
        instance: a fake's lists are read again and again, mostly the same items."""
        key = (id(schema), json.dumps(instance, sort_keys=True))
        if key not in self._checked:
            errors = tuple(
                ("/".join(str(p) for p in error.absolute_path), error.message[:160])
                for error in self.validator(schema).iter_errors(instance)
            )
            self._checked[key] = Checked(errors, tuple(_unnamed(self, schema, instance, "")))
        return self._checked[key]

    def _pointer(self, ref: str) -> Json:
        node: Any = self.document
        for part in ref.removeprefix("#/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node  # type: ignore[no-any-return]

    def bad(self, parameter: Json, value: str | None) -> str | None:
        """Why `value` is not what the path or query parameter takes, or None."""
        if value is None:
            return "missing" if parameter.get("required") else None
        kind = parameter.get("type")
        if kind == "integer" and not re.fullmatch(r"-?\d+", value):
            return f"{value!r} is not an integer"
        if kind == "boolean" and value.lower() not in ("true", "false"):
            return f"{value!r} is not a boolean"
        if "enum" in parameter and value not in parameter["enum"]:
            return f"{value!r} is not one of {parameter['enum']}"
        return None


@cache
def gitea() -> Spec:
    """Gitea's API v1 (its template's placeholders filled as a server at the root fills them)."""
    text = (SCHEMAS / "gitea-v1_json.tmpl").read_text(encoding="utf-8")
    text = text.replace("{{.SwaggerAppVer}}", "1.28.0-dev").replace("{{.SwaggerAppSubUrl}}", "")
    # `User.MarshalJSON` (modules/structs/user.go) adds `username`, `login` again, for Gogs'
    # clients; the spec, generated from the struct, does not name it
    undeclared = {"User": frozenset({"username"})}
    return Spec("Gitea", json.loads(text), base="/api/v1", undeclared=undeclared)


@cache
def azure_devops() -> Spec:
    text = (SCHEMAS / "azure-devops-git-7.1.json").read_text(encoding="utf-8-sig")
    document = json.loads(text)
    # `Change<T>.item` is written `string` (T unresolved); a Git change's item is a GitItem,
    # as the service sends it and the azure-devops library reads it
    document["definitions"]["Change"]["properties"]["item"] = {"$ref": "#/definitions/GitItem"}
    unchecked = frozenset({("OPTIONS", "/_apis"), ("OPTIONS", "/_apis/")})
    return Spec(
        "Azure DevOps Git 7.1",
        document,
        base="",
        prefixed=False,  # the fake's prefix is the collection: the spec's `{organization}`
        ignore_case=True,
        wrapped_lists=True,
        unchecked=unchecked,
        version_in_accept=True,  # as the azure-devops library sends it
    )


def spec_violations(fake: PlatformFake, spec: Spec) -> list[str]:
    """What in the fake's exchanges so far the spec does not allow, one line each."""
    out: list[str] = []
    for exchange in fake.exchanges:
        request = exchange.request
        path = request.path.split("?")[0]
        base = (fake.prefix if spec.prefixed else "") + spec.base
        where = f"{request.method} {path}"
        if not path.startswith(base):
            out.append(f"{where}: not under {base}")
            continue
        path = path[len(base) :]
        if (request.method, path.removeprefix(fake.prefix)) in spec.unchecked:
            continue
        found = spec.operation(request.method, path)
        if found is None:
            out.append(f"{where}: no such operation in {spec.name}'s spec")
            continue
        template, op, _ = found
        where = f"{request.method} {template}"
        out += [f"{where}: {problem}" for problem in _request_problems(spec, op, exchange)]
        if 200 <= exchange.status < 300 and not exchange.scripted:
            out += [f"{where}: {problem}" for problem in _answer_problems(spec, op, exchange)]
    return out


def _request_problems(spec: Spec, op: Json, exchange: Exchange) -> Iterator[str]:
    request = exchange.request
    query = spec.parameters(op, "query")
    names = {p["name"].lower() if spec.ignore_case else p["name"] for p in query}
    for name in request.query:
        if (name.lower() if spec.ignore_case else name) not in names:
            yield f"the client sent query parameter {name!r} the operation does not take"
    for parameter in query:
        value = _lookup(request.query, parameter["name"], spec.ignore_case)
        if value is None and spec.version_in_accept and parameter["name"] == "api-version":
            _, _, value = request.headers.get("accept", "").partition("api-version=")
            value = value.split(";")[0].strip() or None
        bad = spec.bad(parameter, value)
        if bad is not None:
            yield f"query parameter {parameter['name']!r}: {bad}"
    [body] = spec.parameters(op, "body") or [None]
    if body is None:
        if request.body not in (None, ""):
            yield "the client sent a body the operation does not take"
    elif request.body is None:
        if body.get("required"):
            yield "the client sent no body, which the operation requires"
    else:
        yield from _schema_problems(spec, body["schema"], request.body, "request body")


def _answer_problems(spec: Spec, op: Json, exchange: Exchange) -> Iterator[str]:
    responses = op.get("responses", {})
    declared = responses.get(str(exchange.status)) or responses.get("default")
    if declared is None:
        yield f"answered HTTP {exchange.status}, which it does not (it answers {list(responses)})"
        return
    schema = spec.resolve(declared).get("schema")
    body = exchange.body
    if schema is None:
        if body not in (None, ""):
            yield f"answered a body where HTTP {exchange.status} has none"
        return
    schema = spec.resolve(schema)
    if spec.wrapped_lists and schema.get("type") == "array" and isinstance(body, dict):
        if set(body) - {"count", "value"}:
            yield f"a list answered with fields {sorted(set(body) - {'count', 'value'})}"
        body = body.get("value")
    yield from _schema_problems(spec, schema, body, "answer")


def _schema_problems(spec: Spec, schema: Json, instance: Any, what: str) -> Iterator[str]:
    instance = _without_nulls(instance)
    resolved = spec.resolve(schema)
    items = resolved.get("items")
    if isinstance(instance, list) and isinstance(items, dict) and set(resolved) <= LIST_KEYS:
        # a list of items (nothing else asked of the list itself): each item on its own
        for n, item in enumerate(instance):
            found = spec.checked(items, item)
            for at, message in found.errors:
                yield f"{what} at {n}{'/' if at else ''}{at}: {message}"
            for at in found.unnamed:
                yield f"{what} has field /{n}{at} the schema does not name"
        return
    found = spec.checked(schema, instance)
    for at, message in found.errors:
        yield f"{what} at {at or '(top)'}: {message}"
    for at in found.unnamed:
        yield f"{what} has field {at} the schema does not name"


def _unnamed(spec: Spec, schema: Json, instance: Any, at: str) -> Iterator[str]:
    """The fields of `instance` no `properties` of `schema` (its `allOf` too) names."""
    name = str(schema.get("$ref", "")).rpartition("/")[2]
    schema = spec.resolve(schema)
    if isinstance(instance, list) and "items" in schema:
        for n, item in enumerate(instance):
            yield from _unnamed(spec, schema["items"], item, f"{at}/{n}")
        return
    if not isinstance(instance, dict):
        return
    properties = _properties(spec, schema)
    if not properties:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, value in instance.items():
                yield from _unnamed(spec, extra, value, f"{at}/{key}")
        return
    for key, value in instance.items():
        if key in properties:
            yield from _unnamed(spec, properties[key], value, f"{at}/{key}")
        elif key not in spec.undeclared.get(name, ()):
            yield f"{at}/{key}"


def _properties(spec: Spec, schema: Json) -> Json:
    schema = spec.resolve(schema)
    merged: Json = {}
    for part in schema.get("allOf", []):
        merged.update(_properties(spec, part))
    merged.update(schema.get("properties", {}))
    return merged


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _lookup(query: dict[str, str], name: str, ignore_case: bool) -> str | None:
    if not ignore_case:
        return query.get(name)
    return next((v for k, v in query.items() if k.lower() == name.lower()), None)
