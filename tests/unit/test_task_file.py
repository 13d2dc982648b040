"""Task files: valid ones load; bad ones name the file, the field and the line."""

from __future__ import annotations

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
