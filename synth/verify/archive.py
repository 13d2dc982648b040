"""A published artifact: ``<task>-<run-id>.tar.gz`` and its ``.sha256`` (``synth export
--archive``, docs/export.md), checked before anything in it is trusted.

The archive holds the artifact folder, whose ``manifest.json`` names every other file's
digest; the archive's own digest cannot be inside it, so it is recorded beside it, in
``<name>.tar.gz.sha256`` (``sha256sum -c`` format), and the manifest's ``archive`` key names
both files. The chain a reader checks is therefore: the record's digest is the archive's
(:func:`opened_checked`, the archive hashed in chunks, never held whole, and read after
from the same open file), the folder's
``manifest.json`` is the archive's (:func:`check_folder_against_archive`: a folder whose
manifest was rewritten after publication is refused), and the folder's files are its
manifest's (``synth.verify.rebuild.check_artifact``).

``synth verify ARCHIVE.tar.gz --rebuild`` (:func:`unpack_checked`) checks the record,
then unpacks the archive beside it: every member a file, folder or link (a device, FIFO
or other special member refuses the archive), at most :data:`MAX_MEMBERS` members and
:data:`MAX_UNPACKED` bytes, under the ``tar`` policy of ``synth.util.safe_tar`` (no member
outside the folder, not even through a link unpacked before it, no hard link out, no
setuid bit). A symbolic link whose target leaves the artifact is unpacked as the link it
is (an export carries one as it found it, docs/export.md): synth never follows it.
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from synth.errors import InputFileError, VerifyError
from synth.formats.store import MANIFEST
from synth.util import safe_io, safe_tar

Say = Callable[[str], None]

SUFFIX = ".tar.gz"
#: What unpacking a published archive may cost.
MAX_MEMBERS = 200_000
MAX_UNPACKED = 64 << 30
_RECORD = re.compile(r"([0-9a-f]{64}) [ *](\S.*)")


def read_record(path: Path) -> tuple[str, str]:
    """(digest, file name) of a ``<name>.tar.gz.sha256`` file (one ``sha256sum`` line)."""
    text = safe_io.decode_utf8(safe_io.read_regular(path, 4096), path).strip()
    match = _RECORD.fullmatch(text)
    if match is None:
        raise InputFileError(f"{path}: not one `<sha256>  <file name>` line (sha256sum's "
                             "format)")
    return match.group(1), match.group(2)


def _record_of(archive: Path) -> str:
    """The digest ``<name>.tar.gz.sha256`` beside the archive records for it."""
    record = archive.with_name(archive.name + ".sha256")
    if not os.path.lexists(record):
        raise VerifyError(f"{archive} has no {record.name} beside it: its digest cannot be "
                          "checked, so nothing in it is trusted.",
                          hint="Download the .sha256 the archive was published with.")
    want, named = read_record(record)
    if named != archive.name:
        raise VerifyError(f"{record} records {named!r}, not {archive.name!r}.")
    return want


@contextmanager
def opened_checked(archive: Path) -> Iterator[tuple[BinaryIO, str]]:
    """The archive open (a regular file, not a link) once its bytes, hashed in chunks, are
    the ones its record names; every later read is of this same open file, so a file
    swapped in after the check is never what is read."""
    want = _record_of(archive)
    with safe_io.opened_regular(archive) as fd, os.fdopen(os.dup(fd), "rb") as fh:
        h = hashlib.sha256()
        while chunk := fh.read(1 << 20):
            h.update(chunk)
        if h.hexdigest() != want:
            raise VerifyError(f"{archive}: sha256 {h.hexdigest()} is not the {want} that "
                              f"{archive.name}.sha256 records; the archive is not the one "
                              "published.")
        yield fh, want


def _manifest_member(fh: BinaryIO, where: Path) -> bytes:
    """The bytes of ``<top>/manifest.json`` in the archive (capped), streaming through it."""
    fh.seek(0)
    try:
        with tarfile.open(fileobj=fh, mode="r|gz") as tar:
            for member in tar:
                parts = member.name.split("/")
                if len(parts) == 2 and parts[1] == MANIFEST.rel and member.isfile():
                    if member.size > MANIFEST.max_bytes:
                        break
                    data = tar.extractfile(member)
                    return data.read(MANIFEST.max_bytes + 1) if data else b""
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise InputFileError(f"{where}: not a readable .tar.gz ({exc})") from None
    raise InputFileError(f"{where}: no <name>/manifest.json (of at most "
                         f"{MANIFEST.max_bytes} bytes) in it")


def check_folder_against_archive(artifact_dir: Path, manifest: Mapping[str, Any],
                                 manifest_bytes: bytes, say: Say) -> None:
    """When the archive the manifest names lies beside the folder (as export writes it),
    the folder's manifest must be the archive's, and the archive the one its ``.sha256``
    records; a folder without its archive is checked against its own manifest only."""
    record = manifest.get("archive")
    name = record.get("name") if isinstance(record, Mapping) else None
    if not isinstance(name, str) or "/" in name or not name.endswith(SUFFIX):
        return
    archive = artifact_dir.parent / name
    if not os.path.lexists(archive):
        say(f"Archive: {name} is not beside {artifact_dir}; the folder is checked against "
            "its own manifest only")
        return
    with opened_checked(archive) as (fh, digest):
        if _manifest_member(fh, archive) != manifest_bytes:
            raise VerifyError(
                f"{artifact_dir}/manifest.json is not the manifest of {archive} (sha256 "
                f"{digest[:12]}…, as published): the folder was changed after the archive "
                "was made.", hint=f"Unpack {name} again, or verify the archive itself: "
                f"`synth verify {archive} --rebuild`.")
    say(f"Archive: {name} matches its .sha256 ({digest[:12]}…) and this folder's manifest")


def _check_members(fh: BinaryIO, where: Path) -> None:
    """Every member a file, folder or link, within the caps; read as a stream."""
    count = size = 0
    fh.seek(0)
    try:
        with tarfile.open(fileobj=fh, mode="r|gz") as tar:
            for member in tar:
                count += 1
                size += max(member.size, 0)
                if count > MAX_MEMBERS or size > MAX_UNPACKED:
                    raise InputFileError(f"{where}: over {MAX_MEMBERS} members or "
                                         f"{MAX_UNPACKED} bytes unpacked; not unpacked")
                if not (member.isfile() or member.isdir() or member.issym()
                        or member.islnk()):
                    raise InputFileError(f"{where}: {member.name!r} is a device, FIFO or "
                                         "other special file; an artifact holds none")
    except (OSError, EOFError, tarfile.TarError) as exc:
        raise InputFileError(f"{where}: not a readable .tar.gz ({exc})") from None


def unpack_checked(archive: Path, say: Say) -> Path:
    """The artifact folder of a published archive: its digest checked against its record,
    then unpacked beside it (``<name>/``), or, where that folder exists already, that
    folder when its manifest is the archive's."""
    stem = archive.name.removesuffix(SUFFIX)
    dest = archive.parent / stem
    with opened_checked(archive) as (fh, digest):
        if os.path.lexists(dest):
            have = dest / MANIFEST.rel
            if dest.is_symlink() or have.is_symlink() or not have.is_file() or \
                    safe_io.read_regular(have, MANIFEST.max_bytes) != \
                    _manifest_member(fh, archive):
                raise VerifyError(f"{dest} exists and is not this archive's artifact; synth "
                                  "will not unpack over it.", hint="Move it away, or verify it.")
            say(f"Archive: {archive.name} (sha256 {digest[:12]}…) is unpacked at {dest} "
                "already")
            return dest
        _check_members(fh, archive)
        _unpack(fh, archive, stem, dest)
    say(f"Archive: {archive.name} matches its .sha256 ({digest[:12]}…); unpacked to {dest}")
    return dest


def _unpack(fh: BinaryIO, archive: Path, stem: str, dest: Path) -> None:
    """The archive's one top folder, unpacked in a private folder beside ``dest`` and
    renamed to it."""
    with tempfile.TemporaryDirectory(prefix=f".{stem}.", dir=archive.parent) as tmp:
        fh.seek(0)
        try:
            with tarfile.open(fileobj=fh, mode="r:gz") as tar:
                safe_tar.extract_all(tar, Path(tmp), policy="tar")
        except (OSError, EOFError, tarfile.TarError, KeyError) as exc:
            raise InputFileError(f"{archive}: refused while unpacking ({exc})") from None
        top = sorted(p.name for p in Path(tmp).iterdir())
        if top != [stem] or not (Path(tmp) / stem).is_dir():
            raise InputFileError(f"{archive}: holds {top[:5]}, not the one folder {stem}/ "
                                 "an export archive has")
        (Path(tmp) / stem).rename(dest)


def is_archive(ref: str | None) -> bool:
    try:
        return bool(ref) and str(ref).endswith(SUFFIX) and Path(str(ref)).is_file()
    except (OSError, ValueError):
        return False

