"""No host git ever honours a ``.git`` that came out of a container: an agent's config
(``core.fsmonitor``, filter and diff drivers, hooks), attributes and refs are data to the
source patch, never configuration (docs/security.md, "Host processes")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from synth.export.source_patch import read_head, source_patch, tree_patch


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(cwd),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def _checkout(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "data.txt").write_bytes(b"one\r\ntwo\r\n")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "c")
    return root


def _hostile(source: Path, marker: Path) -> None:
    """What an agent can leave in /workspace/.git and the tree to run code on the host."""
    cmd = f"touch {marker}"
    with (source / ".git" / "config").open("a") as fh:
        fh.write(f'[core]\n\tfsmonitor = "sh -c \'{cmd}\'"\n\thooksPath = hooks\n'
                 f'[filter "x"]\n\tclean = sh -c \'{cmd}; cat\'\n\trequired = true\n'
                 f'[diff "x"]\n\ttextconv = sh -c \'{cmd}; cat\'\n\tcommand = {cmd}\n'
                 "[core]\n\tautocrlf = true\n")
    hooks = source / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    for name in ("pre-commit", "post-index-change", "fsmonitor-watchman"):
        (hooks / name).write_text(f"#!/bin/sh\n{cmd}\n")
        (hooks / name).chmod(0o755)
    (source / ".git" / "info").mkdir(exist_ok=True)
    (source / ".git" / "info" / "attributes").write_text("* filter=x diff=x\n")
    (source / ".gitattributes").write_text("* filter=x diff=x text eol=lf\n")


def test_agent_git_config_attributes_and_hooks_never_run_on_the_host(tmp_path: Path) -> None:
    original = _checkout(tmp_path / "original")
    head = _git(original, "rev-parse", "HEAD").strip()
    source = tmp_path / "source"
    shutil.copytree(original, source, symlinks=True)
    marker = tmp_path / "pwned"
    _hostile(source, marker)
    (source / "a.py").write_text("x = 2\n")
    git_before = {p: p.read_bytes() for p in (source / ".git").rglob("*") if p.is_file()}
    sp = source_patch(original, source)
    assert not marker.exists(), "a host git ran a command the agent wrote"
    assert sp.commit == head and sp.note is None
    assert sp.files == ("A\t.gitattributes", "M\ta.py")
    # The bytes as they are: no end-of-line rule of the agent's attributes applied.
    fresh = tmp_path / "fresh"
    _git(tmp_path, "clone", "-q", str(original), str(fresh))
    (tmp_path / "p").write_bytes(sp.patch)
    _git(fresh, "apply", str(tmp_path / "p"))
    assert (fresh / "a.py").read_text() == "x = 2\n"
    assert (fresh / "data.txt").read_bytes() == b"one\r\ntwo\r\n"
    # The agent's .git is carried as it was, byte for byte.
    assert {p: p.read_bytes() for p in (source / ".git").rglob("*") if p.is_file()} \
        == git_before


def test_an_agent_commit_does_not_move_the_patch_base(tmp_path: Path) -> None:
    # The patch starts at the commit the session got; the agent's own commits are edits.
    original = _checkout(tmp_path / "original")
    head = _git(original, "rev-parse", "HEAD").strip()
    source = tmp_path / "source"
    shutil.copytree(original, source, symlinks=True)
    (source / "a.py").write_text("x = 3\n")
    _git(source, "commit", "-q", "-am", "agent")
    sp = source_patch(original, source)
    assert sp.commit == head and sp.files == ("M\ta.py",)


def test_a_plain_tree_is_diffed_without_its_attributes(tmp_path: Path) -> None:
    original = tmp_path / "o"
    original.mkdir()
    (original / "t.txt").write_bytes(b"a\r\n")
    source = tmp_path / "s"
    shutil.copytree(original, source)
    (source / ".gitattributes").write_text("* filter=x text eol=lf\n")
    (source / "t.txt").write_bytes(b"b\r\n")
    (source / "new\nline.txt").write_text("n\n")
    sp = tree_patch(original, source)
    assert b"-a\r\n+b\r\n" in sp.patch
    assert 'A\tnew\nline.txt' in sp.files and b'"b/new\\nline.txt"' in sp.patch


def test_head_is_read_as_data(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    sha = "a" * 40
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    assert read_head(git) is None
    (git / "packed-refs").write_text(f"# pack-refs\n{sha} refs/heads/main\n")
    assert read_head(git) == sha
    (git / "refs" / "heads" / "main").write_text("b" * 40 + "\n")
    assert read_head(git) == "b" * 40
    (git / "HEAD").write_text("ref: refs/../../../etc/passwd\n")
    assert read_head(git) is None
    (git / "HEAD").unlink()
    (tmp_path / "elsewhere").write_text(sha + "\n")
    (git / "HEAD").symlink_to(tmp_path / "elsewhere")
    assert read_head(git) is None  # a link is never followed
    (git / "HEAD").unlink()
    os.mkfifo(git / "HEAD")
    assert read_head(git) is None  # a FIFO does not hang the reader


@pytest.mark.parametrize("kind", ["dir", "file"])
def test_a_nested_repository_is_a_gitlink_at_its_head(tmp_path: Path, kind: str) -> None:
    original = _checkout(tmp_path / "original")
    source = tmp_path / "source"
    shutil.copytree(original, source, symlinks=True)
    nested = _checkout(source / "third_party" / "lib")
    nested_head = _git(nested, "rev-parse", "HEAD").strip()
    if kind == "file":  # a gitfile the agent points anywhere: not followed
        shutil.rmtree(nested / ".git")
        (nested / ".git").write_text("gitdir: /etc\n")
    sp = source_patch(original, source)
    if kind == "dir":
        assert sp.files == ("A\tthird_party/lib",)
        assert f"+Subproject commit {nested_head}".encode() in sp.patch
    else:
        assert sp.files == ("A\tthird_party/lib/a.py", "A\tthird_party/lib/data.txt")
