"""A project tool's own edits of its manifest and lock (``uv add``: pyproject.toml, uv.lock)
are listed as explained, not counted as violations; a hand edit of the same files stays one
(synth.record.tool_edits; docs/formats.md, *The source tree hash*)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from distill_runs import make_run_dir

from synth.formats.schemas import validate
from synth.formats.store import RunDir
from synth.record import runs_view
from synth.record.rundir import describe_run, format_run
from synth.record.tool_edits import explained_by_tool, written_files
from synth.record.tree import TreeChange, violations

T0 = 1764410100.0


def hook(seq: int, command: str, start: float, *, cwd: str = "/workspace", exit: int = 0,
         source: str = "bash-hook") -> dict[str, Any]:
    return {"type": "command", "source": source, "seq": seq, "command": command, "cwd": cwd,
            "start": start, "end": start + 2.0, "exit": exit}


def changed(*paths: str, change: str = "modified") -> list[dict[str, str]]:
    return violations(TreeChange(p, change) for p in paths)  # type: ignore[arg-type]


@pytest.mark.parametrize(("argv", "expected"), [
    (["uv", "add", "tabulate"], ("uv", "add", ("pyproject.toml", "uv.lock"))),
    (["/root/.local/bin/uv", "remove", "x"], ("uv", "remove", ("pyproject.toml", "uv.lock"))),
    (["uv", "lock", "--upgrade"], ("uv", "lock", ("uv.lock",))),
    (["poetry", "add", "emcee"], ("poetry", "add", ("pyproject.toml", "poetry.lock"))),
    (["poetry", "lock"], ("poetry", "lock", ("poetry.lock",))),
    (["pdm", "add", "-G", "plot", "x"], ("pdm", "add", ("pyproject.toml", "pdm.lock"))),
    (["uv", "--directory", "sub", "add", "x"], ("uv", "add", ("pyproject.toml", "uv.lock"))),
    (["poetry", "-C", "add", "lock"], ("poetry", "lock", ("poetry.lock",))),  # a folder "add"
    (["pdm", "remove", "x"], ("pdm", "remove", ("pyproject.toml", "pdm.lock"))),
    (["pipenv", "install", "requests"], ("pipenv", "install", ("Pipfile", "Pipfile.lock"))),
    # These lock again first where the lock is stale; never with --frozen and the like.
    (["pipenv", "install"], ("pipenv", "install", ("Pipfile.lock",))),
    (["pipenv", "install", "--deploy"], None),
    (["uv", "sync"], ("uv", "sync", ("uv.lock",))),
    (["uv", "run", "python", "x.py"], ("uv", "run", ("uv.lock",))),
    (["uv", "sync", "--frozen"], None),
    (["uv", "run", "--locked", "python"], None),
    (["pdm", "install", "-G", "plot"], ("pdm", "install", ("pdm.lock",))),
    (["pdm", "install", "--frozen-lockfile"], None),
    (["poetry", "install"], None),  # poetry stops on a stale lock: it never writes one
    (["uv", "pip", "install", "x"], None),
    (["sed", "-i", "s/a/b/", "pyproject.toml"], None),
])
def test_which_commands_write_their_tool_s_files(
        argv: list[str], expected: tuple[str, str, tuple[str, ...]] | None) -> None:
    assert written_files(argv) == expected


def test_uv_add_explains_its_two_files() -> None:
    records = [hook(3, "uv add tabulate", T0)]
    times = {"/workspace/pyproject.toml": T0 + 1, "/workspace/uv.lock": T0 + 1.5}
    stay, explained = explained_by_tool(changed("pyproject.toml", "uv.lock", "src/a.py"),
                                        records, times)
    assert [v["path"] for v in stay] == ["src/a.py"]
    assert explained == [
        {"kind": "tool_changed", "path": "pyproject.toml", "change": "modified",
         "command": "uv add tabulate", "seq": 3,
         "detail": "/workspace/pyproject.toml was modified by `uv add tabulate` "
                   "(audit record 3)"},
        {"kind": "tool_changed", "path": "uv.lock", "change": "modified",
         "command": "uv add tabulate", "seq": 3,
         "detail": "/workspace/uv.lock was modified by `uv add tabulate` (audit record 3)"}]


@pytest.mark.parametrize(("records", "times", "why"), [
    ([hook(3, "uv add tabulate", T0), hook(4, "sed -i s/x/y/ pyproject.toml", T0 + 10)],
     T0 + 10, "a hand edit after it"),
    ([hook(2, "echo '[tool.x]' >> pyproject.toml", T0 - 10), hook(3, "uv add t", T0)],
     T0 + 1, "a hand edit before it, named by the audit"),
    ([hook(3, "uv add tabulate", T0)], T0 + 30, "written after the command ended"),
    ([hook(3, "uv add tabulate", T0, exit=1)], T0 + 1, "the command failed"),
    ([hook(3, "uv add tabulate", T0, cwd="/workspace/sub")], T0 + 1, "another folder"),
    ([hook(3, "uv add tabulate", T0, source="bash-c")], T0 + 1, "no simple command record"),
    ([hook(3, "uv lock", T0)], T0 + 1, "uv lock writes no pyproject.toml"),
    ([hook(3, "poetry add emcee", T0)], T0 + 1, "poetry's command: uv.lock is uv's"),
    ([hook(3, "vim pyproject.toml", T0), hook(4, "uv add t", T0 + 5)], T0 + 6,
     "an editor named it"),
])
def test_what_stays_a_violation(records: list[dict[str, Any]], times: float, why: str) -> None:
    paths = ["uv.lock"] if "poetry" in why else ["pyproject.toml"]
    stay, explained = explained_by_tool(changed(*paths), records,
                                        {f"/workspace/{p}": times for p in paths})
    assert (len(stay), explained) == (1, []), why


def test_a_wrapped_tool_command_is_the_tool_s() -> None:
    records = [hook(3, "sudo -E env UV_NO_CACHE=1 stdbuf -oL uv add tabulate", T0)]
    stay, explained = explained_by_tool(changed("uv.lock"), records,
                                        {"/workspace/uv.lock": T0 + 1})
    assert stay == [] and [e["seq"] for e in explained] == [3]


@pytest.mark.parametrize("command", ["uv --directory sub add t", "uv --project=sub add t",
                                     "pdm -p ./sub add t"])
def test_a_tool_told_another_folder_explains_that_folder_s_files(command: str) -> None:
    records = [hook(3, command, T0)]
    stay, explained = explained_by_tool(changed("sub/pyproject.toml", "pyproject.toml"),
                                        records, {"/workspace/sub/pyproject.toml": T0 + 1,
                                                  "/workspace/pyproject.toml": T0 + 1})
    assert [v["path"] for v in stay] == ["pyproject.toml"]
    assert [e["path"] for e in explained] == ["sub/pyproject.toml"]


def test_reading_the_file_does_not_keep_it_a_violation_but_a_deletion_does() -> None:
    records = [hook(2, "cat pyproject.toml", T0 - 5), hook(3, "grep -n deps pyproject.toml",
                                                            T0 - 4),
               hook(4, "env UV_NO_CACHE=1 uv add tabulate", T0)]
    times = {"/workspace/pyproject.toml": T0 + 1}
    stay, explained = explained_by_tool(changed("pyproject.toml"), records, times)
    assert stay == [] and explained[0]["command"] == "uv add tabulate"
    deleted = changed("pyproject.toml", change="deleted")
    assert explained_by_tool(deleted, records, times)[1] == []
    # A record the process sampler did not confirm explains nothing.
    assert explained_by_tool(changed("pyproject.toml"), records, times, unconfirmed=[4])[1] \
        == []


def test_poetry_and_pipenv_in_a_subfolder_project() -> None:
    records = [hook(5, "poetry add emcee", T0, cwd="/workspace/pkg"),
               hook(6, "pipenv install requests", T0 + 10)]
    times = {"/workspace/pkg/poetry.lock": T0 + 1, "/workspace/pkg/pyproject.toml": T0 + 1,
             "/workspace/Pipfile": T0 + 11, "/workspace/Pipfile.lock": T0 + 12}
    stay, explained = explained_by_tool(
        changed("pkg/poetry.lock", "pkg/pyproject.toml", "Pipfile", "Pipfile.lock"),
        records, times)
    assert stay == []
    assert [(v["path"], v["seq"]) for v in explained] == [
        ("pkg/poetry.lock", 5), ("pkg/pyproject.toml", 5), ("Pipfile", 6),
        ("Pipfile.lock", 6)]


def test_run_json_keeps_them_apart_and_runs_show_lists_them(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    doc = json.loads((run_dir / "run.json").read_text())
    _stay, explained = explained_by_tool(changed("uv.lock"), [hook(3, "uv add t", T0)],
                                         {"/workspace/uv.lock": T0})
    doc["tool_changes"] = explained
    (run_dir / "run.json").write_text(json.dumps(doc))
    assert validate(doc, "run") == []
    record = RunDir(run_dir).run_record()
    assert record.tool_changes is not None and record.tool_changes[0].seq == 3
    assert runs_view.view(run_dir)["violations"] == 0
    shown = format_run(describe_run(run_dir))
    assert "tool-edit  /workspace/uv.lock was modified by `uv add t` (audit record 3)" in shown
    assert "VIOLATION" not in shown


def test_of_two_tool_commands_a_moment_apart_the_one_that_wrote_it_is_named() -> None:
    """uv add writes uv.lock; uv run starts half a second after it ends: uv add did it."""
    records = [hook(3, "uv add tabulate", T0), hook(4, "uv run python x.py", T0 + 2.5)]
    stay, explained = explained_by_tool(changed("uv.lock"), records, {"/workspace/uv.lock":
                                                                      T0 + 1.9})
    assert stay == [] and [e["command"] for e in explained] == ["uv add tabulate"]
