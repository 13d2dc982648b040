"""The CLI edge: errors become a message, a hint and a distinct exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from synth import errors

SYNTH = [sys.executable, "-m", "synth"]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SYNTH, *args], capture_output=True, text=True, check=False,
        env={**os.environ, **(env or {})},
    )


def test_exit_codes_are_distinct() -> None:
    kinds = [
        c for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.SynthError)
    ]
    codes = [k.exit_code for k in kinds]
    assert len(codes) == len(set(codes)), codes


def test_dead_daemon_says_how_to_start_it() -> None:
    proc = run("doctor", "--json", env={"DOCKER_HOST": "unix:///tmp/synth-no-daemon.sock"})
    assert proc.returncode == 1
    report = json.loads(proc.stdout)["result"]
    engine = next(c for c in report["checks"] if c["name"] == "engine")
    assert engine["status"] == "fail"
    assert "synth-no-daemon.sock" in engine["detail"]
    assert "dockerd" in engine["fix"]
    names = {c["name"] for c in report["checks"]}
    assert {"engine", "buildkit_cli", "debootstrap", "ca_bundle"} <= names


def test_engine_error_has_hint_and_no_traceback() -> None:
    proc = run("gc", env={"DOCKER_HOST": "unix:///tmp/synth-no-daemon.sock"})
    assert proc.returncode == errors.EngineUnavailableError.exit_code
    assert "error: No Docker engine answers" in proc.stderr
    assert "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_debug_shows_traceback() -> None:
    proc = run("--debug", "gc", env={"DOCKER_HOST": "unix:///tmp/synth-no-daemon.sock"})
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr


def test_task_check_names_field_and_line(tmp_path: Path) -> None:
    (tmp_path / "task.toml").write_text('name = "x"\nbase_image = 5\n[repo]\npath = "."\n')
    proc = run("task", "check", str(tmp_path), "--json")
    assert proc.returncode == errors.TaskError.exit_code
    out = json.loads(proc.stdout)["result"]
    assert out["ok"] is False
    assert "task.toml:2: field `base_image`" in out["tasks"][0]["error"]


def test_missing_ca_bundle_is_a_usage_error() -> None:
    proc = run("doctor", "--ca-bundle", "/nonexistent/ca.pem")
    assert proc.returncode == errors.UsageError.exit_code
    assert "CA bundle /nonexistent/ca.pem does not exist" in proc.stderr


@pytest.mark.parametrize("module", [
    "synth.cli", "synth.engine", "synth.formats.task", "synth.engine.base_images",
    "synth.engine.doctor",
    "synth.config", "synth.util.atomic", "synth.errors",
])
def test_module_imports_alone(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_tls_verdicts_say_what_to_pass() -> None:
    from synth.engine.doctor import TlsAttempt, judge_tls

    bundle = Path("/etc/ssl/certs/ca.crt")
    bad = TlsAttempt(None, False, "URLError [SSL: CERTIFICATE_VERIFY_FAILED] self-signed")
    good = TlsAttempt(bundle, True, "")
    check = judge_tls([bad, good], None)
    assert check.status == "fail"
    assert check.fix is not None and f"--ca-bundle {bundle}" in check.fix
    assert judge_tls([bad, good], bundle).status == "ok"
    assert judge_tls([TlsAttempt(None, True, "")], None).status == "ok"
    check = judge_tls([bad, TlsAttempt(bundle, False, "still failing")], bundle)
    assert check.status == "fail"
    assert "still failing" in check.detail
    offline = judge_tls([TlsAttempt(None, False, "URLError timed out")], None)
    assert offline.status == "warn"
