"""The bash audit hook, run by the host's bash (no Docker): raw events and their merge."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from synth.record.audit import Masker, merge_audit, read_raw_events
from synth.record.runner import hook_dir

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="no bash on this host")


def run_hooked(tmp_path: Path, script: str, **env: str) -> list[dict[str, Any]]:
    events = tmp_path / "events.jsonl"
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "BASH_ENV": str(hook_dir() / "audit_hook.sh"),
        "SYNTH_AUDIT_FILE": str(events),
        **env,
    }
    subprocess.run(["bash", "-c", script], env=full_env, cwd=tmp_path, check=False,
                   capture_output=True)
    masker = Masker([v for k, v in env.items() if k in env.get("SYNTH_SECRET_NAMES", "")])
    records = merge_audit(read_raw_events(events), [], session="s", started="t",
                          masker=masker)
    assert records[0]["type"] == "header"
    return records[1:]


def hook_records(records: list[dict[str, Any]]) -> list[tuple[str, str, int | None]]:
    return [(r["command"], r["cwd"], r["exit"]) for r in records if r["source"] == "bash-hook"]


def test_compound_command_has_each_simple_command_with_cwd_and_exit(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    sub.mkdir()
    recs = run_hooked(tmp_path, f"cd {sub} && export X=1 && ls /nonexistent; true")
    assert hook_records(recs) == [
        (f"cd {sub}", str(tmp_path), 0),
        ("export X=1", str(sub), 0),
        ("ls /nonexistent", str(sub), 2),
        ("true", str(sub), 0),
    ]
    bash_c = [r for r in recs if r["source"] == "bash-c"]
    assert len(bash_c) == 1
    assert bash_c[0]["command"] == f"cd {sub} && export X=1 && ls /nonexistent; true"
    assert bash_c[0]["exit"] == 0 and bash_c[0]["cwd_end"] == str(sub)
    assert all(r["parent_seq"] == bash_c[0]["seq"] for r in recs if r["source"] == "bash-hook")


def test_exit_status_and_no_stale_debug_record(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, "echo hi >/dev/null; exit 3")
    assert hook_records(recs) == [("echo hi > /dev/null", str(tmp_path), 0),
                                  ("exit 3", str(tmp_path), 3)]
    assert not any("trap" in str(r["command"]) for r in recs)
    assert [r["exit"] for r in recs if r["source"] == "bash-c"] == [3]


def test_pipeline_elements_get_their_own_status(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, "false | true; echo done")
    cmds = {r["command"]: r for r in recs if r["source"] == "bash-hook"}
    assert cmds["false"]["exit"] == 1 and cmds["false"]["pipeline"] is True
    assert cmds["true"]["exit"] == 0 and cmds["true"]["pipestatus"] == [1, 0]


def test_status_after_function_definition_comes_from_pipestatus(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, "ls /nonexistent; f() { :; }; f")
    assert ("ls /nonexistent", str(tmp_path), 2) in hook_records(recs)


def test_nested_bash_c_has_depth_and_parent(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, "bash -c 'echo inner >/dev/null'")
    shells = sorted((r for r in recs if r["source"] == "bash-c"), key=lambda r: r["depth"])
    assert [s["depth"] for s in shells] == [0, 1]
    assert shells[1]["parent_seq"] == shells[0]["seq"]
    assert shells[1]["command"] == "echo inner >/dev/null"


def test_secret_values_are_masked_by_the_hook(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, "echo 'the key is sk-VERY-secret'", TOKEN="sk-VERY-secret",
                      SYNTH_SECRET_NAMES="TOKEN")
    raw = (tmp_path / "events.jsonl").read_text()
    assert "sk-VERY-secret" not in raw
    assert "***" in raw
    assert all("sk-VERY" not in str(r) for r in recs)


def test_set_eu_scripts_are_not_broken_by_the_hook(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, "set -eu; echo a >/dev/null; false; echo never")
    assert [c for c, _, _ in hook_records(recs)] == ["set -eu", "echo a > /dev/null", "false"]
    assert hook_records(recs)[-1][2] == 1


def test_special_characters_survive_json(tmp_path: Path) -> None:
    recs = run_hooked(tmp_path, 'printf "%s\\t%s\\n" "a\\"b" \'c\\d\' >/dev/null')
    cmd = hook_records(recs)[0][0]
    assert cmd.startswith("printf") and '"a\\"b"' in cmd and "'c\\d'" in cmd


def test_without_audit_file_the_hook_does_nothing(tmp_path: Path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "BASH_ENV": str(hook_dir() / "audit_hook.sh")}
    proc = subprocess.run(["bash", "-c", "echo $((1+1)); type __synth_debug >/dev/null 2>&1"],
                          env=env, capture_output=True, text=True, check=False)
    assert proc.stdout == "2\n" and proc.returncode == 1


def test_interactive_shell_records_commands_once_and_not_the_prompt(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
        "SYNTH_AUDIT_FILE": str(events), "SYNTH_AUDIT_HOOK": str(hook_dir() / "audit_hook.sh"),
        "PROMPT_COMMAND": "my_prompt_thing=1",
    }
    subprocess.run(["bash", "--rcfile", str(hook_dir() / "shell_rc.sh"), "-i"],
                   input="echo hi\nfalse\nexit 0\n", env=env, cwd=tmp_path, text=True,
                   capture_output=True, check=False)
    records = merge_audit(read_raw_events(events), [], session="s", started="t")[1:]
    assert hook_records(records) == [("echo hi", str(tmp_path), 0),
                                     ("false", str(tmp_path), 1),
                                     ("exit 0", str(tmp_path), 0)]
    assert [r["source"] for r in records if r["source"] != "bash-hook"] == ["bash-shell"]


def test_the_hook_is_transparent_to_status_pipestatus_and_last_argument(tmp_path: Path) -> None:
    script = ('echo foo bar >/dev/null; echo "[$_]"; false; echo "[$?]"; '
              'true | false; echo "[${PIPESTATUS[*]}]"; exit 2')
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    plain = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                           check=False)
    hooked = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=False,
        env={**env, "BASH_ENV": str(hook_dir() / "audit_hook.sh"),
             "SYNTH_AUDIT_FILE": str(tmp_path / "events.jsonl")})
    assert plain.stdout == "[bar]\n[1]\n[0 1]\n"
    assert (hooked.stdout, hooked.returncode) == (plain.stdout, plain.returncode)


def test_set_x_output_shows_no_hook_commands(tmp_path: Path) -> None:
    script = "set -x; echo a >/dev/null; ls /nonexistent 2>/dev/null; exit 3"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    plain = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True,
                           check=False)
    hooked = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=False,
        env={**env, "BASH_ENV": str(hook_dir() / "audit_hook.sh"),
             "SYNTH_AUDIT_FILE": str(tmp_path / "events.jsonl")})
    assert hooked.stderr == plain.stderr and hooked.returncode == 3
    records = merge_audit(read_raw_events(tmp_path / "events.jsonl"), [], session="s",
                          started="t")
    command, _cwd, status = hook_records(records[1:])[-1]
    assert (command, status) == ("exit 3", 3)


def test_a_command_holding_line_separators_stays_one_record(tmp_path: Path) -> None:
    """The hook escapes only backslash, quote, newline, carriage return and tab: a vertical
    tab, a form feed, a file separator, U+0085 or U+2028 in a command arrives literally,
    and its event is still one line (lines end at newline alone)."""
    odd = "a\x0bb\x0cc\x1cd\x85e\u2028f"
    recs = run_hooked(tmp_path, f"echo '{odd}' >/dev/null")
    assert [r for r in recs if r["type"] != "command"] == []
    assert hook_records(recs) == [(f"echo '{odd}' > /dev/null", str(tmp_path), 0)]
