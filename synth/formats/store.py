"""The store: the one place that reads a run directory's or an artifact's files.

Every file has one :class:`FileKind` (its path, its type, its schema's name, newest known
format and size cap) and one loader, and every loader has the same error policy: a file
that is missing, not a regular file, over its size cap, not UTF-8, not JSON, nested too
deeply, of a newer format, or not of its type raises :class:`synth.errors.InputFileError`
naming the file (``path:line`` for a JSON Lines file), what is wrong and, for a value of
the wrong type, its JSON path. Nothing is repaired or guessed, and an oversized file is
refused by its size, unread. See docs/formats.md ("Reading the files").

A file is decoded straight into its type by msgspec, which checks it as it reads (the
types, required fields, enums and patterns the published schemas state). Only a file that
is refused is read again, by the standard JSON decoder, to say where and why.

``RunDir(path).run_record()``, ``.audit()``, ``.apt_state()``, ``.python_state()``,
``.diff_state()``, ``.env_state()``, ``.claims()``; ``ArtifactDir(path).manifest()``,
``.claims()``, ``.export_report()``, ``.plan()``; :func:`read_verify` for a
``verify.json`` (:func:`parse_verify` for its text).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import msgspec

from synth.errors import InputFileError
from synth.formats.audit import (
    AUDIT_FORMAT,
    LINE_TYPES,
    AuditHeader,
    AuditLine,
    AuditLog,
    AuditRecord,
    AuditUnparsed,
    null_command,
)
from synth.formats.base import Document, check_format, located
from synth.formats.claims import Claims
from synth.formats.export_report import EXPORT_REPORT_FORMAT, ExportReport
from synth.formats.manifest import MANIFEST_FORMAT, Manifest
from synth.formats.plan import PLAN_FILE, PLAN_FORMAT, BuildPlan, PlanDocument
from synth.formats.run import RUN_FORMAT, RunRecord
from synth.formats.state import (
    APT_STATE_FORMAT,
    DIFF_STATE_FORMAT,
    ENV_STATE_FORMAT,
    PROVENANCE_STATE_FORMAT,
    PYTHON_STATE_FORMAT,
    AptState,
    DiffState,
    EnvState,
    Provenance,
    PythonState,
)
from synth.formats.verification import VERIFICATION_FORMAT, VerificationRecord
from synth.formats.verify import (
    VERIFY_FAILED_FORMAT,
    VERIFY_FORMAT,
    VerifyDocument,
    VerifyFailure,
)

MiB = 1 << 20
T = TypeVar("T")


@dataclass(frozen=True)
class FileKind(Generic[T]):
    """One file format: where it lives, its type, its schema, its newest format, its cap."""

    rel: str
    #: The type a file is decoded into (a JSON Lines file: the type of its lines).
    model: type[T]
    schema: str
    #: The newest ``format`` this synth reads; None for a file without one (claims.json).
    format: int | None
    max_bytes: int
    #: Where the objects that carry a ``format`` are: the top (``""``) and named members.
    versioned: tuple[str, ...] = ("",)


RUN_RECORD = FileKind("run.json", RunRecord, "run", RUN_FORMAT, 64 * MiB)
AUDIT_LOG = FileKind("audit.jsonl", AuditHeader, "audit-record", AUDIT_FORMAT, 512 * MiB)
APT_STATE = FileKind("state/apt.json", AptState, "apt-state", APT_STATE_FORMAT, 64 * MiB)
PYTHON_STATE = FileKind("state/python.json", PythonState, "python-state",
                        PYTHON_STATE_FORMAT, 64 * MiB)
DIFF_STATE = FileKind("state/diff.json", DiffState, "diff-state", DIFF_STATE_FORMAT,
                      64 * MiB)
ENV_STATE = FileKind("state/env.json", EnvState, "env-state", ENV_STATE_FORMAT, 64 * MiB)
PROVENANCE = FileKind("state/provenance.json", Provenance, "provenance-state",
                      PROVENANCE_STATE_FORMAT, 64 * MiB)
#: Agent-written: small by nature, and loaded by verify whole.
CLAIMS = FileKind("claims.json", Claims, "claims", None, 1 * MiB)
MANIFEST = FileKind("manifest.json", Manifest, "manifest", MANIFEST_FORMAT, 16 * MiB)
EXPORT_REPORT = FileKind("export-report.json", ExportReport, "export-report",
                         EXPORT_REPORT_FORMAT, 64 * MiB)
VERIFY_DOCUMENT = FileKind("verify.json", VerifyDocument, "verify", VERIFY_FORMAT, 64 * MiB)
VERIFY_FAILURE = FileKind("verify-failed.json", VerifyFailure, "verify-failed",
                          VERIFY_FAILED_FORMAT, 1 * MiB)
PLAN = FileKind(PLAN_FILE, PlanDocument, "plan", PLAN_FORMAT, 64 * MiB,
                versioned=("", "plan", "report"))
#: Written by verify into the artifact folder; it travels with the artifact.
VERIFICATION = FileKind("verification.json", VerificationRecord, "verification",
                        VERIFICATION_FORMAT, 1 * MiB)

#: Every kind of file the store reads, each with its one type.
FILE_KINDS: tuple[FileKind[Any], ...] = (
    RUN_RECORD, AUDIT_LOG, APT_STATE, PYTHON_STATE, DIFF_STATE, ENV_STATE, PROVENANCE, CLAIMS,
    MANIFEST, EXPORT_REPORT, VERIFY_DOCUMENT, VERIFY_FAILURE, PLAN, VERIFICATION)
#: The run files an export is distilled from; their sha256 goes into the manifest.
INPUT_FILES = (RUN_RECORD, AUDIT_LOG, APT_STATE, DIFF_STATE, ENV_STATE, PYTHON_STATE,
               PROVENANCE)


def _fail(where: str, what: str) -> InputFileError:
    return InputFileError(f"{where}: {what}")


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def read_bytes(path: Path, kind: FileKind[Any]) -> bytes:
    """The bytes of ``path``, a regular file (not a link) under ``kind``'s size cap."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise _fail(str(path), f"missing (a {kind.rel} file was expected)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
            raise _fail(str(path), "a symbolic link; links are never followed") from None
        raise _fail(str(path), f"cannot be opened ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _fail(str(path), "not a regular file")
        if info.st_size > kind.max_bytes:
            raise _fail(str(path), f"{info.st_size} bytes, over the {kind.max_bytes}-byte "
                        f"limit of a {kind.rel} file; refused unread")
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read(kind.max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > kind.max_bytes:
        raise _fail(str(path), f"over the {kind.max_bytes}-byte limit of a {kind.rel} file")
    return data


def _text(data: bytes, where: str) -> str:
    """``data`` as UTF-8; an error names the line (``where:line``) and the byte that is
    not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _fail(f"{where}:{line}", f"not UTF-8 (byte {exc.start})") from None


def check_utf8(data: bytes, where: str) -> None:
    """Refuse bytes that are not UTF-8, anywhere (msgspec checks the strings it keeps, not
    those of keys no type names); an ASCII file, the common case, is checked at no cost."""
    if not data.isascii():
        _text(data, where)


def read_text(path: Path, kind: FileKind[Any]) -> str:
    """The text of ``path``, a regular file (not a link) under ``kind``'s size cap, as UTF-8;
    an error names the line and the byte that is not."""
    return _text(read_bytes(path, kind), str(path))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: One decoder for every file (json.loads with arguments builds one per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(text: str, where: str) -> Any:
    """One JSON value, by the standard decoder; ``where`` names it in errors (``path`` or
    ``path:line``), which say the line and column."""
    try:
        doc = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise _fail(where, f"not valid JSON: {exc.msg} (line {exc.lineno} column "
                    f"{exc.colno})") from None
    except RecursionError:
        raise _fail(where, "JSON nested too deeply") from None
    except ValueError as exc:
        raise _fail(where, f"not valid JSON: {_clip(str(exc))}") from None
    # JSON escapes are a lowercase \u: a substring test first, the walk only then.
    if ("\\ud" in text or "\\uD" in text) and not _encodable(doc):
        raise _fail(where, "holds a lone UTF-16 surrogate (\\ud800-\\udfff), not text")
    return doc


def _encodable(doc: Any) -> bool:
    if isinstance(doc, str):
        try:
            doc.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(doc, dict):
        return all(_encodable(k) and _encodable(v) for k, v in doc.items())
    if isinstance(doc, list):
        return all(_encodable(v) for v in doc)
    return True


_DECODERS: dict[Any, msgspec.json.Decoder[Any]] = {}


def _decoder(model: Any) -> msgspec.json.Decoder[Any]:
    """One decoder per type, made on first use (it compiles the type's checks)."""
    decoder = _DECODERS.get(model)
    if decoder is None:
        decoder = _DECODERS[model] = msgspec.json.Decoder(model)
    return decoder


def decode(data: bytes, kind: FileKind[T], where: str) -> T:
    """A JSON file's bytes as ``kind``'s type, decoded and checked in one pass; a
    :class:`~synth.formats.base.Document` keeps the document as written (``raw``)."""
    try:
        obj: T = _decoder(kind.model).decode(data)
    except (msgspec.DecodeError, RecursionError) as exc:  # a ValidationError is one
        raise _refusal(data, kind, where, exc) from None
    check_utf8(data, where)
    if isinstance(obj, Document):
        obj.keep_document(msgspec.json.decode(data))
    return obj


def _refusal(data: bytes, kind: FileKind[Any], where: str, exc: Exception) -> InputFileError:
    """Why msgspec refused ``data`` as ``kind``, in the error policy's words: the file
    read again by the standard decoder (not UTF-8, not JSON, not an object, no or a newer
    ``format``), else msgspec's own located error."""
    doc = parse_json(_text(data, where), where)
    if not isinstance(doc, dict):
        return _fail(where, f"not a JSON object (a {type(doc).__name__}); not a {kind.rel}")
    check_formats(doc, kind, where)
    if isinstance(exc, msgspec.ValidationError):
        return _fail(where, f"not a valid {kind.rel}: {_clip(located(exc))}")
    return _fail(where, f"not valid JSON: {_clip(str(exc))}")


def check_formats(doc: dict[str, Any], kind: FileKind[Any], where: str) -> None:
    """Refuse a document with no integer ``format`` or a newer one, where ``kind`` has
    one (the top, and nested objects that carry their own: plan.json's)."""
    if kind.format is None:
        return
    for part in kind.versioned:
        obj = doc.get(part) if part else doc
        if isinstance(obj, dict):
            check_format(obj, kind.format, f"{where}: {part}" if part else where, kind.rel)


def load(path: Path, kind: FileKind[T]) -> T:
    """A JSON file of ``kind``, read and checked (the module's error policy)."""
    return decode(read_bytes(path, kind), kind, str(path))


# --- audit.jsonl -------------------------------------------------------------------------

#: A decoder per command line type, by the ``source`` as its line writes it.
_LINE_DECODERS: dict[bytes, msgspec.json.Decoder[Any]] = {
    source.encode(): msgspec.json.Decoder(cls) for source, cls in LINE_TYPES.items()}
_SOURCE_KEY = b'"source": "'


@dataclass
class _AuditReader:
    """The lines of one ``audit.jsonl``, each typed as it is read.

    Lines end at ``\n`` alone (JSON Lines): a record may hold U+2028 or U+0085
    unescaped, as a JSON string may, and no other character ends it. A command record is
    decoded straight into its source's line type, found by where the line's
    ``"source": "`` says (a hint only: the type itself checks the ``source``, so a wrong
    guess is a refusal, retried below). Any other line (the header, an unparsed line, a
    record with a null ``command``, a blank or a bad line) goes through :meth:`_line`,
    which reads it as JSON, names its line and byte in errors, and types it by its keys."""

    path: Path
    data: bytes
    header: AuditHeader | None = None
    records: list[AuditLine] = field(default_factory=list)
    #: Indices in ``records`` of command records written with no text and no argv.
    textless: set[int] = field(default_factory=set)
    #: How many of ``records`` are unparsed lines.
    unparsed: int = 0

    def read(self) -> _AuditReader:
        check_utf8(self.data, str(self.path))
        lines = self.data.split(b"\n")
        start = 0
        while self.header is None and start < len(lines):  # the header, first
            start += 1
            self._line(start, lines[start - 1])
        if self.header is None:
            raise _fail(str(self.path), "no header record; not a synth audit log")
        append, get, key, skip = self.records.append, _LINE_DECODERS.get, _SOURCE_KEY, len(
            _SOURCE_KEY)
        for number, raw in enumerate(lines[start:], start=start + 1):
            if (at := raw.find(key)) >= 0:
                decoder = get(raw[at + skip:raw.find(b'"', at + skip)])
                if decoder is not None:
                    try:
                        append(decoder.decode(raw))
                        continue
                    except (msgspec.DecodeError, RecursionError):  # its line says why
                        pass
            self._line(number, raw)
        return self

    def commands(self) -> list[AuditRecord]:
        """The command records, in file order, without those written with no text."""
        if not self.textless and not self.unparsed:
            return cast(list[AuditRecord], self.records)  # every one is a command
        return [r for i, r in enumerate(self.records)
                if isinstance(r, AuditRecord) and i not in self.textless]

    def _line(self, number: int, raw: bytes) -> None:
        where = f"{self.path}:{number}"
        line = raw.decode("utf-8")  # the whole file is: read() checked it first
        if not line.strip():
            return
        doc = parse_json(line, where)
        if not isinstance(doc, dict):
            raise _fail(where, f"not a JSON object (a {type(doc).__name__}); not an "
                        f"{AUDIT_LOG.rel} record")
        if doc.get("type") == "header":
            if self.header is not None:
                raise _fail(where, "a second header record")
            check_formats(doc, AUDIT_LOG, where)
            self.header = _convert(doc, AuditHeader, where)
            return
        record = _record(doc, where)
        if self.header is None:
            raise _fail(where, "a record before the header")
        self.unparsed += isinstance(record, AuditUnparsed)
        if null_command(doc) is not None and not isinstance(doc.get("argv"), list):
            self.textless.add(len(self.records))
        self.records.append(record)


def _record(doc: dict[str, Any], where: str) -> AuditLine:
    """A line after the header, read as JSON: an unparsed line, or a command record of its
    ``source`` (one written with a null ``command`` gets its text: :func:`null_command`)."""
    if doc.get("type") == "unparsed":
        unparsed: AuditUnparsed = _convert(doc, AuditUnparsed, where)
        return unparsed
    line_type = LINE_TYPES.get(doc.get("source"))  # type: ignore[arg-type]
    text = null_command(doc)
    record: AuditRecord = _convert(doc if text is None else {**doc, "command": text},
                                   line_type or AuditRecord, where)
    return record


def _convert(doc: Any, model: Any, where: str) -> Any:
    try:
        return msgspec.convert(doc, model)
    except msgspec.ValidationError as exc:
        raise _fail(where, f"not a valid {AUDIT_LOG.rel}: {_clip(located(exc))}") from None


def read_audit(path: Path) -> AuditLog:
    """An ``audit.jsonl``: the header (first line), then every record, each checked."""
    reader = _AuditReader(path, read_bytes(path, AUDIT_LOG)).read()
    assert reader.header is not None
    return AuditLog(reader.header, tuple(reader.records), frozenset(reader.textless))


def read_audit_commands(path: Path) -> tuple[AuditRecord, ...]:
    """:meth:`AuditLog.commands` of an ``audit.jsonl``: its command records, ordered by
    ``seq``, without those written with no text."""
    cmds = _AuditReader(path, read_bytes(path, AUDIT_LOG)).read().commands()
    cmds.sort(key=attrgetter("seq"))
    return tuple(cmds)


# --- the other files -----------------------------------------------------------------------

def is_file(path: str | Path) -> bool:
    """``Path.is_file()`` that says False, never raises, for a name the system refuses
    (too long, a NUL byte): paths recorded in run files are data, not trusted names."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: str | Path) -> bool:
    """``Path.is_dir()`` that says False, never raises (see :func:`is_file`)."""
    try:
        return Path(path).is_dir()
    except (OSError, ValueError):
        return False


def sha256_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_verify(path: Path) -> VerifyDocument:
    """A ``verify.json``, checked."""
    return load(path, VERIFY_DOCUMENT)


def read_verify_failure(path: Path) -> VerifyFailure | None:
    """A ``verify-failed.json``, checked; None when there is none."""
    if not os.path.lexists(path):
        return None
    return load(path, VERIFY_FAILURE)


def parse_text(text: str, kind: FileKind[T], where: str) -> T:
    """A file's text that came some other way (a bench worker sends it back), checked as
    :func:`load` checks the file (its size cap too); ``where`` names it in errors."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise _fail(where, "holds a lone UTF-16 surrogate (\\ud800-\\udfff), not text"
                    ) from None
    if len(data) > kind.max_bytes:
        raise _fail(where, f"over the {kind.max_bytes}-byte limit of a {kind.rel} file")
    return decode(data, kind, where)


def parse_verify(text: str, where: str) -> VerifyDocument:
    """A ``verify.json``'s text that came some other way, checked as the file is."""
    return parse_text(text, VERIFY_DOCUMENT, where)


def read_claims(path: Path) -> Claims | None:
    """An agent's ``claims.json``: None when there is none; an error when it is bad. Fields
    the claims type does not declare are allowed, and kept (``Claims.raw``)."""
    if not os.path.lexists(path):
        return None
    return load(path, CLAIMS)


class _Folder:
    """A folder of synth files: where each kind lives, and whether it is there."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def file(self, kind: FileKind[Any]) -> Path:
        return self.path / kind.rel

    def has(self, kind: FileKind[Any]) -> bool:
        return os.path.lexists(self.file(kind))


class RunDir(_Folder):
    """A run directory, ``artifacts/runs/<task>/<run-id>/`` (docs/formats.md)."""

    def run_record(self) -> RunRecord:
        return load(self.file(RUN_RECORD), RUN_RECORD)

    def audit(self) -> AuditLog:
        return read_audit(self.file(AUDIT_LOG))

    def audit_commands(self) -> tuple[AuditRecord, ...]:
        """The audit's command records, typed and ordered by ``seq``."""
        return read_audit_commands(self.file(AUDIT_LOG))

    def apt_state(self) -> AptState:
        return load(self.file(APT_STATE), APT_STATE)

    def python_state(self) -> PythonState:
        return load(self.file(PYTHON_STATE), PYTHON_STATE)

    def diff_state(self) -> DiffState:
        return load(self.file(DIFF_STATE), DIFF_STATE)

    def env_state(self) -> EnvState:
        return load(self.file(ENV_STATE), ENV_STATE)

    def claims(self) -> Claims | None:
        return read_claims(self.file(CLAIMS))

    def provenance(self) -> Provenance | None:
        """``state/provenance.json``, or None for a run made before it was captured (or
        whose capture of it failed: ``run.json`` ``capture_errors`` says so)."""
        if not self.has(PROVENANCE):
            return None
        return load(self.file(PROVENANCE), PROVENANCE)

    def input_hashes(self) -> dict[str, str]:
        """sha256 of each input file that exists, by its path relative to the run."""
        return {k.rel: sha256_file(self.file(k)) for k in INPUT_FILES
                if self.file(k).is_file()}


class ArtifactDir(_Folder):
    """An artifact folder made by ``synth export`` (docs/export.md)."""

    def manifest_bytes(self) -> bytes:
        """``manifest.json`` as written (size-capped, UTF-8 checked): what digests hash."""
        return read_text(self.file(MANIFEST), MANIFEST).encode("utf-8")

    def manifest(self) -> Manifest:
        return load(self.file(MANIFEST), MANIFEST)

    def claims(self) -> Claims | None:
        return read_claims(self.file(CLAIMS))

    def plan(self) -> BuildPlan | None:
        """``plan.json``'s plan, the one the artifact was rendered from; None for an
        artifact exported before synth wrote it. (How it was decided, command by command,
        is :meth:`export_report`.)"""
        if not self.has(PLAN):
            return None
        return load(self.file(PLAN), PLAN).plan

    def verification(self) -> VerificationRecord | None:
        """``verification.json``, the last ``synth verify --rebuild`` of this artifact (the
        author's, in a published one), or None when it has none."""
        if not self.has(VERIFICATION):
            return None
        return load(self.file(VERIFICATION), VERIFICATION)

    def export_report(self) -> ExportReport | None:
        """``export-report.json``, or None when the artifact has none."""
        if not self.has(EXPORT_REPORT):
            return None
        return load(self.file(EXPORT_REPORT), EXPORT_REPORT)
