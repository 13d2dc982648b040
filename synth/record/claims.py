"""The agent's self-report, ``/synth/claims.json`` (ResearchEnvBench ``report.json`` fields).

Known fields are checked against the claims JSON Schema; extra fields are allowed and kept;
``null`` means unknown.
Invalid or missing claims are recorded as such in ``run.json``, never guessed or repaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from synth.errors import InputFileError
from synth.formats.schemas import validate
from synth.formats.store import CLAIMS, parse_json

#: A self-report is a few hundred bytes; past this it is refused, never loaded.
MAX_CLAIMS_BYTES = CLAIMS.max_bytes

ClaimsStatus = Literal["valid", "invalid", "missing"]


@dataclass(frozen=True)
class ClaimsCheck:
    status: ClaimsStatus
    errors: list[str] = field(default_factory=list)
    claims: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "errors": list(self.errors)}


def validate_claims(raw: bytes | None) -> ClaimsCheck:
    """Check the agent's claims against ``synth/formats/schemas/claims.schema.json`` (the one
    declaration of the fields), within the store's size cap for a claims.json."""
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
    errors = validate(data, CLAIMS.schema)
    return ClaimsCheck("invalid" if errors else "valid", errors, data)
