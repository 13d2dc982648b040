"""The ``reb`` claims profile: ResearchEnvBench's ``report.json`` contract.

synth's claims schema (``synth/formats/schemas/claims.schema.json``) requires no field: ``null``
or absent means "unknown". REB's report schema requires every field and limits
``env_tool`` to its list of tools; the profile, ``$defs.reb`` of the same schema file,
holds those rules. A task imported from REB (``synth task import-reb``: its folder has
``reb/manifest-entry.json``) uses the profile: a report that breaks REB's schema is
``invalid`` in ``run.json``. That is synth's rule: REB itself enforces its schema only as
the structured-output constraint of some agents' CLIs and rejects no report at scoring
time (a report of only ``python_path`` scores C5 as REB's validators score it).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from synth.formats.schemas import load_schema

PROFILES = ("reb",)
#: The file ``synth task import-reb`` writes in each task folder: the mark of a REB task.
ENTRY = Path("reb") / "manifest-entry.json"


def task_profile(task_dir: Path | None) -> str | None:
    """``"reb"`` for a task folder imported from REB, else None (synth's own rules)."""
    return "reb" if task_dir is not None and (task_dir / ENTRY).is_file() else None


@cache
def _validator(profile: str) -> Any:
    from jsonschema import Draft202012Validator

    schema = load_schema("claims")
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": f"#/$defs/{profile}"})


def profile_errors(claims: Any, profile: str) -> list[str]:
    """Errors of ``claims`` against the profile (synth's own schema is checked elsewhere),
    each ``$.path: message`` as :func:`synth.formats.schemas.validate` words them."""
    if profile not in PROFILES:
        raise KeyError(f"no claims profile {profile!r}; known: {', '.join(PROFILES)}")
    errors = sorted(_validator(profile).iter_errors(claims),
                    key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{e.json_path}: {e.message} (REB report.json)" for e in errors]
