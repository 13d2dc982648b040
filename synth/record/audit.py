"""The audit log: raw hook events in, normalised ``audit.jsonl`` records out.

The bash hook (``hook/audit_hook.sh``) appends raw events while the agent works; they are
kept untouched under ``logs/hook/events.jsonl``. After the session :func:`merge_audit`
turns them, together with the records of the commands synth itself executed, into the
records of ``audit.jsonl`` (format documented in ``docs/formats.md``). Everything here is
pure: no I/O except :func:`read_raw_events`, :func:`write_audit` and :func:`load_audit`.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from msgspec.structs import replace

from synth.formats.audit import AUDIT_FORMAT, AuditRecord
from synth.formats.store import read_audit
from synth.util.atomic import write_text

MASK = "***"

Source = Literal["bash-c", "bash-script", "bash-shell", "bash-hook", "synth", "exec-trace"]
#: Whose command a ``synth`` record is: the agent's (synth executed it for the agent) or
#: synth's own (setting up the container, capturing its state).
Phase = Literal["agent", "synth"]

#: Pipeline elements start within this many seconds of each other (DEBUG fires for each
#: element before the first one finishes); see :func:`_fix_pipelines`.
_PIPELINE_GAP = 0.05


class Masker:
    """Replaces secret values by ``***`` in any text synth writes."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Each secret in the encodings it commonly travels in (an agent's `base64`, a URL's
        # userinfo); longest first, so a secret containing another is masked whole.
        forms = {form for s in secrets if s for form in encodings(s)}
        self.values = sorted(forms, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self.values)

    def mask(self, text: str) -> str:
        for value in self.values:
            if value in text:
                text = text.replace(value, MASK)
        return text

    def mask_bytes(self, data: bytes) -> bytes:
        for value in self.values:
            raw = value.encode("utf-8", "surrogateescape")
            if raw in data:
                data = data.replace(raw, MASK.encode())
        return data

    def mask_json(self, data: Any) -> Any:
        """A copy of a JSON-like value with every string (keys included) masked."""
        if isinstance(data, str):
            return self.mask(data)
        if isinstance(data, list):
            return [self.mask_json(v) for v in data]
        if isinstance(data, dict):
            return {self.mask(str(k)): self.mask_json(v) for k, v in data.items()}
        return data

    def found_in(self, text: str) -> bool:
        return any(v in text for v in self.values)


def encodings(secret: str) -> set[str]:
    """``secret`` as written plain, base64 (standard and URL-safe, padded or not),
    URL-encoded and hex (lower and upper case)."""
    import base64
    from urllib.parse import quote, quote_plus

    raw = secret.encode("utf-8", "surrogateescape")
    forms = {secret, quote(secret, safe=""), quote_plus(secret), raw.hex(), raw.hex().upper()}
    for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = enc.decode("ascii")
        forms |= {text, text.rstrip("=")}
    return {f for f in forms if f}


@dataclass(frozen=True)
class RawEvents:
    events: tuple[dict[str, Any], ...]
    #: Lines that are not JSON objects (a write cut by a kill, say); kept, never dropped.
    unparsed: tuple[str, ...] = ()


def parse_raw_events(text: str) -> RawEvents:
    r"""The hook's events, one JSON object a line. A line ends at ``\n`` alone: the hook
    escapes ``\n`` but writes a vertical tab, a form feed, U+0085 or U+2028 of a command
    as it is, which ``str.splitlines`` would also split at."""
    return _parse_lines(text.split("\n"))


def _parse_lines(lines: Iterable[str]) -> RawEvents:
    events: list[dict[str, Any]] = []
    unparsed: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            # strict=False: bash escapes only \ " and \n \r \t; other control characters
            # arrive literally.
            obj = json.loads(line, strict=False)
        except json.JSONDecodeError:
            unparsed.append(line)
            continue
        if isinstance(obj, dict) and isinstance(obj.get("ev"), str):
            events.append(obj)
        else:
            unparsed.append(line)
    return RawEvents(tuple(events), tuple(unparsed))


def read_raw_events(path: Path) -> RawEvents:
    """The events of a stream file, read a line at a time (lines end at ``\n`` alone: the
    file is read as bytes), never as one string."""
    if not path.is_file():
        return RawEvents(())
    with path.open("rb") as fh:
        return _parse_lines(line.decode("utf-8", "replace") for line in fh)


@dataclass
class SynthCommand:
    """A command synth executed in the container, recorded host-side
    (:mod:`synth.record.recorder`): the agent's, or synth's own setup and capture."""

    argv: tuple[str, ...]
    command: str
    cwd: str | None
    start: float
    end: float | None = None
    exit: int | None = None
    timed_out: bool = False
    phase: Phase = "agent"


@dataclass
class _Item:
    start: float
    order: int
    record: AuditRecord
    key: tuple[str, int] | None = None  # (shell, n) of hook commands, (shell, 0) of shells
    #: A shell's parent shell (the ``parent`` of its event).
    parent: str | None = None


@dataclass
class _Events:
    """The raw events by kind: shells and their ends by shell, commands by (shell, n)."""

    shells: dict[str, dict[str, Any]] = field(default_factory=dict)
    shell_ends: dict[str, dict[str, Any]] = field(default_factory=dict)
    begins: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    ends: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    #: Position in the stream of each shell's and each begin's event (ties in start time).
    order: dict[str | tuple[str, int], int] = field(default_factory=dict)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _cwd(value: Any) -> str | None:
    """The ``cwd`` of a record: the directory, or None when none is known."""
    return value if isinstance(value, str) and value else None


def merge_audit(
    raw: RawEvents,
    synth_commands: Sequence[SynthCommand],
    *,
    session: str,
    started: str,
    masker: Masker | None = None,
    exec_traces: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The records of ``audit.jsonl``: a header, then commands ordered by start time.

    ``exec_traces`` are the successful execve calls of ``--trace-exec``
    (:func:`synth.record.trace.parse_trace`)."""
    masker = masker or Masker()
    events = _index(raw)
    items = _shell_items(events, session) + _hook_items(events, session)
    base = len(raw.events)
    items += [_Item(cmd.start, base + j, _synth_record(cmd, session))
              for j, cmd in enumerate(synth_commands)]
    base += len(synth_commands)
    items += [_trace_item(ex, session, base + j) for j, ex in enumerate(exec_traces)]
    _number(items)
    header: dict[str, Any] = {
        "type": "header", "format": AUDIT_FORMAT, "session": session, "started": started,
        "raw_events": len(raw.events), "unparsed": len(raw.unparsed),
    }
    records = [header] + [masker.mask_json(it.record.to_json()) for it in items]
    records += [{"type": "unparsed", "session": session, "line": masker.mask(line)}
                for line in raw.unparsed]
    return records


def _index(raw: RawEvents) -> _Events:
    events = _Events()
    for i, ev in enumerate(raw.events):
        kind = ev.get("ev")
        shell = str(ev.get("shell", ""))
        n = _int(ev.get("n"))
        if kind == "shell":
            events.shells[shell] = ev
            events.order[shell] = i
        elif kind == "shell-end":
            events.shell_ends[shell] = ev
        elif kind == "begin" and n is not None:
            events.begins[(shell, n)] = ev
            events.order[(shell, n)] = i
        elif kind == "end" and n is not None:
            events.ends[(shell, n)] = ev
    return events


def _shell_items(events: _Events, session: str) -> list[_Item]:
    """One record per shell: a ``bash -c``, a script, or the interactive shell."""
    items: list[_Item] = []
    for shell, ev in events.shells.items():
        end = events.shell_ends.get(shell, {})
        text = str(ev.get("cmd") or "")
        if text:
            source: Source = "bash-c"
        elif ev.get("interactive") is True:
            source = "bash-shell"
        else:
            source = "bash-script"
            text = str(ev.get("script") or "")
        exit_code = _int(end.get("rc"))
        rec = AuditRecord(
            source=source, seq=0, session=session, pid=_int(ev.get("pid")),
            ppid=_int(ev.get("ppid")), command=text, cwd=_cwd(ev.get("cwd")),
            cwd_end=_str(end.get("cwd")), start=_num(ev.get("t")), end=_num(end.get("t")),
            exit=exit_code, pipestatus=(exit_code,) if exit_code is not None else None,
            parent_seq=None,
            depth=_int(ev.get("depth")) or 0, incomplete=not end,
        )
        items.append(_Item(rec.start or 0.0, events.order[shell], rec, (shell, 0),
                           parent=str(ev.get("parent") or "") or None))
    return items


def _hook_items(events: _Events, session: str) -> list[_Item]:
    """One record per simple command the DEBUG trap saw; pipelines get their statuses."""
    by_shell: dict[str, list[_Item]] = {}
    for key, ev in events.begins.items():
        end_ev = events.ends.get(key)
        raw_ps = (end_ev or {}).get("ps")
        ps = tuple(p for p in raw_ps if _int(p) is not None) if isinstance(raw_ps, list) else ()
        exit_code = ps[-1] if ps else (_int(end_ev.get("rc")) if end_ev else None)
        cmd = ev.get("cmd")
        rec = AuditRecord(
            source="bash-hook", seq=0, session=session, pid=_int(ev.get("pid")),
            command=str(cmd) if cmd is not None else "", cwd=_cwd(ev.get("cwd")),
            start=_num(ev.get("t")), end=_num(end_ev.get("t")) if end_ev else None,
            exit=exit_code, pipestatus=ps or None, parent_seq=None,
            depth=_int(events.shells.get(key[0], {}).get("depth")) or 0,
            incomplete=end_ev is None,
        )
        by_shell.setdefault(key[0], []).append(
            _Item(rec.start or 0.0, events.order[key], rec, key))
    items: list[_Item] = []
    for shell_items in by_shell.values():
        shell_items.sort(key=lambda it: it.key[1] if it.key else 0)
        _fix_pipelines(shell_items)
        items += shell_items
    return items


def _synth_record(cmd: SynthCommand, session: str) -> AuditRecord:
    return AuditRecord(
        source="synth", seq=0, session=session, command=cmd.command, argv=cmd.argv,
        cwd=_cwd(cmd.cwd), start=cmd.start, end=cmd.end, exit=cmd.exit,
        pipestatus=(cmd.exit,) if cmd.exit is not None else None, timed_out=cmd.timed_out,
        phase=cmd.phase, incomplete=cmd.end is None,
    )


def _trace_item(ex: dict[str, Any], session: str, order: int) -> _Item:
    argv = tuple(str(a) for a in ex.get("argv", []))
    rec = AuditRecord(
        source="exec-trace", seq=0, session=session, pid=_int(ex.get("pid")),
        path=_str(ex.get("path")), argv=argv, command=shlex.join(argv), cwd=None,
        start=_num(ex.get("start")), end=None, exit=None, pipestatus=None,
    )
    return _Item(rec.start or 0.0, order, rec)


def _number(items: list[_Item]) -> None:
    """``seq`` follows start time (ties keep the order events were written in); each shell
    record gets its parent shell's seq, each hook record its shell's."""
    items.sort(key=lambda it: (it.start, it.order))
    shell_seq: dict[str, int] = {}
    for seq, it in enumerate(items, start=1):
        it.record = replace(it.record, seq=seq)
        if it.key is not None and it.key[1] == 0:
            shell_seq[it.key[0]] = seq
    for it in items:
        if it.key is None:
            continue
        if it.key[1] == 0:
            parent = shell_seq.get(it.parent) if it.parent else None
        else:
            parent = shell_seq.get(it.key[0])
        it.record = replace(it.record, parent_seq=parent)


def _fix_pipelines(items: list[_Item]) -> None:
    """Give each element of a pipeline its own status from PIPESTATUS.

    DEBUG fires for every element of ``a | b`` before ``a`` finishes, so ``a``'s record is
    closed early with a stale status; the record of the last element carries the whole
    PIPESTATUS. Its N-1 predecessors are the other elements when each was "closed" within
    a few milliseconds of its start (an element whose command is a subshell fires no DEBUG,
    so when fewer quick predecessors exist nothing is changed).
    """
    for i, it in enumerate(items):
        rec = it.record
        statuses = rec.pipestatus or ()
        n = len(statuses)
        if n < 2 or i < n - 1:
            continue
        group = items[i - n + 1 : i]
        if all(g.record.end is not None and g.record.start is not None
               and g.record.end - g.record.start < _PIPELINE_GAP
               and g.record.cwd == rec.cwd for g in group):
            for g, status in zip(group, statuses[:-1], strict=True):
                g.record = replace(g.record, exit=status, pipestatus=(status,), end=rec.end,
                                   pipeline=True)
            it.record = replace(rec, pipeline=True)


def dumps_records(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)


def write_audit(path: Path, records: Iterable[dict[str, Any]]) -> None:
    write_text(path, dumps_records(records))


def load_audit(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the records of an ``audit.jsonl`` (:func:`synth.formats.store.read_audit`)."""

    log = read_audit(path)
    return log.header.to_json(), [r.to_json() for r in log.records]


#: Clock slack allowed between the host's timestamps and the hook's (same kernel clock;
#: the slack covers exec start-up and rounding).
_CLOCK_SLACK = 5.0


def audit_findings(
    raw: RawEvents,
    synth_commands: Sequence[SynthCommand],
    *,
    started: float,
    ended: float,
    match_top_level: bool,
    masker: Masker | None = None,
) -> list[str]:
    """What in the raw stream no host-side evidence accounts for (tamper evidence).

    * every shell numbers its commands 1, 2, 3…: a gap or a repeat means records were
      removed, reordered or forged;
    * every record lies inside the session's time, as the host measured it;
    * command records belong to a shell that announced itself;
    * with ``match_top_level`` (the replay agent, where synth itself starts each top-level
      ``bash -c``): every such exec has its shell record and every top-level shell record
      has its exec. A missing record means the stream was cut or the hook bypassed; an
      extra one was written by someone other than the hook.
    """
    masker = masker or Masker()
    findings: list[str] = []
    shells: dict[str, dict[str, Any]] = {}
    numbers: dict[str, list[int]] = {}
    early = late = 0
    for ev in raw.events:
        shell = str(ev.get("shell", ""))
        t = _num(ev.get("t"))
        if t is not None and t < started - _CLOCK_SLACK:
            early += 1
        elif t is not None and t > ended + _CLOCK_SLACK:
            late += 1
        if ev.get("ev") == "shell":
            shells[shell] = ev
        elif ev.get("ev") == "begin" and _int(ev.get("n")) is not None:
            numbers.setdefault(shell, []).append(int(ev["n"]))
    if early or late:
        findings.append(f"{early + late} record(s) dated outside the session "
                        f"({early} before its start, {late} after its end)")
    for shell, ns in sorted(numbers.items()):
        if shell not in shells:
            findings.append(f"{len(ns)} command record(s) of shell {shell!r}, which never "
                            "announced itself")
        if ns != list(range(1, len(ns) + 1)):
            findings.append(f"shell {shell!r}: command numbers are not 1..{len(ns)} in order "
                            "(records removed, reordered or forged)")
    if match_top_level:
        findings += _unmatched_top_level(shells, synth_commands, masker)
    return findings


def _unmatched_top_level(
    shells: dict[str, dict[str, Any]], synth_commands: Sequence[SynthCommand], masker: Masker
) -> list[str]:
    from collections import Counter

    execs = Counter(masker.mask(c.argv[2]) for c in synth_commands
                    if c.phase == "agent" and len(c.argv) == 3 and c.argv[:2] == ("bash", "-c"))
    seen = Counter(str(ev.get("cmd") or "") for ev in shells.values()
                   if _int(ev.get("depth")) == 0 and not ev.get("interactive"))
    findings: list[str] = []
    missing = execs - seen
    extra = seen - execs
    if missing:
        findings.append(f"{sum(missing.values())} command(s) synth ran have no hook record "
                        "(the stream was cut or the hook bypassed): "
                        + "; ".join(sorted(_first(t) for t in missing)))
    if extra:
        findings.append(f"{sum(extra.values())} top-level shell record(s) match no command "
                        "synth ran (written by someone other than the hook): "
                        + "; ".join(sorted(_first(t) for t in extra)))
    return findings


def _first(text: str, width: int = 80) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return repr(line[:width] + ("…" if len(line) > width or "\n" in text.strip() else ""))
