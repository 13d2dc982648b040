"""Task files: valid ones load; bad ones name the file, the field and the line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synth.errors import TaskError
from synth.formats.task import _locate, load_task

GOOD = """\
name = "demo"
description = "a demo"
base_image = "synth/python:bookworm"

[repo]
path = "repo"

[python]
version = "3.11"
wheelhouse = true

[probes]
cpu = { command = "python3 train.py --steps 3", timeout = 60 }
native_modules = ["demo._ext"]

[probes.ddp]
command = "torchrun --nproc_per_node=2 ddp.py"
gpus = 2

[not_applicable]
C3 = "no single-GPU entrypoint"
"""


def write_task(tmp_path: Path, text: str) -> Path:
    (tmp_path / "repo").mkdir(exist_ok=True)
    path = tmp_path / "task.toml"
    path.write_text(text)
    return path


def test_valid_task_loads(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD))
    assert task.name == "demo"
    assert task.repo_path == (tmp_path / "repo").resolve()
    assert task.probes.cpu is not None and task.probes.cpu.timeout == 60
    assert task.probes.ddp is not None and task.probes.ddp.gpus == 2
    assert task.probes.native_modules == ["demo._ext"]
    assert task.not_applicable == {"C3": "no single-GPU entrypoint"}
    assert task.python.wheelhouse is True


def test_task_dir_is_accepted(tmp_path: Path) -> None:
    write_task(tmp_path, GOOD)
    assert load_task(tmp_path).name == "demo"


@pytest.mark.parametrize(
    ("old", "new", "field", "line"),
    [
        ("timeout = 60", 'timeout = "ten"', "probes.cpu.timeout", 13),
        ("gpus = 2", "gpus = 1", "probes.ddp.gpus", 18),
        ('path = "repo"', "path = 3", "repo.path", 6),
        ('base_image = "synth/python:bookworm"\n', "", "base_image", 1),
        ('wheelhouse = true', 'wheelhouse = "yes"', "python.wheelhouse", 10),
        ('C3 = "no', 'C9 = "no', "not_applicable.C9", 21),
    ],
)
def test_errors_name_field_and_line(
    tmp_path: Path, old: str, new: str, field: str, line: int
) -> None:
    path = write_task(tmp_path, GOOD.replace(old, new))
    with pytest.raises(TaskError) as info:
        load_task(path)
    message = info.value.message
    assert f"{path}:{line}:" in message, message
    assert f"`{field}`" in message, message


def test_unknown_field_is_rejected(tmp_path: Path) -> None:
    path = write_task(tmp_path, GOOD.replace("[python]", "[python]\nverison = 3"))
    with pytest.raises(TaskError) as info:
        load_task(path)
    assert "python.verison" in info.value.message
    assert f"{path}:9:" in info.value.message


def test_missing_probe_needs_a_reason(tmp_path: Path) -> None:
    path = write_task(tmp_path, GOOD.replace('C3 = "no single-GPU entrypoint"', ""))
    with pytest.raises(TaskError, match="C3"):
        load_task(path)


def test_repo_path_must_exist(tmp_path: Path) -> None:
    path = write_task(tmp_path, GOOD.replace('path = "repo"', 'path = "nowhere"'))
    with pytest.raises(TaskError, match=r"task.toml:6: field `repo.path`"):
        load_task(path)


def test_invalid_toml_reports_position(tmp_path: Path) -> None:
    path = write_task(tmp_path, GOOD.replace("[repo]", "[repo"))
    with pytest.raises(TaskError, match="line 5"):
        load_task(path)


def test_git_repo_needs_commit(tmp_path: Path) -> None:
    text = GOOD.replace('path = "repo"', 'url = "https://example.org/r.git"')
    with pytest.raises(TaskError, match="commit"):
        load_task(write_task(tmp_path, text))


def test_locate_inline_table_field() -> None:
    assert _locate(GOOD, ("probes", "cpu", "command")) == 13
    assert _locate(GOOD, ("probes", "ddp")) == 16
    assert _locate(GOOD, ("nothing",)) == 1


def test_c0_scope_settings(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD + """
[verify.c0]
include = ["src/*", "train.py"]
exclude = []
max_missing_ratio = 0.1
"""))
    assert task.verify.c0.include == ["src/*", "train.py"]
    assert task.verify.c0.exclude == []
    assert task.verify.c0.max_missing_ratio == 0.1
    assert load_task(write_task(tmp_path, GOOD)).verify.c0.include is None  # the default


@pytest.mark.parametrize(("body", "field"), [
    ("max_missing_ratio = 1.5", "verify.c0.max_missing_ratio"),
    ("include = \"src/*\"", "verify.c0.include"),
    ("scope = []", "verify.c0.scope"),
])
def test_c0_scope_errors_are_located(tmp_path: Path, body: str, field: str) -> None:
    text = GOOD + "\n[verify.c0]\n" + body + "\n"
    with pytest.raises(TaskError) as err:
        load_task(write_task(tmp_path, text))
    line = text.splitlines().index(body) + 1
    assert f"task.toml:{line}: field `{field}`" in err.value.message


_URL_TASK = GOOD.replace('path = "repo"', 'url = "https://example.org/r.git"\ncommit = "abcdef1"')


@pytest.mark.parametrize("url", [
    "-oProxyCommand=touch /tmp/pwned",          # an option to git clone
    "ssh://-oProxyCommand=touch%20x/repo.git",  # an option to ssh (CVE-2017-1000117)
    "ssh://-user@host/repo.git",
    "https://user:secret@example.org/r.git",     # credentials
    "https://ghp_token@example.org/r.git",       # a token as the user name
    "ext::sh -c touch% /tmp/pwned",              # git's command transport
    "fd::17",
    "git@github.com:org/repo.git",               # scp-like: write ssh://
    "/srv/git/repo",                             # a path: write file:///srv/git/repo
    "file://relative/path",
    "https://example.org/r.git --upload-pack=x",
    "https://example.org/\x1b[2Jr.git",
    "ftp://example.org/r.git",
    "https://",
])
def test_repo_url_must_be_an_allowed_url(tmp_path: Path, url: str) -> None:
    text = _URL_TASK.replace("https://example.org/r.git", url.replace("\x1b", "\\u001b"))
    with pytest.raises(TaskError, match=r"task.toml:6: field `repo.url`"):
        load_task(write_task(tmp_path, text))


@pytest.mark.parametrize("url", [
    "https://example.org/r.git", "http://example.org:8080/r", "git://example.org/r.git",
    "ssh://git@example.org/org/r.git", "ssh://example.org:2222/r", "file:///srv/git/r"])
def test_allowed_repo_urls_load(tmp_path: Path, url: str) -> None:
    task = load_task(write_task(tmp_path, _URL_TASK.replace("https://example.org/r.git", url)))
    assert task.repo.url == url


@pytest.mark.parametrize("commit", ["--upload-pack=x", "ABCDEF1", "abc", "g" * 40, "a" * 41])
def test_repo_commit_must_be_hex(tmp_path: Path, commit: str) -> None:
    text = _URL_TASK.replace('commit = "abcdef1"', f'commit = "{commit}"')
    with pytest.raises(TaskError, match=r"task.toml:7: field `repo.commit`"):
        load_task(write_task(tmp_path, text))


@pytest.mark.parametrize(("body", "field"), [
    ('[probes]\nworkdir = "workspace"', "probes.workdir"),
    ('[probes]\nworkdir = "/workspace/../etc"', "probes.workdir"),
    ('[probes]\nworkdir = ""', "probes.workdir"),
    ('[probes]\nworkdir = "/work\\u001b[2J"', "probes.workdir"),
])
def test_probe_workdir_is_absolute_without_dot_dot(tmp_path: Path, body: str,
                                                   field: str) -> None:
    text = GOOD.replace("[probes]\n", body + "\n")
    with pytest.raises(TaskError, match=f"field `{field}`"):
        load_task(write_task(tmp_path, text))


@pytest.mark.parametrize(("old", "new", "field"), [
    ("timeout = 60", "timeout = true", "probes.cpu.timeout"),
    ("timeout = 60", "timeout = 60.0", "probes.cpu.timeout"),
    ("timeout = 60", 'timeout = "60"', "probes.cpu.timeout"),
    ("gpus = 2", "gpus = true", "probes.ddp.gpus"),
    ("gpus = 2", "gpus = 2.0", "probes.ddp.gpus"),
    ("wheelhouse = true", "wheelhouse = 1", "python.wheelhouse"),
    ("wheelhouse = true", 'wheelhouse = "true"', "python.wheelhouse"),
    ('native_modules = ["demo._ext"]', 'native_modules = [""]', "probes.native_modules.0"),
    ('native_modules = ["demo._ext"]', 'native_modules = ["-x"]', "probes.native_modules.0"),
    ('command = "python3 train.py', 'command = "\\u0000python3 train.py', "probes.cpu.command"),
    ('base_image = "synth/python:bookworm"', 'base_image = "-v /:/host"', "base_image"),
    ('base_image = "synth/python:bookworm"', 'base_image = "a b"', "base_image"),
])
def test_strict_values_are_refused(tmp_path: Path, old: str, new: str, field: str) -> None:
    assert old in GOOD
    with pytest.raises(TaskError, match=f"field `{field}`"):
        load_task(write_task(tmp_path, GOOD.replace(old, new)))


@pytest.mark.parametrize(("body", "field"), [
    ("[limits]\ncpus = inf", "limits.cpus"), ("[limits]\ncpus = nan", "limits.cpus"),
    ("[limits]\npids = true", "limits.pids"), ("[limits]\nmemory = 1e9", "limits.memory"),
    ("[verify.c0]\nmax_missing_ratio = nan", "verify.c0.max_missing_ratio"),
    ("[verify.c0]\nmax_missing_ratio = true", "verify.c0.max_missing_ratio"),
])
def test_numbers_are_finite_and_of_their_type(tmp_path: Path, body: str, field: str) -> None:
    with pytest.raises(TaskError, match=f"field `{field}"):
        load_task(write_task(tmp_path, GOOD + "\n" + body + "\n"))


def test_a_fifo_task_file_is_refused_without_blocking(tmp_path: Path) -> None:
    from synth.formats.task import _read_task_text

    fifo = tmp_path / "task.toml"
    os.mkfifo(fifo)
    with pytest.raises(TaskError, match="not a regular file"):
        _read_task_text(fifo)


def test_a_conda_channel_script_stays_in_the_task_folder(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path, GOOD + '\n[conda_channel]\nscript = "ch/make.py"\n'))
    assert task.conda_channel is not None and task.conda_channel.script == "ch/make.py"
    for bad in ("../make.py", "/usr/bin/make.py", ""):
        text = GOOD + f'\n[conda_channel]\nscript = "{bad}"\n'
        with pytest.raises(TaskError, match=r"task.toml:24: field `conda_channel.script`"):
            load_task(write_task(tmp_path, text))
