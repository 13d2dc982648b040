"""The agent's self-report, ``/synth/claims.json`` (ResearchEnvBench ``report.json`` fields).

Known fields are checked by their type (:class:`synth.formats.claims.Claims`, as the store
reads the file); extra fields are allowed and kept; ``null`` means unknown.
Invalid or missing claims are recorded as such in ``run.json``, never guessed or repaired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Protocol

from synth.errors import InputFileError
from synth.formats.schemas import load_schema, validate
from synth.formats.store import CLAIMS, decode, parse_json

#: A self-report is a few hundred bytes; past this it is refused, never loaded.
MAX_CLAIMS_BYTES = CLAIMS.max_bytes

ClaimsStatus = Literal["valid", "invalid", "missing"]


@cache
def report_fields() -> tuple[str, ...]:
    """The self-report's fields in ResearchEnvBench's order (claims.json is compatible with
    REB's ``report.json``): the claims schema's ``reb`` profile required list, which an
    agent's prompt names (the schema types each; :class:`synth.formats.claims.Claims` reads
    them)."""
    return tuple(load_schema("claims")["$defs"]["reb"]["required"])


@dataclass(frozen=True)
class ClaimsCheck:
    status: ClaimsStatus
    errors: list[str] = field(default_factory=list)
    claims: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "errors": list(self.errors)}


def validate_claims(raw: bytes | None) -> ClaimsCheck:
    """Check the agent's claims as the store reads them (:class:`synth.formats.claims.Claims`,
    the one declaration of the fields; its published schema words the errors), within the
    store's size cap for a claims.json."""
    if raw is None:
        return ClaimsCheck("missing")
    if len(raw) > CLAIMS.max_bytes:
        return ClaimsCheck("invalid", [f"{len(raw)} bytes, over the {CLAIMS.max_bytes}-byte "
                                       "limit of a claims.json"])
    try:
        data = parse_json(raw.decode("utf-8"), "claims.json")
    except UnicodeDecodeError as exc:
        return ClaimsCheck("invalid", [f"not UTF-8 (byte {exc.start})"])
    except InputFileError as exc:
        return ClaimsCheck("invalid", [exc.message.removeprefix("claims.json: ")])
    if not isinstance(data, dict):
        return ClaimsCheck("invalid", [f"top level must be an object, not {type(data).__name__}"])
    try:  # the type decides, as the store reads the file later
        decode(raw, CLAIMS, "claims.json")
    except InputFileError as exc:
        # jsonschema words every error (the store stops at the first); where it finds none
        # (an integer written 2.0, which JSON Schema takes), the type's error stands.
        errors = validate(data, CLAIMS.schema) or [exc.message.removeprefix("claims.json: ")]
        return ClaimsCheck("invalid", errors, data)
    return ClaimsCheck("valid", [], data)


class _Readable(Protocol):
    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None: ...


def read_claims(container: _Readable, paths: Sequence[str]) -> bytes | None:
    """The first of ``paths`` the container holds as a regular file (synth's
    ``/synth/claims.json`` first, then the task profile's names), read through the
    engine's archive API, which never follows a symlink (a link reads as absent)."""
    for path in paths:
        raw = container.read_file(path, max_bytes=MAX_CLAIMS_BYTES)
        if raw is not None:
            return raw
    return None


def check_claims(raw: bytes | None,
                 profile_errors: Callable[[dict[str, Any]], list[str]]) -> ClaimsCheck:
    """synth's check of the claims, then the task profile's rules (REB's report.json for a
    task imported from ResearchEnvBench)."""
    check = validate_claims(raw)
    if check.claims is None:
        return check
    errors = profile_errors(check.claims)
    if not errors:
        return check
    return ClaimsCheck("invalid", [*check.errors, *errors], check.claims)
