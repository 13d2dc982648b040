"""Which levels REB scores for a repository: ``scripts_repos_test_categories.csv``.

REB's categories file has one row per repository (``repo_slug`` ``owner@repo``, ``repo``
``owner/repo``, ``git_link``, ``commit``) and, per hardware level, ``supports_cpu``,
``supports_single_gpu``, ``supports_multi_gpu`` (``yes``/``no``) with the reason of a
``no`` in ``<level>_skip_reason`` (``repo_not_supported`` where the cell is blank). C1 is
``supports_cpu``, C3 ``supports_single_gpu``, C4 ``supports_multi_gpu``; C0, C2 and C5 apply
to every repository (REB's C2 denominator is all 44, even a repository with no GPU level).

Two readers in REB disagree on a blank or odd value: ``m2`` skips a stage unless the value is
``yes``, ``m5`` (which makes the tables) drops a level from the denominator only for
``no``/``n``/``false``/``0``. The tables decide, so this module follows ``m5``; a repository
missing from the file counts everywhere, as in ``m5``. The ``category`` column is
informational and read by no REB code; a reason cell on a supported level means nothing.
The row is found as ``m2`` finds it: by ``repo_slug``, then ``repo``, then ``git_link``.
Pure: no file is read here but the one named.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.errors import TaskError

CATEGORIES = Path("scripts_repos_test_categories.csv")
#: synth level -> (REB stage, the CSV's support column, its reason column).
LEVEL_COLUMNS = {"C1": ("cpu", "supports_cpu", "cpu_skip_reason"),
                 "C3": ("single_gpu", "supports_single_gpu", "single_gpu_skip_reason"),
                 "C4": ("multi_gpu", "supports_multi_gpu", "multi_gpu_skip_reason")}
ALWAYS = ("C0", "C2", "C5")
LEVELS = ("C0", "C1", "C2", "C3", "C4", "C5")
_REQUIRED = ("repo_slug", "repo", "git_link", *(c for _, c, _ in LEVEL_COLUMNS.values()))
_NO = frozenset({"no", "n", "false", "0"})
DEFAULT_REASON = "repo_not_supported"


@dataclass(frozen=True)
class LevelSupport:
    supported: bool
    #: REB's reason for an unsupported level (``repo_not_supported``, ``not_applicable``).
    reason: str | None = None
    #: The REB stage whose results the level is (None: C0, C2, C5 have no CSV column).
    stage: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"supported": self.supported, "reason": self.reason}


def read_rows(path: Path) -> list[dict[str, str]]:
    """The file's rows (values stripped), or [] where there is no file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"{path}: cannot be read: {exc}") from exc
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise TaskError(f"{path}: not REB's categories file: column(s) {', '.join(missing)} "
                        "missing.")
    return [{str(k): (v or "").strip() for k, v in row.items() if k is not None}
            for row in reader]


def find_row(rows: Sequence[Mapping[str, str]], slug: str,
             repo_url: str) -> Mapping[str, str] | None:
    """The row of ``slug`` (``owner@repo``) or ``repo_url``, as REB's ``m2`` finds it."""
    full = slug.replace("@", "/", 1)
    url = repo_url.strip().removesuffix(".git").rstrip("/")
    for key, want in (("repo_slug", slug), ("repo", full)):
        for row in rows:
            if row.get(key, "") == want:
                return row
    return next((r for r in rows if r.get("git_link", "").rstrip("/") == url), None)


def supports(row: Mapping[str, str] | None) -> dict[str, LevelSupport]:
    """Level -> whether REB scores it for this row (None: no row, every level applies)."""
    out = {lv: LevelSupport(True) for lv in ALWAYS}
    for level, (stage, column, reason) in LEVEL_COLUMNS.items():
        value = (row or {}).get(column, "").strip().lower()
        if row is not None and value in _NO:
            out[level] = LevelSupport(False, row.get(reason) or DEFAULT_REASON, stage)
        else:
            out[level] = LevelSupport(True, None, stage)
    return {lv: out[lv] for lv in LEVELS}


def not_applicable_reason(level: str, support: LevelSupport) -> str:
    """The words a task's ``[not_applicable]`` gives an unsupported level."""
    _, column, _ = LEVEL_COLUMNS[level]
    return (f"REB: {support.reason} ({column} = no in "
            f"{CATEGORIES.name}; REB does not score this level for the repository)")


def stage_skips(applicability: Mapping[str, Any]) -> dict[str, str]:
    """REB stage -> skip reason, for the levels ``applicability`` (as written to
    ``reb/applicability.json``) marks unsupported: what REB's post-run override uses."""
    levels = applicability.get("levels") if isinstance(applicability, Mapping) else None
    out: dict[str, str] = {}
    for level, (stage, _, _) in LEVEL_COLUMNS.items():
        entry = (levels or {}).get(level)
        if isinstance(entry, Mapping) and entry.get("supported") is False:
            out[stage] = str(entry.get("reason") or DEFAULT_REASON)
    return out
