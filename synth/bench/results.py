"""The results folder: ``cells.jsonl`` (one line per finished or crashed cell), the start
marker of each dispatched cell, and each cell's reports under ``cells/<id>/``.

Lines are appended whole (one ``write`` on an ``O_APPEND`` descriptor under an exclusive
``flock``), so concurrent writers never interleave and a killed bench leaves whole lines.
The latest line of a cell is the one that counts; a cell whose start marker has no line
was cut off (the bench was killed) and is recorded as crashed before it runs again.

A results folder may be damaged (a full disk, a copy, a hand edit) or come from elsewhere:
it is read as untrusted. ``cells.jsonl`` and each ``started.json`` are read as regular files
(never through a link, never a FIFO) under a size cap; a line that is torn, not UTF-8, not
JSON or not a cell record of the right types is skipped with a warning naming it (the
cell then runs again); a link or a folder where the bench keeps a file, and a link where
it keeps a folder, is an error naming it; a cell that runs again starts from an empty
cell folder. Nothing here ends in a traceback.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synth.errors import InputFileError, SynthError, UsageError
from synth.util import atomic, safe_io

CELLS = "cells.jsonl"
RECORD_FORMAT = 1
#: What the bench keeps at the top of the folder (each a regular file where present).
TOP_FILES = (CELLS, "summary.json", "summary.md", "report.html")
MAX_CELLS_BYTES = 512 * safe_io.MiB
MAX_STARTED_BYTES = 64 * 1024
Warn = Callable[[str], None]


def record_problem(rec: object) -> str | None:
    """Why a parsed line is not a cell record the summary can read, or None."""
    if not isinstance(rec, dict):
        return f"not an object (a {type(rec).__name__})"
    for key in ("cell", "agent", "task", "status"):
        if not isinstance(rec.get(key), str) or not rec[key]:
            return f"`{key}` is not a non-empty string"
    for key in ("started", "ended"):
        if key in rec and not _number(rec[key]):
            return f"`{key}` is not a number"
    for key in ("times", "verify", "export", "run"):
        if rec.get(key) is not None and not isinstance(rec[key], dict):
            return f"`{key}` is not an object"
    for key, value in (("error", rec.get("error")),
                       ("verify.error", (rec.get("verify") or {}).get("error")),
                       ("export.error", (rec.get("export") or {}).get("error"))):
        if value is not None and not isinstance(value, str):
            return f"`{key}` is not a string"
    if not all(_number(v) for v in (rec.get("times") or {}).values()):
        return "a value of `times` is not a number"
    return _verify_problem(rec.get("verify") or {})


def _verify_problem(v: dict[str, Any]) -> str | None:
    levels, highest = v.get("levels") or {}, v.get("highest") or {}
    if not isinstance(levels, dict) or not all(
            isinstance(t, dict) and all(isinstance(s, str) for s in t.values())
            for t in levels.values()):
        return "`verify.levels` is not target -> level -> status"
    if not isinstance(highest, dict) or not all(
            h is None or isinstance(h, str) for h in highest.values()):
        return "`verify.highest` is not target -> level"
    for key in ("passed", "reaches_live_level", "fingerprint_equal"):
        if v.get(key) is not None and not isinstance(v[key], bool):
            return f"`verify.{key}` is not a boolean"
    return None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ResultsFolder:
    def __init__(self, root: Path, warn: Warn | None = None) -> None:
        self.root = root.absolute()
        self._warn = warn or (lambda _m: None)
        self._warned: set[str] = set()
        if self.root.exists() and not self.root.is_dir():
            raise UsageError(f"-o {self.root} exists and is not a folder.")
        self.root.mkdir(parents=True, exist_ok=True)
        for name in TOP_FILES:
            self._check_file(self.root / name)
        self._check_dir(self.root / "cells")

    def warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            self._warn(message)

    @staticmethod
    def _check_file(path: Path) -> None:
        """Where the bench keeps a file: nothing, or a regular file (never a link)."""
        if os.path.lexists(path) and not stat.S_ISREG(path.lstat().st_mode):
            raise InputFileError(f"{path}: not a regular file (a link, folder or special "
                                 "file) where the bench keeps one; move it away.")

    @staticmethod
    def _check_dir(path: Path) -> None:
        """Where the bench keeps a folder: nothing, or a folder (never a link)."""
        if os.path.lexists(path) and not stat.S_ISDIR(path.lstat().st_mode):
            raise InputFileError(f"{path}: not a folder (a link or a file) where the bench "
                                 "keeps one; move it away.")

    @property
    def cells_file(self) -> Path:
        return self.root / CELLS

    def cell_dir(self, cell_id: str) -> Path:
        return self.root / "cells" / cell_id

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, sort_keys=True, ensure_ascii=False) + "\n").encode()
        try:
            fd = os.open(self.cells_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                         | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise InputFileError(f"{self.cells_file}: cannot be appended to "
                                 f"({exc.strerror or exc}); a link or a folder?") from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputFileError(f"{self.cells_file}: not a regular file")
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """Every whole line that is a cell record, in order; any other line (torn by a
        crash mid-write, not UTF-8, not JSON, of the wrong types) is skipped with a warning
        naming it."""
        if not os.path.lexists(self.cells_file):
            return []
        data = safe_io.read_regular(self.cells_file, MAX_CELLS_BYTES)
        out: list[dict[str, Any]] = []
        # A line ends at \n alone: a record may hold U+2028 or U+0085 unescaped.
        for number, raw in enumerate(data.split(b"\n"), 1):
            if not raw.strip():
                continue
            where = f"{self.cells_file}:{number}"
            try:
                rec = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                self.warn(f"{where}: not UTF-8; the line is skipped")
                continue
            except (ValueError, RecursionError):
                self.warn(f"{where}: not a JSON record (torn or damaged); the line is skipped")
                continue
            problem = record_problem(rec)
            if problem:
                self.warn(f"{where}: not a bench cell record ({problem}); the line is skipped")
                continue
            out.append(rec)
        return out

    def latest(self) -> dict[str, dict[str, Any]]:
        """The last record of each cell."""
        return {rec["cell"]: rec for rec in self.records()}

    def fresh_cell_dir(self, cell_id: str) -> Path:
        """The cell's folder, empty: a cell that runs again starts anew (what an earlier
        attempt left, links included, is removed, never followed)."""
        self._check_dir(self.root / "cells")
        path = self.cell_dir(cell_id)
        if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
            self.warn(f"{path}: not a folder; removed before the cell runs again")
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
        path.mkdir(parents=True)
        return path

    def mark_started(self, cell_id: str, executor: str) -> None:
        atomic.write_json(self.fresh_cell_dir(cell_id) / "started.json", {
            "started": time.time(), "host": socket.gethostname(), "pid": os.getpid(),
            "executor": executor})

    def started(self, cell_id: str) -> dict[str, Any] | None:
        """The start marker of a cell, None without one; a damaged one is skipped with a
        warning (the cell then counts as never started)."""
        path = self.cell_dir(cell_id) / "started.json"
        if not os.path.lexists(path):
            return None
        try:
            self._check_dir(self.root / "cells")
            data = json.loads(safe_io.decode_utf8(
                safe_io.read_regular(path, MAX_STARTED_BYTES), path))
        except SynthError as exc:
            self.warn(f"{exc.message}; the start marker is skipped")
            return None
        except (ValueError, RecursionError):
            self.warn(f"{path}: not JSON; the start marker is skipped")
            return None
        if not isinstance(data, dict) or not _number(data.get("started")):
            self.warn(f"{path}: no numeric `started`; the start marker is skipped")
            return None
        return data

    def write_files(self, cell_id: str, files: dict[str, str]) -> None:
        """A cell's reports, as gathered from wherever it ran."""
        folder = self.cell_dir(cell_id)
        self._check_dir(self.root / "cells")
        self._check_dir(folder)
        for name, text in files.items():
            if "/" in name or name.startswith(".") or not isinstance(text, str):
                continue
            self._check_file(folder / name)
            atomic.write_text(folder / name, text)
