"""The results folder: ``cells.jsonl`` (one line per finished or crashed cell), the start
marker of each dispatched cell, and each cell's reports under ``cells/<id>/``.

Lines are appended whole (one ``write`` on an ``O_APPEND`` descriptor under an exclusive
``flock``), so concurrent writers never interleave and a killed bench leaves whole lines.
The latest line of a cell is the one that counts; a cell whose start marker has no line
was cut off (the bench was killed) and is recorded as crashed before it runs again.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from synth.errors import UsageError
from synth.util import atomic

CELLS = "cells.jsonl"
RECORD_FORMAT = 1


class ResultsFolder:
    def __init__(self, root: Path) -> None:
        self.root = root.absolute()
        if self.root.exists() and not self.root.is_dir():
            raise UsageError(f"-o {self.root} exists and is not a folder.")
        self.root.mkdir(parents=True, exist_ok=True)

    @property
    def cells_file(self) -> Path:
        return self.root / CELLS

    def cell_dir(self, cell_id: str) -> Path:
        return self.root / "cells" / cell_id

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode()
        fd = os.open(self.cells_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """Every whole line, in order; a torn last line (a crash mid-write) is skipped."""
        if not self.cells_file.is_file():
            return []
        out: list[dict[str, Any]] = []
        # A line ends at \n alone: a record may hold U+2028 or U+0085 unescaped.
        for number, raw in enumerate(self.cells_file.read_text("utf-8").split("\n"), 1):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError:
                continue
            if not isinstance(rec, dict) or "cell" not in rec:
                raise UsageError(f"{self.cells_file}:{number}: not a bench cell record.")
            out.append(rec)
        return out

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last record of each cell."""
        return {rec["cell"]: rec for rec in self.records()}

    def mark_started(self, cell_id: str, executor: str) -> None:
        atomic.write_json(self.cell_dir(cell_id) / "started.json", {
            "started": time.time(), "host": socket.gethostname(), "pid": os.getpid(),
            "executor": executor})

    def started(self, cell_id: str) -> dict[str, Any] | None:
        path = self.cell_dir(cell_id) / "started.json"
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None

    def write_files(self, cell_id: str, files: dict[str, str]) -> None:
        """A cell's reports, as gathered from wherever it ran."""
        for name, text in files.items():
            if "/" in name or name.startswith("."):
                continue
            atomic.write_text(self.cell_dir(cell_id) / name, text)
