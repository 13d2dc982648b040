"""The hook's stream, collected host-side while it is written.

The folder the hook writes to (``logs/hook/``, mounted writable at ``/synth/audit``) belongs
to the agent as much as to synth: the agent runs as root in the container and may replace
``events.jsonl`` with a symlink to a host file, truncate it, rewrite it, or plant other
entries. So synth

* never follows a link there and never writes there: every read opens with ``O_NOFOLLOW``
  and reads only regular files;
* keeps its own copy of every complete line as soon as it reads it
  (``logs/events.jsonl``, mode 0600, in a folder the container cannot reach): what the
  agent rewrites afterwards cannot change what synth already took;
* records what it saw happen to the stream (replaced, truncated, removed, foreign entries)
  as *findings*, which make the run's audit ``unverified``.

After the session the folder is drained and removed.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from synth.record.audit import Masker
from synth.util.disk import disk_full_as_error, human

#: Raw stream size past which synth stops collecting (a runaway or hostile writer): every
#: byte read counts, kept or cut, so a sparse or endless file costs at most this much.
MAX_STREAM_BYTES = 256 * 1024 * 1024
#: One hook record longer than this is cut (skipped to its end) and counted, never held.
MAX_RECORD_BYTES = 1024 * 1024
#: Size cap of one strace log read back after the session.
MAX_TRACE_BYTES = 256 * 1024 * 1024
_READ_CHUNK = 4 * 1024 * 1024
#: What the hook's folder (on the host's disk, writable by the agent) may take at once: the
#: stream's budget, strace logs and room to spare. Past it the session is stopped.
MAX_FOLDER_BYTES = 2 << 30
#: Entries of the folder looked at per check; a folder with more is over its budget.
MAX_FOLDER_ENTRIES = 100_000
_BLOCK = 4096


def read_regular(path: Path, max_bytes: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (never through a symlink), else None.

    Reads at most ``max_bytes``; a FIFO or device never blocks the read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = max_bytes
        while left > 0:
            chunk = os.read(fd, min(_READ_CHUNK, left))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class FolderUsage(NamedTuple):
    """What a folder takes on disk: ``bytes`` of blocks held, ``entries`` looked at, and
    ``counted_all`` false where it has more than :data:`MAX_FOLDER_ENTRIES` (then ``bytes``
    is what the entries looked at hold)."""

    bytes: int
    entries: int
    counted_all: bool

    def over_budget(self) -> str | None:
        """What is over the folder's budget, in words, or None."""
        if not self.counted_all:
            return f"more than {MAX_FOLDER_ENTRIES:,} files and folders"
        if self.bytes > MAX_FOLDER_BYTES:
            return f"{human(self.bytes)} (at most {human(MAX_FOLDER_BYTES)} is allowed there)"
        return None


def folder_usage(folder: Path) -> FolderUsage:
    """The disk ``folder`` takes: each file's allocated blocks (a sparse file counts only
    what it holds), a block per entry at least, links never followed; the walk stops past
    :data:`MAX_FOLDER_ENTRIES` entries."""
    used, seen = 0, 0
    for root, dirs, files in os.walk(folder):
        for name in (*dirs, *files):
            seen += 1
            if seen > MAX_FOLDER_ENTRIES:
                return FolderUsage(used, seen, counted_all=False)
            try:
                st = os.lstat(Path(root, name))
            except OSError:
                continue
            used += max(st.st_blocks * 512, _BLOCK)
    return FolderUsage(used, seen, counted_all=True)


def _describe_entry(path: Path) -> str:
    try:
        st = os.lstat(path)
    except OSError:
        return "gone"
    if stat.S_ISLNK(st.st_mode):
        try:
            return f"a symlink to {path.readlink()}"
        except OSError:
            return "a symlink"
    if stat.S_ISDIR(st.st_mode):
        return "a directory"
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO"
    if not stat.S_ISREG(st.st_mode):
        return "a special file"
    return "a regular file"


def write_private(path: Path, data: bytes, *, append: bool = False) -> None:
    """Write a host-only file: mode 0600, created without following a symlink."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_APPEND if append else os.O_TRUNC
    with disk_full_as_error(path, needed=len(data)):
        fd = os.open(path, flags, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)


@dataclass
class HookCollector:
    """Copies complete lines of the untrusted ``source`` to the host-only ``dest``."""

    source: Path
    dest: Path
    masker: Masker = field(default_factory=Masker)
    findings: list[str] = field(default_factory=list)
    offset: int = 0
    #: Bytes of records copied; ``consumed``: bytes read, copied or cut.
    collected: int = 0
    consumed: int = 0
    #: Records cut for their length, and the bytes skipped with them.
    cut_records: int = 0
    cut_bytes: int = 0
    skipping: bool = False
    _fd: int | None = None

    def start(self) -> None:
        """Create the stream file (agents may drop root, so anyone in the container may
        append) and hold it open; ``dest`` starts empty."""
        fd = os.open(self.source, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o666)
        os.fchmod(fd, 0o666)
        self._fd = fd
        write_private(self.dest, b"")

    def _finding(self, text: str) -> None:
        if text not in self.findings:
            self.findings.append(text)

    def _current(self) -> int | None:
        """The descriptor to read: the file held since the start while it is still the
        stream; after a replacement (named as a finding) the new regular file, if any."""
        name = self.source.name
        try:
            lst = os.lstat(self.source)
        except FileNotFoundError:
            lst = None
        held = os.fstat(self._fd) if self._fd is not None else None
        same = (held is not None and lst is not None and held.st_nlink > 0
                and (lst.st_dev, lst.st_ino) == (held.st_dev, held.st_ino))
        if same:
            return self._fd
        if lst is None:
            self._finding(f"{name} was removed during the session")
        elif not stat.S_ISREG(lst.st_mode):
            self._finding(f"{name} was replaced by {_describe_entry(self.source)}")
        else:
            self._finding(f"{name} was replaced by another file during the session")
        if held is not None:
            # What the original still holds past our offset was written before the swap.
            self._take(self._fd)
            os.close(self._fd)  # type: ignore[arg-type]
            self._fd = None
        if lst is None or not stat.S_ISREG(lst.st_mode):
            return None
        try:
            fd = os.open(self.source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC)
        except OSError:
            return None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        self._fd, self.offset = fd, 0
        return fd

    def poll(self) -> bytes:
        """Read what was appended since the last poll; returns the new complete lines."""
        fd = self._current()
        return self._take(fd) if fd is not None else b""

    def _take(self, fd: int | None) -> bytes:
        """Copy the complete records past ``offset``, a chunk at a time: a record over
        :data:`MAX_RECORD_BYTES` is skipped to its end and counted, and reading stops for
        good at :data:`MAX_STREAM_BYTES` read, so memory and disk stay bounded whatever is
        written (a sparse 8 GB file, one endless line)."""
        if fd is None:
            return b""
        size = os.fstat(fd).st_size
        if size < self.offset:
            self._finding(f"{self.source.name} was truncated from {self.offset} to {size} "
                          "bytes during the session")
            self.offset = size
            return b""
        taken: list[bytes] = []
        while self.offset < size and not self._over_budget():
            data = os.pread(fd, min(_READ_CHUNK, size - self.offset,
                                    MAX_STREAM_BYTES - self.consumed), self.offset)
            if not data or not self._consume(data, taken):
                break
        complete = b"".join(taken)
        if complete:
            self.collected += len(complete)
            write_private(self.dest, self.masker.mask_bytes(complete), append=True)
        return complete

    def _over_budget(self) -> bool:
        if self.consumed < MAX_STREAM_BYTES:
            return False
        self._finding(f"{self.source.name} grew past {MAX_STREAM_BYTES} bytes; the rest was "
                      "ignored")
        return True

    def _consume(self, data: bytes, taken: list[bytes]) -> bool:
        """Take ``data``'s complete records (read at ``offset``); False when the rest is an
        unfinished record to wait for."""
        if self.skipping:
            end = data.find(b"\n")
            used = len(data) if end < 0 else end + 1
            self.offset += used
            self.consumed += used
            self.cut_bytes += used
            if end >= 0:
                self.skipping = False
            return True
        last = data.rfind(b"\n")
        if last < 0:
            if len(data) < MAX_RECORD_BYTES:
                return False
            self._cut_record()
            return True
        for line in data[: last + 1].split(b"\n")[:-1]:
            if len(line) + 1 > MAX_RECORD_BYTES:
                self.cut_records += 1
                self.cut_bytes += len(line) + 1
            else:
                taken.append(line + b"\n")
        self.offset += last + 1
        self.consumed += last + 1
        return True

    def _cut_record(self) -> None:
        self.skipping = True
        self.cut_records += 1
        self._finding(f"{self.source.name} held a record over {MAX_RECORD_BYTES} bytes; "
                      "records that long are cut")

    def finish(self) -> None:
        """The last poll; an unterminated last line (a write cut by a kill) is kept too,
        up to the record limit."""
        fd = self._current()
        if fd is None:
            return
        self._take(fd)
        size = os.fstat(fd).st_size
        budget = min(MAX_RECORD_BYTES, MAX_STREAM_BYTES - self.consumed)
        rest = b"" if self.skipping else os.pread(fd, max(0, min(size - self.offset, budget)),
                                                  self.offset)
        if rest:
            self.offset += len(rest)
            self.consumed += len(rest)
            write_private(self.dest, self.masker.mask_bytes(rest) + b"\n", append=True)
        if self.cut_records:
            self._finding(f"{self.cut_records} record(s) of {self.source.name} were over "
                          f"{MAX_RECORD_BYTES} bytes and cut ({self.cut_bytes} bytes)")
        os.close(fd)
        self._fd = None

    def cut(self) -> dict[str, int]:
        """What was not copied, for run.json's ``audit.cut``."""
        return {"records": self.cut_records, "bytes": self.cut_bytes,
                "unread": max(0, self._size() - self.offset)}

    def _size(self) -> int:
        try:
            return os.lstat(self.source).st_size
        except OSError:
            return self.offset


def drain_folder(
    folder: Path, expected: str, trace_dest: Path, masker: Masker
) -> tuple[list[Path], list[str]]:
    """After the session: copy strace logs (regular ``trace-N.txt`` files) to ``trace_dest``,
    name every other entry the agent left as a finding, then remove the folder.

    Returns the host-only trace copies and the findings."""
    traces: list[Path] = []
    findings: list[str] = []
    if not folder.is_dir() or folder.is_symlink():
        return traces, findings
    for path in sorted(folder.iterdir()):
        entry = path.name
        if entry == expected:
            continue
        if entry.startswith("trace-") and entry.endswith(".txt"):
            data = read_regular(path, MAX_TRACE_BYTES)
            if data is not None:
                trace_dest.mkdir(mode=0o700, exist_ok=True)
                copy = trace_dest / entry
                write_private(copy, masker.mask_bytes(data))
                traces.append(copy)
                continue
        findings.append(f"the agent left {entry} in the audit folder: {_describe_entry(path)}")
    # rmtree never follows symlinks inside the tree it removes.
    shutil.rmtree(folder, ignore_errors=True)
    return traces, findings
