"""`synth verify` without Docker: the host runtime end to end, targets, usage errors, output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from synth.config import Settings
from synth.errors import UsageError
from synth.verify_cmd import (
    VerifyOptions,
    parse_levels,
    render_markdown,
    resolve_target,
    verify,
)
from tests.distill_runs import manifest

SYNTH = [sys.executable, "-m", "synth"]


def make_task(tmp: Path, cpu_command: str = "python main.py") -> Path:
    task_dir = tmp / "hosttask"
    repo = task_dir / "repo"
    repo.mkdir(parents=True)
    (repo / "main.py").write_text("import json, sys\nfrom lib import helper\nprint('ok')\n")
    (repo / "lib.py").write_text("def helper():\n    return 1\n")
    (task_dir / "task.toml").write_text(textwrap.dedent(f"""\
        name = "hosttask"
        base_image = "synth/python:bookworm"
        [repo]
        path = "repo"
        [probes.cpu]
        command = "{cpu_command}"
        timeout = 60
        [not_applicable]
        C3 = "CPU only"
        C4 = "CPU only"
        """))
    return task_dir


def test_cli_host_runtime_verifies_this_interpreter(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run(
        [*SYNTH, "verify", str(task_dir), "--runtime", "host", "--python", sys.executable,
         "-o", str(out), "--json"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "SYNTH_ARTIFACTS": str(tmp_path / "art")},
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["decides"] == "host"
    lv = {r["level"]: r for r in doc["reports"]["host"]["levels"]}
    assert lv["C0"]["status"] == lv["C1"]["status"] == "pass"
    assert lv["C0"]["metrics"]["import_statements"] == 2  # json, sys; lib is the repo's own
    assert lv["C2"]["status"] in ("skipped", "pass", "fail")
    assert lv["C5"]["reason"].startswith("no claims")
    assert json.loads((out / "verify.json").read_text()) == {
        k: v for k, v in doc.items() if k != "out_dir"}
    assert "| C1 | runs on CPU | pass |" in (out / "verify.md").read_text()


def test_failing_entrypoint_exits_1(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path, cpu_command="python -c 'raise SystemExit(3)'")
    outcome = verify(
        VerifyOptions(target=str(task_dir), runtime="host", python=Path(sys.executable),
                      out_dir=tmp_path / "o", levels=parse_levels("C0,C1")),
        Settings.load(artifacts_dir=tmp_path / "art"), say=lambda _m: None)
    assert outcome.exit_code == 1
    c1 = outcome.reports["host"].get("C1")
    assert c1 is not None and c1.summary == "fail: CPU entrypoint failed (exit 3)"
    c2 = outcome.reports["host"].get("C2")
    assert c2 is not None and c2.summary == "skipped: not selected (--levels)"
    # --require C0 only looks at C0.
    ok = verify(
        VerifyOptions(target=str(task_dir), runtime="host", python=Path(sys.executable),
                      out_dir=tmp_path / "o2", levels=parse_levels("C0,C1"), require="C0"),
        Settings.load(artifacts_dir=tmp_path / "art"), say=lambda _m: None)
    assert ok.exit_code == 0


def test_usage_errors(tmp_path: Path) -> None:
    settings = Settings.load(artifacts_dir=tmp_path / "art")
    art = tmp_path / "export"
    art.mkdir()
    (art / "manifest.json").write_text(json.dumps(manifest(task="t",
                                                           python="/opt/venv/bin/python")))
    target = resolve_target(str(art), settings, "docker")
    assert target.kind == "artifact"
    with pytest.raises(UsageError, match="--rebuild"):
        verify(VerifyOptions(target=str(art)), settings, say=lambda _m: None)
    with pytest.raises(UsageError, match="--python"):
        verify(VerifyOptions(target=str(art), runtime="host"), settings, say=lambda _m: None)
    with pytest.raises(UsageError, match="unknown level"):
        parse_levels("C0,C9")


def test_markdown_side_by_side_with_gap() -> None:
    def report(c0: dict[str, object], c1: dict[str, object]) -> dict[str, object]:
        return {"target": {"image": "img", "python": "/p"}, "highest": None,
                "levels": [{"level": "C0", **c0}, {"level": "C1", **c1}]}

    doc = {
        "target": {"task": "t", "kind": "run", "path": "/r"}, "require": "C1",
        "decides": "rebuilt", "passed": False, "build": None, "fingerprint": None,
        "reports": {
            "rebuilt": report({"status": "fail", "reason": "1/3 imports unresolved: yaml "
                               "(pyyaml)", "metrics": {}, "details": {"missing": [
                                   {"module": "yaml", "distribution": "pyyaml",
                                    "locations": ["a.py:1"]}]}},
                              {"status": "not_reached", "reason": "C0 failed"}),
            "live": report({"status": "pass", "reason": None},
                           {"status": "pass", "reason": None}),
        },
        "fidelity": {"live_highest": "C1", "rebuilt_highest": None,
                     "reaches_live_level": False,
                     "gaps": [{"level": "C0", "live": "pass", "rebuilt": "fail: …"}]},
    }
    md = render_markdown(doc)
    assert "| C0 | static imports | FAIL: 1/3 imports unresolved: yaml (pyyaml) | pass |" in md
    assert "| C1 | runs on CPU | not reached: C0 failed | pass |" in md
    assert "missing yaml -> install pyyaml (at a.py:1)" in md
    assert "does NOT reach the live image's level" in md
    assert md.count("FAILED") == 1
