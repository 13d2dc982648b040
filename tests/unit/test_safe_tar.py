"""synth.util.safe_tar: tars from outside cannot write outside their destination, on a Python
with the standard library's extraction filters and (its own check) on one without."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from synth.util import safe_tar

Spec = tuple[str, str, object, int]  # kind, name, content or link target, mode


def _tar(*members: Spec) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for kind, name, value, mode in members:
            info = tarfile.TarInfo(name)
            info.mode, info.mtime = mode, 1_700_000_000
            if kind == "file":
                data = str(value).encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "sym": tarfile.SYMTYPE,
                         "hard": tarfile.LNKTYPE, "fifo": tarfile.FIFOTYPE}[kind]
            if kind in ("sym", "hard"):
                info.linkname = str(value)
            tar.addfile(info)
    return buf.getvalue()


def _fallback(data: bytes, dest: Path, policy: safe_tar.Policy, last_only: bool = False
              ) -> None:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        safe_tar.extract_checked(tar, members[-1:] if last_only else members, dest,
                                 policy=policy)


def _stdlib(data: bytes, dest: Path, policy: safe_tar.Policy, last_only: bool = False
            ) -> None:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        tar.extractall(dest, members[-1:] if last_only else members, filter=policy)


def _tree(root: Path) -> dict[str, tuple[str, object, int]]:
    """Every path under ``root``: its kind, content or link target, and mode."""
    out: dict[str, tuple[str, object, int]] = {}
    for path in sorted(root.rglob("*")):
        rel, st = path.relative_to(root).as_posix(), path.lstat()
        if path.is_symlink():
            out[rel] = ("sym", os.readlink(path), 0)
        elif path.is_dir():
            out[rel] = ("dir", None, stat.S_IMODE(st.st_mode))
        elif stat.S_ISFIFO(st.st_mode):
            out[rel] = ("fifo", None, stat.S_IMODE(st.st_mode))
        else:
            out[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


D, F, L, P = "dir", "file", "sym", "fifo"
Tree = tuple[tuple[str, str, int], ...]  # path, kind, mode (0 for a symlink)
Fate = tuple[str, Tree]  # extracted / refused / link target missing, and what is on disk

#: Archives and their fate under each policy (``tar``, ``data``): extracted, or refused at
#: a member (those before it stay). The same table is what the standard library's filters
#: give (checked where this Python has them) and what the fallback gives (checked on every
#: Python), so CI on a Python without filters still holds the fallback to them.
CASES: dict[str, tuple[tuple[Spec, ...], Fate, Fate]] = {
    "plain tree": (
        (("dir", "d", None, 0o755), ("file", "d/f", "x", 0o644),
         ("file", "d/run.sh", "#!", 0o755)),
        ("extracted", (("d", D, 0o755), ("d/f", F, 0o644), ("d/run.sh", F, 0o755))),
        ("extracted", (("d", D, 0o755), ("d/f", F, 0o644), ("d/run.sh", F, 0o755)))),
    "special mode bits go": (
        (("file", "suid", "x", 0o4777), ("file", "shared", "x", 0o666),
         ("dir", "sticky", None, 0o1777)),
        ("extracted", (("shared", F, 0o644), ("sticky", D, 0o755), ("suid", F, 0o755))),
        ("extracted", (("shared", F, 0o644), ("sticky", D, 0o755), ("suid", F, 0o755)))),
    "no owner bits": (
        (("file", "noexec", "x", 0o066), ("file", "exec", "x", 0o111)),
        ("extracted", (("exec", F, 0o111), ("noexec", F, 0o044))),
        ("extracted", (("exec", F, 0o711), ("noexec", F, 0o644)))),
    "read-only dir filled": (
        (("dir", "ro", None, 0o555), ("file", "ro/f", "x", 0o444)),
        ("extracted", (("ro", D, 0o555), ("ro/f", F, 0o444))),
        ("extracted", (("ro", D, 0o755), ("ro/f", F, 0o644)))),
    "absolute name": (
        (("file", "/abs/f", "x", 0o644),),
        ("extracted", (("abs", D, 0o755), ("abs/f", F, 0o644))),
        ("extracted", (("abs", D, 0o755), ("abs/f", F, 0o644)))),
    "dot-dot name": (
        (("file", "ok", "x", 0o644), ("file", "../escape", "x", 0o644)),
        ("refused", (("ok", F, 0o644),)),
        ("refused", (("ok", F, 0o644),))),
    "dot-dot inside": (
        (("dir", "a", None, 0o755), ("file", "a/../b", "x", 0o644)),
        ("extracted", (("a", D, 0o755), ("b", F, 0o644))),
        ("extracted", (("a", D, 0o755), ("b", F, 0o644)))),
    "relative link inside": (
        (("dir", "d", None, 0o755), ("file", "d/f", "x", 0o644), ("sym", "l", "d/f", 0o777)),
        ("extracted", (("d", D, 0o755), ("d/f", F, 0o644), ("l", L, 0))),
        ("extracted", (("d", D, 0o755), ("d/f", F, 0o644), ("l", L, 0)))),
    "link out, relative": (
        (("sym", "up", "../../outside", 0o777),),
        ("extracted", (("up", L, 0),)),
        ("refused", ())),
    "link out, absolute": (
        (("sym", "etc", "/etc", 0o777),),
        ("extracted", (("etc", L, 0),)),
        ("refused", ())),
    "through a link out": (
        (("sym", "root", "/", 0o777), ("file", "root/tmp/x", "x", 0o644)),
        ("refused", (("root", L, 0),)),
        ("refused", ())),
    "hard link inside": (
        (("file", "f", "x", 0o644), ("hard", "g", "f", 0o644)),
        ("extracted", (("f", F, 0o644), ("g", F, 0o644))),
        ("extracted", (("f", F, 0o644), ("g", F, 0o644)))),
    # The standard ``tar`` filter checks a hard link's own path only (the link is made, and
    # fails here for want of a target: STDLIB_TAR); ours refuses its target too.
    "hard link out": (
        (("hard", "g", "../outside", 0o644),),
        ("refused", ()),
        ("refused", ())),
    # A hard link whose target is in the archive but was not extracted (one member asked
    # for): the target's content under the link's name.
    "hard link, target not extracted": (
        (("file", "t", "x", 0o644), ("hard", "g", "t", 0o644)),
        ("extracted", (("g", F, 0o644),)),
        ("extracted", (("g", F, 0o644),))),
    "fifo": (
        (("fifo", "p", None, 0o644),),
        ("extracted", (("p", P, 0o644),)),
        ("refused", ())),
}


#: Where the standard library's ``tar`` filter is less strict than the fallback (by design:
#: synth.util.safe_tar's docstring), what it gives.
STDLIB_TAR: dict[str, Fate] = {
    "hard link out": ("link target missing", ()),
}


def _fate(extract: Callable[[bytes, Path, safe_tar.Policy, bool], None], case: str,
          policy: safe_tar.Policy, tmp_path: Path) -> Fate:
    dest = tmp_path / "dest"
    dest.mkdir()
    try:
        extract(_tar(*CASES[case][0]), dest, policy, "not extracted" in case)
        outcome = "extracted"
    except (*safe_tar.REFUSED, safe_tar.UnsafeMemberError):
        outcome = "refused"
    except KeyError:  # a hard link to a file neither on disk nor in the archive
        outcome = "link target missing"
    assert not (tmp_path / "outside").exists()
    return outcome, tuple((path, kind, mode) for path, (kind, _v, mode) in _tree(dest).items())


def _expected(case: str, policy: safe_tar.Policy) -> Fate:
    return CASES[case][1] if policy == "tar" else CASES[case][2]


@pytest.mark.parametrize("policy", ["tar", "data"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_fallback_decides_as_the_table_says(tmp_path: Path, case: str,
                                                policy: safe_tar.Policy) -> None:
    assert _fate(_fallback, case, policy, tmp_path) == _expected(case, policy)


@pytest.mark.skipif(not safe_tar.HAS_FILTERS, reason="this Python has no extraction filters "
                    "(before 3.11.4): the table is checked against them where it has")
@pytest.mark.parametrize("policy", ["tar", "data"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_table_is_what_the_standard_filters_do(tmp_path: Path, case: str,
                                                  policy: safe_tar.Policy) -> None:
    expected = (STDLIB_TAR[case] if policy == "tar" and case in STDLIB_TAR
                else _expected(case, policy))
    assert _fate(_stdlib, case, policy, tmp_path) == expected


@pytest.mark.parametrize("policy", ["tar", "data"])
@pytest.mark.parametrize("members", [
    (("hard", "g", "../outside.txt", 0o644),),
    (("sym", "l", "../outside.txt", 0o777), ("hard", "g", "l", 0o644)),
    (("sym", "up", "..", 0o777), ("hard", "g", "up/outside.txt", 0o644)),
    (("dir", "d", None, 0o755), ("hard", "g", "d/../../outside.txt", 0o644)),
    (("hard", "g", "{outside}", 0o644),),
], ids=["dot-dot", "through a symlink", "through a folder link", "dot-dot inside",
        "absolute"])
@pytest.mark.parametrize("way", ["fallback", "extract_all"])
def test_no_hard_link_reaches_a_file_outside(tmp_path: Path, policy: safe_tar.Policy,
                                             members: tuple[Spec, ...], way: str) -> None:
    """A hard link to a host file would make it part of the destination: its content lands
    in what synth reads, a write into the destination lands in the host file. Refused under
    both policies, whichever way the target is named, by the fallback and by what this
    Python uses (the standard filters with the same check added, where it has them)."""
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    dest = tmp_path / "dest"
    dest.mkdir()
    members = tuple((kind, name, str(value).format(outside=outside), mode)
                    for kind, name, value, mode in members)
    with pytest.raises((*safe_tar.REFUSED, safe_tar.UnsafeMemberError),
                       match=r"outside|absolute"):
        if way == "fallback":
            _fallback(_tar(*members), dest, policy)
        else:
            with tarfile.open(fileobj=io.BytesIO(_tar(*members))) as tar:
                safe_tar.extract_all(tar, dest, policy=policy)
    assert outside.stat().st_nlink == 1
    assert not (dest / "g").exists()


def test_a_member_cannot_leave_the_destination(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    for policy in ("tar", "data"):
        with pytest.raises(safe_tar.UnsafeMemberError, match="outside"):
            _fallback(_tar(("file", "../escape", "x", 0o644)), dest, policy)
        with pytest.raises(safe_tar.UnsafeMemberError, match=r"outside|absolute"):
            _fallback(_tar(("sym", "root", str(tmp_path), 0o777),
                           ("file", "root/escape", "x", 0o644)), dest / policy, policy)
    assert not (tmp_path / "escape").exists()


def test_data_refuses_links_out_and_devices_and_takes_no_owner(tmp_path: Path) -> None:
    for n, members in enumerate([(("sym", "l", "/etc/passwd", 0o777),),
                                 (("sym", "l", "../x", 0o777),),
                                 (("hard", "h", "../x", 0o644),),
                                 (("fifo", "p", None, 0o644),)]):
        with pytest.raises(safe_tar.UnsafeMemberError):
            _fallback(_tar(*members), tmp_path / str(n), "data")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("owned")
        info.uid, info.gid, info.uname, info.gname = 4242, 4242, "nobody-here", "nobody-here"
        tar.addfile(info, io.BytesIO(b""))
    _fallback(buf.getvalue(), tmp_path / "own", "data")
    st = (tmp_path / "own" / "owned").stat()
    assert (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid())


def test_modes_as_the_policies_say(tmp_path: Path) -> None:
    members = (("file", "suid", "x", 0o4777), ("file", "noexec", "x", 0o066),
               ("dir", "ro", None, 0o555), ("file", "ro/f", "x", 0o444))
    _fallback(_tar(*members), tmp_path / "tar", "tar")
    _fallback(_tar(*members), tmp_path / "data", "data")
    assert _tree(tmp_path / "tar") == {
        "noexec": ("file", b"x", 0o044), "ro": ("dir", None, 0o555),
        "ro/f": ("file", b"x", 0o444), "suid": ("file", b"x", 0o755)}
    assert _tree(tmp_path / "data") == {
        "noexec": ("file", b"x", 0o644), "ro": ("dir", None, 0o755),
        "ro/f": ("file", b"x", 0o644), "suid": ("file", b"x", 0o755)}


def test_extract_all_uses_what_this_python_has(tmp_path: Path) -> None:
    with (tarfile.open(fileobj=io.BytesIO(_tar(("file", "../x", "x", 0o644)))) as tar,
          pytest.raises(safe_tar.REFUSED)):
        safe_tar.extract_all(tar, tmp_path / "dest", policy="tar")
    assert not (tmp_path / "x").exists()
