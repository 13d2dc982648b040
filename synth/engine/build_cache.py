"""The BuildKit cache records synth's own builds made, so that gc prunes those and no others.

BuildKit's cache records carry no labels, so ownership is kept beside the artifacts: each
build run through :func:`tracked` appends the IDs of the records that appeared while it ran
to ``<artifacts>/build-cache.jsonl``. ``synth gc`` removes exactly the records its scope's
ledgers name (``docker builder prune --filter id=…``), skipping any in use, and forgets the
ones that are gone. A record another build created on the same engine during one of synth's
builds is counted as synth's; losing it costs that build a cache miss, never data.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from synth.util.atomic import write_text

LEDGER_NAME = "build-cache.jsonl"
_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_SIZE_RE = re.compile(r"^\s*([0-9.]+)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class CacheRecord:
    id: str
    size: int
    in_use: bool


def _size(text: str) -> int:
    m = _SIZE_RE.match(text)
    if not m:
        return 0
    return int(float(m[1]) * _UNITS.get(m[2].upper() or "B", 1))


def list_records(cli: str) -> dict[str, CacheRecord] | None:
    """The engine's build-cache records, or None when the engine cannot say."""
    try:
        out = subprocess.run([cli, "system", "df", "-v", "--format", "{{json .BuildCache}}"],
                             capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    try:
        rows = json.loads(out.stdout.strip() or "[]") or []
    except json.JSONDecodeError:
        return None
    records: dict[str, CacheRecord] = {}
    for row in rows:
        if isinstance(row, dict) and isinstance(row.get("ID"), str):
            records[row["ID"]] = CacheRecord(
                row["ID"], _size(str(row.get("Size", ""))),
                str(row.get("InUse", "false")).lower() == "true")
    return records


class Ledger:
    """``<artifacts>/build-cache.jsonl``: one JSON object per line, ``{"id": …}``."""

    def __init__(self, artifacts_dir: Path) -> None:
        self.path = artifacts_dir / LEDGER_NAME

    def ids(self) -> list[str]:
        try:
            text = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        seen: dict[str, None] = {}
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line from a killed build: skip it
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                seen[entry["id"]] = None
        return list(seen)

    def add(self, ids: Iterable[str]) -> None:
        lines = "".join(json.dumps({"id": i}) + "\n" for i in sorted(ids))
        if not lines:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(lines)

    def keep_only(self, ids: Iterable[str]) -> None:
        keep = sorted(set(ids))
        if not keep:
            self.path.unlink(missing_ok=True)
            return
        write_text(self.path, "".join(json.dumps({"id": i}) + "\n" for i in keep))


@contextmanager
def tracked(cli: str, artifacts_dir: Path) -> Iterator[None]:
    """Record the cache records that appear while the body (one build) runs."""
    before = list_records(cli)
    try:
        yield
    finally:
        after = list_records(cli) if before is not None else None
        if before is not None and after is not None:
            Ledger(artifacts_dir).add(set(after) - set(before))


@dataclass(frozen=True)
class Pruned:
    ids: list[str]
    size: int


#: Passes of :func:`_prune_ids` at most: one per level of records that parent others.
_PRUNE_PASSES = 16


def _prune_ids(cli: str, ids: list[str]) -> dict[str, CacheRecord] | None:
    """Remove the records ``ids``; the records left after (None: the list failed). The
    engine keeps a record while a record made from it is there, so a record comes out in
    the pass after the ones made from it: passes run until one removes nothing."""
    pending, left = ids, None  # the loop runs at least once
    for _ in range(_PRUNE_PASSES):
        for rid in pending:  # the engine takes one value per filter key
            subprocess.run([cli, "builder", "prune", "--all", "--force", "--filter",
                            f"id={rid}"], capture_output=True, timeout=600, check=False)
        left = list_records(cli)
        if left is None:
            return None
        still = [i for i in pending if i in left]
        if not still or len(still) == len(pending):
            break
        pending = still
    return left


def prune(cli: str, artifacts_dirs: Iterable[Path], *, dry_run: bool = False) -> Pruned:
    """Remove the unused records the ledgers of ``artifacts_dirs`` name."""
    records = list_records(cli)
    if records is None:
        return Pruned([], 0)
    removed: list[str] = []
    size = 0
    for folder in sorted(set(artifacts_dirs)):
        ledger = Ledger(folder)
        owned = ledger.ids()
        targets = [i for i in owned if i in records and not records[i].in_use]
        if not dry_run:
            left = _prune_ids(cli, targets)
            if left is not None:
                ledger.keep_only(i for i in owned if i in left)
                targets = [i for i in targets if i not in left]
        removed += targets
        size += sum(records[i].size for i in targets)
    return Pruned(removed, size)
