"""A fast yes/no check of a document against one of synth's JSON Schemas.

``jsonschema`` takes ~80-180 µs for one audit record, which is seconds for a 100,000-line
``audit.jsonl``. This compiles the small subset of draft 2020-12 that synth's schemas use
into closures, and each object schema of plain properties into one generated function
(a few µs a record). It is *sound, not complete*: when it says yes the
document is valid; when it says no, :func:`synth.formats.schemas.validate` (jsonschema) gives the
located messages, and its answer stands. A schema using a keyword outside the subset
cannot be compiled (:class:`Unsupported`), and callers use jsonschema alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

_IGNORED = frozenset({"$id", "$schema", "title", "description", "$defs", "default",
                      "examples", "$comment"})
#: Exact Python types of what ``json.loads`` returns (``type(True)`` is not ``int``).
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,), "null": (type(None),),
}


_ABSENT = object()


class Unsupported(Exception):
    """The schema uses a keyword this checker does not implement."""


def _type_set(value: str | list[str]) -> frozenset[type]:
    names = [value] if isinstance(value, str) else list(value)
    return frozenset(t for n in names for t in _TYPES[n])


def _same(a: Any, b: Any) -> bool:
    """JSON equality, strictly: ``1`` is not ``true`` and not ``1.0`` (stricter is sound)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _all_of(checks: tuple[Check, ...]) -> Check:
    if len(checks) == 1:
        return checks[0]

    def check(v: Any) -> bool:  # a loop, not all(<generator>): twice as fast here
        for c in checks:  # noqa: SIM110
            if not c(v):
                return False
        return True

    return check


def _string_condition(schema: Any) -> Check | None:
    """An ``if`` that only asks for required keys and string constants (a discriminator,
    e.g. ``type``/``source`` of an audit record), as one exact dict lookup; else None."""
    if not isinstance(schema, Mapping) or set(schema) - {"properties", "required"}:
        return None
    tests: list[tuple[str, frozenset[str]]] = []
    for key, sub in (schema.get("properties") or {}).items():
        options = [sub["const"]] if set(sub) == {"const"} else sub.get("enum") if set(
            sub) == {"enum"} else None
        if not options or not all(type(o) is str for o in options):
            return None
        tests.append((key, frozenset(options)))
    required = tuple(schema.get("required") or ())

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return True
        if any(k not in v for k in required):
            return False
        for key, allowed in tests:
            if key in v and (type(v[key]) is not str or v[key] not in allowed):
                return False
        return True

    return check


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A predicate that is True only for documents valid against ``schema``."""
    return _Compiler(schema).compile(schema)


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}
        self.compiling: set[str] = set()

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return lambda _v: True
        if schema is False:
            return lambda _v: False
        if not isinstance(schema, Mapping):
            raise Unsupported(f"schema {schema!r}")
        record = self._record(schema)
        if record is not None:
            return record
        checks = [self._keyword(k, v, schema) for k, v in schema.items()
                  if k not in _IGNORED and k not in ("then", "else")]
        return _all_of(tuple(c for c in checks if c is not None))

    def _record(self, schema: Mapping[str, Any]) -> Check | None:
        """An object schema made of ``type``, ``properties``, ``required`` (and
        ``additionalProperties: false``, ``allOf``) as one generated function: each
        property's check written inline where it is a type, a string constant or enum, a
        minimum, a pattern or typed items, else a call. A long audit log is 100,000 such
        records, and the closures' calls cost more than the checks. None for any other
        schema."""
        keys = set(schema) - _IGNORED
        if not keys <= {"type", "properties", "required", "additionalProperties", "allOf"} or (
                "properties" not in keys) or schema.get("additionalProperties", False):
            return None
        env: dict[str, Any] = {"_ABSENT": _ABSENT}
        body: list[str] = []
        allowed = _type_set(schema["type"]) if "type" in schema else None
        if (allowed is not None and dict not in allowed) or (
                allowed is None and "allOf" in keys):  # allOf would also judge non-objects
            return None
        indent = "    "
        if allowed is not None:  # another allowed type (``null``) needs nothing more
            env["_allowed"] = allowed
            body.append("    if type(v) is not dict: return type(v) in _allowed")
        else:
            body.append("    if type(v) is not dict: return True")
        # A required property's value is read without a default: a missing one raises
        # KeyError, which the function answers False (below). Required keys that are not
        # properties are looked for as a set.
        required = frozenset(schema.get("required") or ())
        if unnamed := required - set(schema["properties"]):
            env["_required"] = unnamed
            body.append(f"{indent}if not v.keys() >= _required: return False")
        for i, (key, sub) in enumerate(schema["properties"].items()):
            test = self._inline(sub, f"x{i}", env, f"p{i}")
            if key in required:
                body.append(f"{indent}x{i} = v[{key!r}]")
                body.append(f"{indent}if {test}: return False")
            else:
                body.append(f"{indent}x{i} = v.get({key!r}, _ABSENT)")
                body.append(f"{indent}if x{i} is not _ABSENT and ({test}): return False")
        if "additionalProperties" in schema:  # false: only the named properties
            env["_known"] = frozenset(schema["properties"])
            body.append(f"{indent}if not v.keys() <= _known: return False")
        if "allOf" in schema:
            env["_all_of"] = self._kw_allOf(schema["allOf"], schema)
            body.append(f"{indent}if not _all_of(v): return False")
        source = ("def check(v):\n" + body[0] + "\n    try:\n"
                  + "\n".join("    " + line for line in body[1:])
                  + "\n    except KeyError:\n        return False\n    return True\n")
        namespace: dict[str, Any] = {}
        exec(source, env, namespace)  # the source is made of this module's templates only
        check: Check = namespace["check"]
        return check

    def _inline(self, sub: Any, x: str, env: dict[str, Any], name: str) -> str:
        """A Python expression that is True when value ``x`` fails ``sub``."""
        keys = set(sub) - _IGNORED if isinstance(sub, Mapping) else None
        if keys == {"type"}:
            return self._type_test(sub["type"], x, env, name)
        if keys == {"const"} and type(sub["const"]) is str:
            return f"type({x}) is not str or {x} != {sub['const']!r}"
        if keys == {"enum"} and all(o is None or type(o) is str for o in sub["enum"]):
            env[f"{name}_e"] = frozenset(sub["enum"])
            return f"not ({x} is None or type({x}) is str) or {x} not in {name}_e"
        if keys == {"type", "minimum"} and isinstance(sub["minimum"], int | float):
            env[f"{name}_t"] = _type_set(sub["type"])
            return (f"type({x}) not in {name}_t or (type({x}) in (int, float) and "
                    f"{x} < {sub['minimum']!r})")
        if keys == {"type", "pattern"}:
            env[f"{name}_t"], env[f"{name}_p"] = _type_set(sub["type"]), re.compile(
                sub["pattern"])
            return (f"type({x}) not in {name}_t or (type({x}) is str and "
                    f"{name}_p.search({x}) is None)")
        if (keys == {"type", "items"} and isinstance(sub["items"], Mapping)
                and set(sub["items"]) - _IGNORED == {"type"}):
            env[f"{name}_t"], env[f"{name}_i"] = _type_set(sub["type"]), _type_set(
                sub["items"]["type"])
            return (f"type({x}) not in {name}_t or (type({x}) is list and "
                    f"not {name}_i.issuperset(map(type, {x})))")
        env[name] = self.compile(sub)
        return f"not {name}({x})"

    @staticmethod
    def _type_test(value: str | list[str], x: str, env: dict[str, Any], name: str) -> str:
        """An expression True when ``x`` is none of the JSON types ``value``."""
        types = _type_set(value)
        if len(types) == 1:
            (env[f"{name}_t"],) = types
            return f"type({x}) is not {name}_t"
        env[f"{name}_t"] = types
        return f"type({x}) not in {name}_t"

    def _ref(self, ref: str) -> Check:
        if not ref.startswith("#/"):
            raise Unsupported(f"$ref {ref}")
        if ref not in self.refs:
            self.refs[ref] = lambda _v: False  # a placeholder while compiling (recursion)
            self.compiling.add(ref)
            target: Any = self.root
            for part in ref[2:].split("/"):
                target = target[part]
            real = self.compile(target)
            self.refs[ref] = real
            self.compiling.discard(ref)
        if ref not in self.compiling:
            return self.refs[ref]
        # Looked up at call time: a recursive schema's placeholder is replaced by then.
        return lambda v: self.refs[ref](v)  # noqa: PLW0108

    def _keyword(self, key: str, value: Any, schema: Mapping[str, Any]) -> Check | None:
        method = getattr(self, "_kw_" + key.lstrip("$"), None)
        if method is None:
            raise Unsupported(f"keyword {key}")
        result: Check | None = method(value, schema)
        return result

    def _kw_ref(self, value: str, _s: Mapping[str, Any]) -> Check:
        return self._ref(value)

    def _kw_type(self, value: str | list[str], _s: Mapping[str, Any]) -> Check:
        allowed = _type_set(value)
        return lambda v: type(v) in allowed

    def _kw_const(self, value: Any, _s: Mapping[str, Any]) -> Check:
        if type(value) is str:
            return lambda v: type(v) is str and v == value
        return lambda v: _same(v, value)

    def _kw_enum(self, value: list[Any], _s: Mapping[str, Any]) -> Check:
        if all(x is None or type(x) is str for x in value):
            names = frozenset(value)
            return lambda v: (v is None or type(v) is str) and v in names
        return lambda v: any(_same(v, x) for x in value)

    def _kw_minimum(self, value: float, _s: Mapping[str, Any]) -> Check:
        return lambda v: type(v) not in (int, float) or v >= value

    def _kw_pattern(self, value: str, _s: Mapping[str, Any]) -> Check:
        rx = re.compile(value)
        return lambda v: not isinstance(v, str) or rx.search(v) is not None

    def _kw_minItems(self, value: int, _s: Mapping[str, Any]) -> Check:
        return lambda v: type(v) is not list or len(v) >= value

    def _kw_maxItems(self, value: int, _s: Mapping[str, Any]) -> Check:
        return lambda v: type(v) is not list or len(v) <= value

    def _kw_minProperties(self, value: int, _s: Mapping[str, Any]) -> Check:
        return lambda v: type(v) is not dict or len(v) >= value

    def _kw_not(self, value: Any, _s: Mapping[str, Any]) -> Check:
        # Negation is sound only over an exact check: string constants.
        if isinstance(value, Mapping) and set(value) == {"const"} and type(
                value["const"]) is str:
            const = value["const"]
            return lambda v: not (type(v) is str and v == const)
        raise Unsupported("not (other than of a string const)")

    def _kw_required(self, value: list[str], _s: Mapping[str, Any]) -> Check:
        names = frozenset(value)
        return lambda v: type(v) is not dict or v.keys() >= names

    def _kw_properties(self, value: Mapping[str, Any], _s: Mapping[str, Any]) -> Check:
        # Most properties only name their types: checked inline, without a call each.
        typed = tuple((k, _type_set(sub["type"])) for k, sub in value.items()
                      if isinstance(sub, Mapping) and set(sub) == {"type"})
        props = tuple((k, self.compile(sub)) for k, sub in value.items()
                      if not (isinstance(sub, Mapping) and set(sub) == {"type"}))

        def check(v: Any) -> bool:
            if type(v) is not dict:
                return True
            for key, allowed in typed:
                if key in v and type(v[key]) not in allowed:
                    return False
            for key, prop in props:  # noqa: SIM110 (a loop: faster than all())
                if key in v and not prop(v[key]):
                    return False
            return True

        return check

    def _kw_additionalProperties(self, value: Any, s: Mapping[str, Any]) -> Check:
        if "patternProperties" in s:
            raise Unsupported("additionalProperties with patternProperties")
        known = frozenset(s.get("properties") or ())
        if value is False:
            return lambda v: type(v) is not dict or v.keys() <= known
        extra = self.compile(value)
        return lambda v: not isinstance(v, dict) or all(
            extra(x) for k, x in v.items() if k not in known)

    def _kw_propertyNames(self, value: Any, _s: Mapping[str, Any]) -> Check:
        names = self.compile(value)
        return lambda v: not isinstance(v, dict) or all(names(k) for k in v)

    def _kw_items(self, value: Any, _s: Mapping[str, Any]) -> Check:
        item = self.compile(value)
        return lambda v: not isinstance(v, list) or all(item(x) for x in v)

    def _kw_allOf(self, value: list[Any], _s: Mapping[str, Any]) -> Check:
        return self._dispatch(value) or _all_of(tuple(self.compile(s) for s in value))

    def _dispatch(self, value: list[Any]) -> Check | None:
        """``allOf`` of ``if``/``then`` pairs whose conditions only test string constants
        of a few keys (an audit record's ``type`` and ``source``): which ``then``s apply
        depends only on those keys' values, so the list is looked up, not re-derived."""
        if not all(isinstance(s, Mapping) and set(s) == {"if", "then"} for s in value):
            return None
        conds = [_string_condition(s["if"]) for s in value]
        if not all(conds):
            return None
        keys = tuple(sorted({k for s in value for k in (*(s["if"].get("properties") or ()),
                                                          *(s["if"].get("required") or ()))}))
        pairs = [(c, self.compile(s["then"])) for c, s in zip(conds, value, strict=True)]
        seen: dict[tuple[Any, ...], tuple[Check, ...]] = {}
        absent = (_ABSENT,) * len(keys)

        def check(v: Any) -> bool:
            if type(v) is not dict:
                return True
            # The discriminators' values as the key: equal keys get the same conditions'
            # answers (each condition sees absence, a non-string, or which string).
            key = tuple(map(v.get, keys, absent))
            cacheable = True
            try:
                thens = seen.get(key)
            except TypeError:  # a list or an object there: not cached
                cacheable, thens = False, None
            if thens is None:
                # Conditions see only the discriminators: a stand-in with just those.
                probe = {k: v[k] for k in keys if k in v}
                thens = tuple(t for c, t in pairs if c(probe))  # type: ignore[misc]
                if cacheable and len(seen) < 256:
                    seen[key] = thens
            for t in thens:  # noqa: SIM110
                if not t(v):
                    return False
            return True

        return check

    def _kw_anyOf(self, value: list[Any], _s: Mapping[str, Any]) -> Check:
        parts = [self.compile(s) for s in value]
        return lambda v: any(p(v) for p in parts)

    def _kw_oneOf(self, value: list[Any], s: Mapping[str, Any]) -> Check:
        # Exactly one branch: checked as anyOf only where the branches' types are
        # disjoint (``array`` or ``null``), so that no value can satisfy two of them.
        seen: set[type] = set()
        for branch in value:
            if not isinstance(branch, Mapping) or "type" not in branch:
                raise Unsupported("oneOf of branches without a type")
            types = _type_set(branch["type"])
            if types & seen:
                raise Unsupported("oneOf of branches whose types overlap")
            seen |= types
        return self._kw_anyOf(value, s)

    def _kw_if(self, value: Any, s: Mapping[str, Any]) -> Check:
        cond = _string_condition(value) or self.compile(value)
        then = self.compile(s.get("then", True))
        other = self.compile(s.get("else", True))
        return lambda v: then(v) if cond(v) else other(v)
