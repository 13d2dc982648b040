"""The store: the one place that reads a run directory's or an artifact's files.

Every file has one :class:`FileKind` (its path, JSON Schema, newest known format and size
cap) and one loader, and every loader has the same error policy: a file that is missing,
not a regular file, over its size cap, not UTF-8, not JSON, nested too deeply, of a newer
format, or not valid against its schema raises :class:`synth.errors.InputFileError`
naming the file (``path:line`` for a JSON Lines file) and what is wrong. Nothing is
repaired or guessed, and an oversized file is refused by its size, unread.
See docs/formats.md ("Reading the files").

``RunDir(path).run_record()``, ``.audit()``, ``.apt_state()``, ``.python_state()``,
``.diff_state()``, ``.env_state()``, ``.claims()``; ``ArtifactDir(path).manifest()``,
``.claims()``, ``.export_report()``; :func:`read_verify` for a ``verify.json``
(:func:`parse_verify` for its text).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from synth.errors import InputFileError
from synth.formats import model
from synth.formats.schemas import fast_check, validate

MiB = 1 << 20


@dataclass(frozen=True)
class FileKind:
    """One file format: where it lives, its schema, its newest format, its size cap."""

    rel: str
    schema: str
    #: The newest ``format`` this synth reads; None for a file without one (claims.json).
    format: int | None
    max_bytes: int


RUN_RECORD = FileKind("run.json", "run", model.RUN_FORMAT, 64 * MiB)
AUDIT_LOG = FileKind("audit.jsonl", "audit-record", model.AUDIT_FORMAT, 512 * MiB)
APT_STATE = FileKind("state/apt.json", "apt-state", model.APT_STATE_FORMAT, 64 * MiB)
PYTHON_STATE = FileKind("state/python.json", "python-state", model.PYTHON_STATE_FORMAT,
                        64 * MiB)
DIFF_STATE = FileKind("state/diff.json", "diff-state", model.DIFF_STATE_FORMAT, 64 * MiB)
ENV_STATE = FileKind("state/env.json", "env-state", model.ENV_STATE_FORMAT, 64 * MiB)
PROVENANCE = FileKind("state/provenance.json", "provenance-state",
                      model.PROVENANCE_STATE_FORMAT, 64 * MiB)
#: Agent-written: small by nature, and loaded by verify whole.
CLAIMS = FileKind("claims.json", "claims", None, 1 * MiB)
MANIFEST = FileKind("manifest.json", "manifest", model.MANIFEST_FORMAT, 16 * MiB)
EXPORT_REPORT = FileKind("export-report.json", "export-report", model.EXPORT_REPORT_FORMAT,
                         64 * MiB)
VERIFY_DOCUMENT = FileKind("verify.json", "verify", model.VERIFY_FORMAT, 64 * MiB)
PLAN = FileKind(model.PLAN_FILE, "plan", model.PLAN_FORMAT, 64 * MiB)
#: Written by verify into the artifact folder; it travels with the artifact.
VERIFICATION = FileKind("verification.json", "verification", model.VERIFICATION_FORMAT,
                        1 * MiB)

#: The run files an export is distilled from; their sha256 goes into the manifest.
INPUT_FILES = (RUN_RECORD, AUDIT_LOG, APT_STATE, DIFF_STATE, ENV_STATE, PYTHON_STATE,
               PROVENANCE)
#: How many schema errors one message lists.
_MAX_ERRORS = 5


def _fail(where: str, what: str) -> InputFileError:
    return InputFileError(f"{where}: {what}")


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def read_bytes(path: Path, kind: FileKind) -> bytes:
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


def read_text(path: Path, kind: FileKind) -> str:
    """The text of ``path``, a regular file (not a link) under ``kind``'s size cap, as UTF-8;
    an error names the line and the byte that is not."""
    data = read_bytes(path, kind)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _fail(f"{path}:{line}", f"not UTF-8 (byte {exc.start})") from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: One decoder for every file (json.loads with arguments builds one per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def parse_json(text: str, where: str) -> Any:
    """One JSON value; ``where`` names it in errors (``path`` or ``path:line``)."""
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


def check_document(doc: Any, kind: FileKind, where: str, *, versioned: bool = True
                   ) -> dict[str, Any]:
    """``doc`` as a JSON object of ``kind``: its format known, valid against its schema.
    ``versioned``: the object carries the file's ``format`` (a JSONL file's header only)."""
    if not isinstance(doc, dict):
        raise _fail(where, f"not a JSON object (a {type(doc).__name__}); not a {kind.rel}")
    fmt = doc.get("format")
    if kind.format is not None and versioned:
        if not isinstance(fmt, int) or isinstance(fmt, bool):
            raise _fail(where, f"no integer `format` field; not a synth {kind.rel}")
        if fmt > kind.format:
            raise InputFileError(
                f"{where}: format {fmt} is newer than this synth reads (<= {kind.format}).",
                hint="Upgrade synth to read it.")
    errors = validate(doc, kind.schema)
    if errors:
        shown = "; ".join(_clip(e) for e in errors[:_MAX_ERRORS])
        more = f" (and {len(errors) - _MAX_ERRORS} more)" if len(errors) > _MAX_ERRORS else ""
        raise _fail(where, f"not a valid {kind.rel}: {shown}{more}")
    return doc


def load_json(path: Path, kind: FileKind) -> dict[str, Any]:
    """A JSON file of ``kind``, read and checked (the module's error policy)."""
    return check_document(parse_json(read_text(path, kind), str(path)), kind, str(path))


def iter_jsonl(path: Path, kind: FileKind) -> Iterator[tuple[int, dict[str, Any]]]:
    r"""(line number, checked object) of each non-blank line of a JSON Lines file.

    Lines end at ``\n`` alone (JSON Lines): a record may hold U+2028 or U+0085 unescaped,
    as a JSON string may, and no other character ends it. A line that is a plain valid
    record (an object, no ``format`` to check, no escape ``\u``, accepted by the schema's
    fast check) is taken as orjson reads its bytes; any other line is decoded (naming its
    line and byte when it is not UTF-8) and goes through :func:`parse_json` and
    :func:`check_document`, which name it in their errors. Both give the same answer: the
    first is that answer for the common case, without building the line's text or its
    location (100,000 lines of a long audit log). orjson decodes three times faster than
    the standard decoder here; what it refuses that the standard one reads (integers
    beyond 64 bits) takes the second way."""
    fast = fast_check(kind.schema)
    decode = orjson.loads
    offset = 0
    for number, raw in enumerate(read_bytes(path, kind).split(b"\n"), start=1):
        start, offset = offset, offset + len(raw) + 1
        if fast is not None and b"\\u" not in raw:
            try:
                doc = decode(raw)
            except ValueError:  # orjson.JSONDecodeError is one
                doc = None
            if type(doc) is dict and doc.get("type") != "header" and fast(doc):
                yield number, doc
                continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _fail(f"{path}:{number}", f"not UTF-8 (byte {start + exc.start})") from None
        if line.strip():
            where = f"{path}:{number}"
            doc = parse_json(line, where)
            header = isinstance(doc, dict) and doc.get("type") == "header"
            yield number, check_document(doc, kind, where, versioned=header)


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


def _audit_records(path: Path) -> Iterator[dict[str, Any]]:
    """The records of an ``audit.jsonl`` after its header (first line), each checked."""
    header: dict[str, Any] | None = None
    for number, obj in iter_jsonl(path, AUDIT_LOG):
        if obj["type"] == "header":
            if header is not None:
                raise _fail(f"{path}:{number}", "a second header record")
            header = obj
            yield obj
        elif header is None:
            raise _fail(f"{path}:{number}", "a record before the header")
        else:
            yield obj
    if header is None:
        raise _fail(str(path), "no header record; not a synth audit log")


def read_audit(path: Path) -> model.AuditLog:
    """An ``audit.jsonl``: the header (first line), then every record, each checked."""
    lines = _audit_records(path)
    header = next(lines)  # or the file's own error: no header, a record before it
    return model.AuditLog(header=header, records=tuple(lines))


def read_audit_commands(path: Path) -> tuple[model.AuditRecord, ...]:
    """:meth:`model.AuditLog.commands` of an ``audit.jsonl``, each record typed as it is
    read (a long log's checked documents are not all kept at once)."""
    lines = _audit_records(path)
    next(lines)  # the header
    return model.commands_of(lines)


def read_verify(path: Path) -> model.VerifyDocument:
    """A ``verify.json`` (schema ``verify``), validated."""
    return model.VerifyDocument.from_json(load_json(path, VERIFY_DOCUMENT))


def parse_verify(text: str, where: str) -> model.VerifyDocument:
    """A ``verify.json``'s text that came some other way (a bench worker sends it back),
    checked as :func:`read_verify` checks the file; ``where`` names it in errors."""
    if len(text.encode("utf-8", "surrogatepass")) > VERIFY_DOCUMENT.max_bytes:
        raise _fail(where, f"over the {VERIFY_DOCUMENT.max_bytes}-byte limit of a "
                    f"{VERIFY_DOCUMENT.rel} file")
    doc = check_document(parse_json(text, where), VERIFY_DOCUMENT, where)
    return model.VerifyDocument.from_json(doc)


def read_claims(path: Path) -> model.Claims | None:
    """An agent's ``claims.json``: None when there is none; an error when it is bad. Fields
    the schema does not declare are allowed, and kept (``Claims.raw``)."""
    if not os.path.lexists(path):
        return None
    return model.Claims.from_json(load_json(path, CLAIMS))


class _Folder:
    """A folder of synth files: where each kind lives, and whether it is there."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def file(self, kind: FileKind) -> Path:
        return self.path / kind.rel

    def has(self, kind: FileKind) -> bool:
        return os.path.lexists(self.file(kind))


class RunDir(_Folder):
    """A run directory, ``artifacts/runs/<task>/<run-id>/`` (docs/formats.md)."""

    def run_record(self) -> model.RunRecord:
        return model.RunRecord.from_json(load_json(self.file(RUN_RECORD), RUN_RECORD))

    def audit(self) -> model.AuditLog:
        return read_audit(self.file(AUDIT_LOG))

    def audit_commands(self) -> tuple[model.AuditRecord, ...]:
        """The audit's command records, typed and ordered by ``seq``."""
        return read_audit_commands(self.file(AUDIT_LOG))

    def apt_state(self) -> model.AptState:
        return model.AptState.from_json(load_json(self.file(APT_STATE), APT_STATE))

    def python_state(self) -> model.PythonState:
        return model.PythonState.from_json(load_json(self.file(PYTHON_STATE), PYTHON_STATE))

    def diff_state(self) -> model.DiffState:
        return model.DiffState.from_json(load_json(self.file(DIFF_STATE), DIFF_STATE))

    def env_state(self) -> model.EnvState:
        return model.EnvState.from_json(load_json(self.file(ENV_STATE), ENV_STATE))

    def claims(self) -> model.Claims | None:
        return read_claims(self.file(CLAIMS))

    def provenance(self) -> model.Provenance | None:
        """``state/provenance.json``, or None for a run made before it was captured (or
        whose capture of it failed: ``run.json`` ``capture_errors`` says so)."""
        if not self.has(PROVENANCE):
            return None
        return model.Provenance.from_json(load_json(self.file(PROVENANCE), PROVENANCE))

    def input_hashes(self) -> dict[str, str]:
        """sha256 of each input file that exists, by its path relative to the run."""
        return {k.rel: sha256_file(self.file(k)) for k in INPUT_FILES
                if self.file(k).is_file()}


class ArtifactDir(_Folder):
    """An artifact folder made by ``synth export`` (docs/export.md)."""

    def manifest_bytes(self) -> bytes:
        """``manifest.json`` as written (size-capped, UTF-8 checked): what digests hash."""
        return read_text(self.file(MANIFEST), MANIFEST).encode("utf-8")

    def manifest(self) -> model.Manifest:
        return model.Manifest.from_json(load_json(self.file(MANIFEST), MANIFEST))

    def claims(self) -> model.Claims | None:
        return read_claims(self.file(CLAIMS))

    def plan(self) -> model.BuildPlan | None:
        """``plan.json``'s plan, the one the artifact was rendered from; None for an
        artifact exported before synth wrote it. (How it was decided, command by command,
        is :meth:`export_report`.)"""
        if not self.has(PLAN):
            return None
        path = self.file(PLAN)
        return model.read_plan_document(load_json(path, PLAN), str(path))[0]

    def verification(self) -> model.VerificationRecord | None:
        """``verification.json``, the last ``synth verify --rebuild`` of this artifact (the
        author's, in a published one), or None when it has none."""
        if not self.has(VERIFICATION):
            return None
        return model.VerificationRecord.from_json(
            load_json(self.file(VERIFICATION), VERIFICATION))

    def export_report(self) -> model.ExportReport | None:
        """``export-report.json``, or None when the artifact has none."""
        if not self.has(EXPORT_REPORT):
            return None
        return model.ExportReport.from_json(load_json(self.file(EXPORT_REPORT), EXPORT_REPORT))
