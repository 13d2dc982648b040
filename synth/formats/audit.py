"""``audit.jsonl``: one JSON object a line (docs/formats.md) — a header, then command
records ordered by ``seq``, then the raw lines that were not JSON.

A command record is an :class:`AuditRecord`, which distill reads; a line is decoded into the
type of its ``source`` (:data:`LINE_TYPES`: an AuditRecord with that source's required
fields), so a long log's 100,000 lines are checked and typed in one pass each. Written by
the session (:func:`synth.record.audit.merge_audit`) through :meth:`AuditRecord.to_json`.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from msgspec import Meta

from synth.formats.base import Count, Part, Timestamp

#: The newest audit.jsonl format this synth reads and writes.
AUDIT_FORMAT: Final = 1

Source = Literal["synth", "bash-c", "bash-script", "bash-shell", "bash-hook", "exec-trace"]
Phase = Literal["agent", "synth"]
Seq = Annotated[int, Meta(ge=1)]


class AuditHeader(Part, frozen=True, kw_only=True):
    """The first line of ``audit.jsonl``."""

    type: Literal["header"]
    format: Literal[1]
    session: str
    started: Timestamp | None
    #: How many raw hook events the log was made from, and how many of them were not JSON.
    raw_events: Count
    unparsed: Count


class AuditUnparsed(Part, frozen=True, kw_only=True):
    """A raw line of the hook's stream that was not JSON (a write cut by a kill)."""

    type: Literal["unparsed"]
    session: str
    line: str


class AuditRecord(Part, frozen=True, kw_only=True, gc=False):
    """One ``command`` record of ``audit.jsonl``: read by distill, written by the session.
    Every record has every attribute; which ones a source's records must have is its
    line type's (:data:`LINE_TYPES`). Frozen, no cycles: not tracked by the cyclic
    collector (a long log has 100,000)."""

    source: Source
    seq: Seq
    #: The command's text; null in a hook record that named none (read as ``""``; a record
    #: of another source written with null is read as its argv joined).
    command: Annotated[str, Meta(extra_json_schema={"type": ["string", "null"]})]
    cwd: str | None
    exit: int | None
    type: Literal["command"] = "command"
    session: str = ""
    start: float | None = None
    end: float | None = None
    pipestatus: tuple[int | None, ...] | None = None
    pid: int | None = None
    ppid: int | None = None
    #: A shell's working directory when it exited.
    cwd_end: str | None = None
    #: Nesting of the shell that ran it (0: the agent's own ``bash -c``).
    depth: Count = 0
    parent_seq: int | None = None
    #: The argv of a ``synth`` or ``exec-trace`` record.
    argv: tuple[str, ...] = ()
    timed_out: bool = False
    #: For ``synth`` records: whose command it was (``agent``, or ``synth``'s own work).
    phase: Phase | None = None
    #: The executable an ``exec-trace`` record ran.
    path: str | None = None
    #: The command never reported its end (killed, or the stream was cut).
    incomplete: bool = False
    #: An element of a pipeline, with its own status from the pipeline's PIPESTATUS.
    pipeline: bool = False

    @property
    def cwd_known(self) -> bool:
        return bool(self.cwd)

    def to_json(self) -> dict[str, Any]:
        """The record as ``audit.jsonl`` holds it: the keys of its source only
        (:data:`AUDIT_KEYS`), ``incomplete`` and ``pipeline`` only when true."""
        doc: dict[str, Any] = {key: getattr(self, key) for key in AUDIT_KEYS[self.source]}
        doc["cwd"] = self.cwd or None
        doc["pipestatus"] = list(self.pipestatus) if self.pipestatus else None
        if "argv" in doc:
            doc["argv"] = list(self.argv)
        if self.source == "bash-hook" and not self.command:
            doc["command"] = None
        if self.incomplete:
            doc["incomplete"] = True
        if self.pipeline:
            doc["pipeline"] = True
        return doc


class _Written(AuditRecord, frozen=True, kw_only=True, gc=False):
    """What every command record holds as written."""

    type: Literal["command"]
    session: str
    start: float | None
    end: float | None
    pipestatus: tuple[int | None, ...] | None


class ShellRecord(_Written, frozen=True, kw_only=True, gc=False):
    """A shell: a whole ``bash -c`` call (``$BASH_EXECUTION_STRING``), a bash running a
    script file (its path), or the interactive shell of ``--agent shell`` (``""``)."""

    source: Literal["bash-c", "bash-script", "bash-shell"]
    pid: int | None
    ppid: int | None
    cwd_end: str | None
    depth: Count
    parent_seq: int | None


class HookRecord(_Written, frozen=True, kw_only=True, gc=False):
    """One simple command, as the DEBUG trap saw it (unexpanded text)."""

    source: Literal["bash-hook"]
    pid: int | None
    depth: Count
    parent_seq: int | None


class SynthRecord(_Written, frozen=True, kw_only=True, gc=False):
    """A command synth executed in the container, recorded host-side."""

    source: Literal["synth"]
    argv: tuple[str, ...]
    timed_out: bool
    phase: Phase


class TraceRecord(_Written, frozen=True, kw_only=True, gc=False):
    """A successful ``execve`` of the agent's process tree (``--trace-exec``)."""

    source: Literal["exec-trace"]
    pid: int | None
    path: str | None
    argv: tuple[str, ...]


#: The type of a command line of ``audit.jsonl`` by its ``source``: an
#: :class:`AuditRecord` with that source's required fields.
LINE_TYPES: Mapping[str, type[AuditRecord]] = {
    "bash-c": ShellRecord, "bash-script": ShellRecord, "bash-shell": ShellRecord,
    "bash-hook": HookRecord, "synth": SynthRecord, "exec-trace": TraceRecord}
#: Any line after the header.
AuditLine = AuditRecord | AuditUnparsed

#: The keys of a ``command`` record of ``audit.jsonl`` by its source (docs/formats.md);
#: ``incomplete`` and ``pipeline`` are written only when true.
_AUDIT_COMMON = ("type", "source", "session", "seq", "command", "cwd", "start", "end", "exit",
                 "pipestatus")
_SHELL_KEYS = (*_AUDIT_COMMON, "pid", "ppid", "cwd_end", "depth", "parent_seq")
AUDIT_KEYS: Mapping[str, tuple[str, ...]] = {
    "bash-c": _SHELL_KEYS, "bash-script": _SHELL_KEYS, "bash-shell": _SHELL_KEYS,
    "bash-hook": (*_AUDIT_COMMON, "pid", "depth", "parent_seq"),
    "synth": (*_AUDIT_COMMON, "argv", "timed_out", "phase"),
    "exec-trace": (*_AUDIT_COMMON, "pid", "path", "argv"),
}


def null_command(doc: Mapping[str, Any]) -> str | None:
    """The text of a decoded command record written with a null ``command``: its argv
    joined (a ``synth`` or ``exec-trace`` record), ``""`` when it has none (a hook record
    that named nothing); None for any other record."""
    if "command" not in doc or doc["command"] is not None:
        return None
    argv = doc.get("argv")
    return shlex.join(argv) if isinstance(argv, list) and all(
        isinstance(a, str) for a in argv) else ""


@dataclass(frozen=True)
class AuditLog:
    """``audit.jsonl`` as read: the header and every line after it, each typed."""

    header: AuditHeader
    records: tuple[AuditLine, ...]
    #: The command records :meth:`commands` leaves out: written with no text and no argv.
    textless: frozenset[int] = frozenset()

    def commands(self) -> tuple[AuditRecord, ...]:
        """The command records (not ``unparsed`` lines, nor a shell record with no text),
        ordered by ``seq``."""
        return commands_of(r for i, r in enumerate(self.records) if i not in self.textless)


def commands_of(records: Iterable[AuditLine]) -> tuple[AuditRecord, ...]:
    """The command records among ``records`` (AuditRecord or unparsed lines), by ``seq``."""
    cmds = [r for r in records if isinstance(r, AuditRecord)]
    cmds.sort(key=_seq)
    return tuple(cmds)


def _seq(r: AuditRecord) -> int:
    return r.seq
