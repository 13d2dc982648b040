"""CLI conventions, run as a user runs them (subprocesses): --version, --json and --debug
anywhere, one JSON envelope, errors as JSON, exit codes, help text, literal output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from synth import __version__, errors
from synth.cli.app import core_build
from synth.formats.verify import VerifyDocument
from tests.verify_outcomes import full_verify

SYNTH = [sys.executable, "-m", "synth"]
REPO = Path(__file__).resolve().parents[2]
TASK = ('name = "{name}"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "{path}"\n'
        '[probes.cpu]\ncommand = "true"\n'
        '[not_applicable]\nC2 = "n"\nC3 = "n"\nC4 = "n"\n')
DEAD = {"DOCKER_HOST": "unix:///tmp/synth-no-daemon.sock"}


def run(*args: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SYNTH, *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def test_version_flag_and_json() -> None:
    assert run("--version").stdout.strip() == __version__
    for args in (["version", "--json"], ["--json", "version"]):
        doc = json.loads(run(*args).stdout)
        assert doc["format"] == 1
        assert doc["synth_version"] == __version__
        assert doc["command"] == "version"
        assert doc["result"]["version"] == __version__
        assert doc["result"]["core"] in ("compiled", "source")


def test_the_core_is_compiled_exactly_in_the_pass_on_the_built_wheel() -> None:
    # ./dev test runs the unit tests twice: on the checkout's source, and on the wheel
    # (SYNTH_TEST_COMPILED), whose build compiles the core with mypyc.
    want = "compiled" if os.environ.get("SYNTH_TEST_COMPILED") else "source"
    assert core_build() == want


@pytest.mark.parametrize("args", [["--json", "gc"], ["gc", "--json"]])
def test_errors_under_json_are_json_on_stdout(args: list[str]) -> None:
    proc = run(*args, env=DEAD)
    assert proc.returncode == errors.EngineUnavailableError.exit_code
    doc = json.loads(proc.stdout)
    assert doc["command"] == "gc"
    assert "result" not in doc
    err = doc["error"]
    assert err["code"] == proc.returncode
    assert err["kind"] == "EngineUnavailableError"
    assert "No Docker engine answers" in err["message"]
    assert "dockerd" in err["hint"]
    assert err["engine"] == DEAD["DOCKER_HOST"]  # the kind's typed field
    assert "error:" not in proc.stderr


def test_json_errors_carry_the_kinds_fields(tmp_path: Path) -> None:
    """Each kind's typed fields beside code, kind, message and hint: a task file's path,
    field and line; what a missing run was named; the option at fault."""
    (tmp_path / "task.toml").write_text('name = "x"\nbase_image = 5\n[repo]\npath = "."\n')
    err = json.loads(run("run", str(tmp_path), "--json").stdout)["error"]
    assert err["kind"] == "TaskError" and err["code"] == errors.TaskError.exit_code
    assert (err["path"], err["field"], err["line"]) == (
        str(tmp_path / "task.toml"), "base_image", 2)
    assert "task.toml:2: field `base_image`" in err["message"]  # the message as before
    err = json.loads(run("export", "no-such-run", "--artifacts", str(tmp_path),
                         "--json").stdout)["error"]
    assert (err["kind"], err["ref"], err["what"]) == ("NotFoundError", "no-such-run", "run")
    err = json.loads(run("verify", "--runtime", "host", "--json").stdout)["error"]
    assert (err["kind"], err["option"]) == ("UsageError", "--runtime")
    assert set(err) == {"code", "kind", "message", "hint", "option"}


def test_every_error_kind_has_its_fields() -> None:
    """Every kind's FIELDS are attributes (None until the raising site knows them), its
    fields() gives them by name, and none hides a key of the envelope."""
    for kind in errors.error_kinds():
        exc = kind("boom")
        assert exc.message == "boom" and str(exc) == "boom"
        assert exc.fields() == dict.fromkeys(kind.FIELDS)
        assert not set(kind.FIELDS) & {"code", "kind", "message", "hint"}, kind
    engine_error = errors.EngineError("x", engine="unix:///s", operation="exec")
    assert engine_error.fields() == {"engine": "unix:///s", "operation": "exec"}
    assert errors.GpuRuntimeUnavailableError.FIELDS == errors.EngineError.FIELDS


def test_bad_command_line_under_json_is_json() -> None:
    proc = run("runs", "list", "--no-such-option", "--json")
    assert proc.returncode == errors.EXIT_USAGE
    doc = json.loads(proc.stdout)
    assert doc["command"] == "runs list"
    assert doc["error"]["kind"] == "CommandLineError"
    assert "--no-such-option" in doc["error"]["message"]


def test_every_command_shares_the_envelope(tmp_path: Path) -> None:
    doc = json.loads(run("runs", "list", "--artifacts", str(tmp_path), "--json").stdout)
    assert set(doc) == {"format", "synth_version", "command", "result"}
    assert doc["command"] == "runs list"
    assert doc["result"] == {"runs": [], "skipped": []}


def test_debug_after_the_subcommand_shows_the_traceback() -> None:
    proc = run("gc", "--debug", env=DEAD)
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_task_check_skips_what_is_not_a_task(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# tasks\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "task.toml").write_text(TASK.format(name="one", path="."))
    paths = sorted(str(p) for p in tmp_path.iterdir())  # what `tasks/*` expands to
    proc = run("task", "check", *paths)
    assert proc.returncode == 0, proc.stderr
    assert "ok" in proc.stdout and "(one)" in proc.stdout
    assert f"note: skipped {tmp_path / 'README.md'}: not a task" in proc.stderr
    assert f"note: skipped {tmp_path / 'notes'}" in proc.stderr
    doc = json.loads(run("task", "check", *paths, "--json").stdout)["result"]
    assert doc["ok"] is True
    assert [t["ok"] for t in doc["tasks"]] == [None, None, True]
    proc = run("task", "check", str(tmp_path / "README.md"))
    assert proc.returncode == errors.UsageError.exit_code
    assert "No task among" in proc.stderr


def test_the_repos_own_tasks_glob_checks() -> None:
    proc = run("task", "check", *sorted(str(p) for p in (REPO / "tasks").iterdir()))
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("args", [
    [], ["export"], ["verify"], ["run"], ["runs", "list"], ["diff"], ["gc"], ["task", "check"],
])
def test_help_has_no_artefacts(args: list[str]) -> None:
    text = run(*args, "--help", env={"COLUMNS": "200"}).stdout
    assert "Usage:" in text
    assert "<bool>" not in text
    assert "[[" not in text
    assert "[default: no-" not in text
    assert "{" not in text.splitlines()[1]  # the usage line: `TASK`, not `{TASK}`


def test_help_lists_exit_codes() -> None:
    text = " ".join(run("--help", env={"COLUMNS": "400"}).stdout.split())
    for code, _meaning in errors.exit_codes():
        assert re.search(rf"\b{code} = ", text), code


def test_exit_codes_are_distinct_and_documented() -> None:
    codes = [code for code, _ in errors.exit_codes()]
    assert len(codes) == len(set(codes)), codes
    assert errors.EXIT_AGENT_FAILED not in (errors.EXIT_NEGATIVE, errors.EXIT_USAGE)
    readme = (REPO / "README.md").read_text()
    for code, _meaning in errors.exit_codes():
        assert re.search(rf"^\| {code} \|", readme, re.MULTILINE), f"README lacks exit {code}"


def test_untrusted_text_prints_literally(tmp_path: Path) -> None:
    name = "x[/]evil:x:0:0[bold]RUN [a]"
    task = tmp_path / "t"
    task.mkdir()
    (task / "task.toml").write_text(TASK.format(name=name, path="."))
    proc = run("task", "check", str(task))  # a name synth refuses, quoted literally
    assert proc.returncode == errors.TaskError.exit_code
    assert f"(got '{name}')" in proc.stderr
    (task / "task.toml").write_text('name = "ok"\nbase_image = "b"\n[repo]\npath = "."\n')
    proc = run("task", "check", str(task))
    assert proc.returncode == errors.TaskError.exit_code
    assert "[not_applicable] C1" in proc.stderr  # once swallowed as a markup tag
    assert "Traceback" not in proc.stderr


def test_console_helpers_print_literally(capsys: pytest.CaptureFixture[str]) -> None:
    from synth.ui import console
    text = "[/] [bold]evil:x:0:0 :x: RUN [ -f a ]"
    console.say(text)
    console.warn(text)
    console.print_error(code=11, kind="UsageError", message=text, hint=text)
    err = capsys.readouterr().err
    assert err.count(text) == 4
    assert "❌" not in err


def test_verify_table_prints_reasons_literally(capsys: pytest.CaptureFixture[str]) -> None:
    from synth.verify.command import print_table

    reason = "RUN [ -f x ] && echo [/] :x: [bold]"
    doc = {"target": {"kind": "task", "path": "/t", "task": "t[/]"}, "decides": "host",
           "passed": False, "require": "C1", "reports": {"host": {"highest": None, "levels": [
               {"level": "C1", "status": "fail", "reason": reason}]}}}
    print_table(VerifyDocument.from_json(full_verify(doc)))
    out = " ".join(capsys.readouterr().out.split())
    assert "t[/]" in out
    assert "[/] :x: [bold]" in out
    assert "❌" not in out


def test_verify_progress_is_checked() -> None:
    proc = run("verify", "--progress", "fancy", "--json")
    assert proc.returncode == errors.UsageError.exit_code
    assert "--progress is steps, plain or quiet" in json.loads(proc.stdout)["error"]["message"]


def test_global_flags_stop_at_the_agent_command() -> None:
    from synth.cli.app import _global_flags
    from synth.ui import console

    before = dict(console.mode)
    try:
        argv = _global_flags(["--json", "runs", "--debug", "list", "--", "x", "--json"])
        assert argv == ["runs", "list", "--json", "--", "x", "--json"]
        assert console.mode["json"] and console.mode["debug"]
        assert console.mode["command"] == "runs list"
        argv = _global_flags(["run", "t", "--agent", "exec", "--", "agent", "--json"])
        assert argv == ["run", "t", "--agent", "exec", "--", "agent", "--json"]
        assert not console.mode["json"] and console.mode["command"] == "run"
    finally:
        console.mode.update(before)
