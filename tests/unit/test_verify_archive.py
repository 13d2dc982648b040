"""A published artifact (``export --archive``): its ``.tar.gz`` must be the one its
``.sha256`` records, a folder's manifest the archive's; ``synth verify ARCHIVE.tar.gz``
unpacks a checked archive only, file by file within the rules, and nothing is read whole."""

from __future__ import annotations

import hashlib
import io
import json
import os
import resource
import shutil
import tarfile
from pathlib import Path

import pytest
from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.errors import InputFileError, SynthError, VerifyError
from synth.export.artifact import ExportOptions, export_run
from synth.verify.archive import check_folder_against_archive, unpack_checked
from synth.verify.rebuild import check_artifact
from tests.distill_runs import NO_ENGINE
from tests.fuzz_inputs import run_cli


def _published(tmp_path: Path) -> tuple[Path, Path]:
    run_dir = _run(tmp_path)
    result = export_run(ExportOptions(run_dir, out_dir=tmp_path / "pub" / "export",
                                      locker=fake_locker, ask_live=False, archive=True),
                        Settings.load(artifacts_dir=tmp_path), NO_ENGINE)
    assert result.archive is not None
    return result.artifact_dir, result.archive


def _check(folder: Path) -> list[str]:
    said: list[str] = []
    manifest = (folder / "manifest.json").read_bytes()
    check_folder_against_archive(folder, json.loads(manifest), manifest, said.append)
    return said


def _forge_record(archive: Path) -> None:
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    archive.with_name(archive.name + ".sha256").write_text(f"{digest}  {archive.name}\n")


def test_a_folder_is_checked_against_its_archive(tmp_path: Path) -> None:
    folder, archive = _published(tmp_path)
    assert "matches its .sha256" in _check(folder)[0]
    manifest = folder / "manifest.json"
    manifest.write_text(manifest.read_text().replace('"warnings": [', '"warnings": ["x", ', 1))
    with pytest.raises(VerifyError, match="not the manifest of"):
        _check(folder)
    manifest.write_bytes(b"")  # restored below from the archive's own copy
    with tarfile.open(archive) as tar:
        member = tar.extractfile(f"{archive.name.removesuffix('.tar.gz')}/manifest.json")
        assert member is not None
        manifest.write_bytes(member.read())
    _check(folder)
    with archive.open("r+b") as fh:  # one byte of the archive changed
        fh.seek(100)
        byte = fh.read(1)
        fh.seek(100)
        fh.write(bytes([byte[0] ^ 1]))
    with pytest.raises(VerifyError, match="not the one published"):
        _check(folder)
    record = archive.with_name(archive.name + ".sha256")
    record.write_text("not a record\n")
    with pytest.raises(InputFileError, match="sha256sum"):
        _check(folder)
    record.unlink()
    with pytest.raises(VerifyError, match=r"no .*sha256 beside it"):
        _check(folder)


def test_a_checked_archive_unpacks_beside_itself_once(tmp_path: Path) -> None:
    _folder, archive = _published(tmp_path)
    dl = tmp_path / "downloads"
    dl.mkdir()
    for p in (archive, archive.with_name(archive.name + ".sha256")):
        shutil.copy(p, dl / p.name)
    said: list[str] = []
    unpacked = unpack_checked(dl / archive.name, said.append)
    assert unpacked == dl / archive.name.removesuffix(".tar.gz")
    files, problems = check_artifact(unpacked, json.loads(
        (unpacked / "manifest.json").read_text()))
    assert problems == [] and files
    assert unpack_checked(dl / archive.name, said.append) == unpacked  # as it is: reused
    (unpacked / "manifest.json").write_text("{}")
    with pytest.raises(VerifyError, match="not this archive's artifact"):
        unpack_checked(dl / archive.name, said.append)


def _evil_archive(dest: Path, name: str, *members: tarfile.TarInfo) -> Path:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        top = tarfile.TarInfo(name)
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for m in members:
            tar.addfile(m, io.BytesIO(b"x" * m.size) if m.isfile() else None)
    path = dest / f"{name}.tar.gz"
    path.write_bytes(buf.getvalue())
    _forge_record(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "device", "outside", "hardlink out", "two tops"])
def test_an_archive_with_a_hostile_member_is_refused(tmp_path: Path, kind: str) -> None:
    """Even with a matching .sha256 (anyone can publish one), the members obey the rules."""
    m = tarfile.TarInfo("evil/x")
    if kind == "fifo":
        m.type = tarfile.FIFOTYPE
    elif kind == "device":
        m.type, m.devmajor, m.devminor = tarfile.BLKTYPE, 8, 0
    elif kind == "outside":
        m.name, m.size = "evil/../../escaped", 1
    elif kind == "hardlink out":
        (tmp_path / "host.txt").write_text("host\n")
        m.type, m.linkname = tarfile.LNKTYPE, "../host.txt"
    else:
        m.name, m.size = "other/x", 1
    archive = _evil_archive(tmp_path, "evil", m)
    with pytest.raises(SynthError):
        unpack_checked(archive, lambda _m: None)
    assert not (tmp_path / "evil").exists() and not (tmp_path.parent / "escaped").exists()
    if kind == "hardlink out":
        assert (tmp_path / "host.txt").stat().st_nlink == 1


def test_a_huge_archive_is_hashed_in_chunks(tmp_path: Path) -> None:
    archive = tmp_path / "big.tar.gz"
    with archive.open("wb") as fh:
        fh.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
    archive.with_name("big.tar.gz.sha256").write_text(f"{'0' * 64}  big.tar.gz\n")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(VerifyError, match="not the one published"):
        unpack_checked(archive, lambda _m: None)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 256 * 1024, grown_kib


def test_verify_takes_a_published_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    _folder, archive = _published(tmp_path)
    code, _out, err = run_cli("verify", str(archive))
    assert code == 11 and "--rebuild" in err  # UsageError: nothing unpacked
    unpacked = archive.with_name(archive.name.removesuffix(".tar.gz"))
    assert not unpacked.exists()
    code, _out, err = run_cli("verify", str(archive), "--rebuild")
    assert "matches its .sha256" in err and (unpacked / "manifest.json").is_file()
    assert code == 13  # checked and unpacked; then no engine here to rebuild it with
    shutil.rmtree(unpacked)
    os.remove(archive.with_name(archive.name + ".sha256"))
    code, _out, err = run_cli("verify", str(archive), "--rebuild")
    assert code == VerifyError.exit_code and "sha256 beside it" in err
