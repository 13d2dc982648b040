"""The agent's self-report, ``/synth/claims.json`` (ResearchEnvBench ``report.json`` fields).

Known fields are type-checked; extra fields are allowed and kept; ``null`` means unknown.
Invalid or missing claims are recorded as such in ``run.json``, never guessed or repaired.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

ClaimsStatus = Literal["valid", "invalid", "missing"]

#: A self-report is a few hundred bytes; anything past this is refused, never loaded.
MAX_CLAIMS_BYTES = 1024 * 1024

#: field -> (accepted JSON types, description used in error messages)
KNOWN_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "python_path": ((str,), "a string"),
    "python_version": ((str,), "a string"),
    "torch_version": ((str,), "a string"),
    "cuda_available": ((bool,), "true or false"),
    "gpu_count": ((int,), "a whole number >= 0"),
    "ddp_expected_ok": ((bool,), "true or false"),
    "env_tool": ((str,), "a string"),
    "env_name": ((str,), "a string"),
    "notes": ((str, list), "a string or a list of strings"),
}


@dataclass(frozen=True)
class ClaimsCheck:
    status: ClaimsStatus
    errors: list[str] = field(default_factory=list)
    claims: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "errors": list(self.errors)}


def validate_claims(raw: bytes | None) -> ClaimsCheck:
    if raw is None:
        return ClaimsCheck("missing")
    if len(raw) > MAX_CLAIMS_BYTES:
        return ClaimsCheck("invalid", [f"{len(raw)} bytes, over the {MAX_CLAIMS_BYTES}-byte "
                                       "limit for a self-report"])
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return ClaimsCheck("invalid", [f"not valid JSON: {exc}"])
    if not isinstance(data, dict):
        return ClaimsCheck("invalid", [f"top level must be an object, not {type(data).__name__}"])
    errors: list[str] = []
    for name, (types, what) in KNOWN_FIELDS.items():
        if name not in data or data[name] is None:
            continue
        value = data[name]
        ok = isinstance(value, types)
        if int in types and isinstance(value, bool):
            ok = False  # JSON true is not a count
        if ok and name == "gpu_count" and value < 0:
            ok = False
        if ok and isinstance(value, list) and not all(isinstance(v, str) for v in value):
            ok = False
        if not ok:
            errors.append(f"`{name}` must be {what} or null (got {json.dumps(value)})")
    return ClaimsCheck("invalid" if errors else "valid", errors, data)
