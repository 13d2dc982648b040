"""`synth runs list/show` tell runs apart: agent label, claims after C5, verify verdicts,
image sizes; a run whose run.json does not load is skipped with a warning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from distill_runs import make_run_dir

from synth.record import runs_view
from tests.verify_outcomes import full_verify

DEAD = {"DOCKER_HOST": "unix:///tmp/synth-no-daemon.sock"}


def synth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "synth", *args], capture_output=True,
                          text=True, check=False, env={**os.environ, **DEAD})


def write_verify(run_dir: Path, c5_false: int) -> None:
    levels = [{"level": lv, "status": "pass"} for lv in ("C0", "C1")]
    levels += [{"level": lv, "status": "not_applicable"} for lv in ("C2", "C3", "C4")]
    levels.append({"level": "C5", "status": "fail" if c5_false else "pass",
                   "metrics": {"hallucinations": c5_false}})
    (run_dir / "verify").mkdir()
    (run_dir / "verify" / "verify.json").write_text(json.dumps(full_verify({
        "format": 1, "decides": "rebuilt", "passed": True, "require": "C1",
        "reports": {"rebuilt": {"target": {"kind": "rebuilt"}, "levels": levels}},
        "build": {"image": "synth-rebuilt/demo:abc", "image_id": None}})))


def make_runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    good = make_run_dir(tmp_path, run_id="20261129-101500-aaaaaa",
                        claims={"status": "valid"})
    liar = make_run_dir(tmp_path, run_id="20261129-101600-bbbbbb")
    write_verify(good, 0)
    write_verify(liar, 3)
    bad = make_run_dir(tmp_path, run_id="20261129-101700-cccccc")
    (bad / "run.json").write_text("{not json")
    return good, liar, bad


def test_runs_list_tells_runs_apart_and_skips_a_bad_one(tmp_path: Path) -> None:
    good, liar, bad = make_runs(tmp_path)
    proc = synth("runs", "list", "--artifacts", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert "replay:sloppy.sh" in lines[0]
    assert "claims=missing" in lines[0]
    assert "claims=3 false" in lines[1]
    assert "verify[rebuilt] PASSED C0=pass C1=pass C2=n/a C3=n/a C4=n/a C5=FAIL" in lines[1]
    assert f"warning: skipped {bad}" in " ".join(proc.stderr.split())
    rows = json.loads(synth("runs", "list", "--artifacts", str(tmp_path), "--json").stdout)
    runs = rows["result"]["runs"]
    assert [r["run_id"] for r in runs] == [good.name, liar.name]
    assert runs[1]["claims"] == "3 false"
    assert runs[1]["verify"]["levels"]["C5"] == "fail"


def test_runs_show_adds_the_view(tmp_path: Path) -> None:
    _good, liar, _bad = make_runs(tmp_path)
    proc = synth("runs", "show", liar.name, "--artifacts", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "agent-as   replay:sloppy.sh" in proc.stdout
    assert "agent      replay  script /x/sloppy.sh" in proc.stdout
    assert "claims-now 3 false" in proc.stdout
    assert "verify     PASSED C0=pass" in proc.stdout

    doc = json.loads(synth("runs", "show", liar.name, "--artifacts", str(tmp_path),
                           "--json").stdout)["result"]
    assert doc["view"]["claims"] == "3 false"


def test_a_failed_verdict_shows_though_every_level_passed(tmp_path: Path) -> None:
    # Seen on real repositories: fidelity failed (the rebuilt image differs from the live
    # one) while every level passed, and runs list showed only the levels.
    run_dir = make_run_dir(tmp_path, run_id="20261129-101800-eeeeee")
    write_verify(run_dir, 0)
    doc = json.loads((run_dir / "verify" / "verify.json").read_text())
    doc["passed"] = False
    (run_dir / "verify" / "verify.json").write_text(json.dumps(doc))
    row = runs_view.view(run_dir)
    assert "verify[rebuilt] FAILED C0=pass C1=pass" in runs_view.list_line(row)
    assert "fidelity" not in runs_view.list_line(row)
    assert "verify     FAILED C0=pass" in "\n".join(runs_view.show_lines(row))
    doc["fidelity_failed"] = "1 unexplained difference"
    (run_dir / "verify" / "verify.json").write_text(json.dumps(doc))
    row = runs_view.view(run_dir)
    assert runs_view.list_line(row).endswith("C5=pass fidelity=DIFFERS")
    assert row["verify"]["fidelity_failed"] == "1 unexplained difference"
    empty = runs_view.view(make_run_dir(tmp_path, run_id="20261129-101900-ffffff"))
    assert "verify     -" in runs_view.show_lines(empty)

def test_a_later_rebuild_recorded_in_the_export_is_the_latest_verdict(tmp_path: Path) -> None:
    """``synth verify RUN --rebuild -o DIR`` writes its verify.json to DIR and the record of
    that rebuild into the run's export: runs list showed the older FAILED of <run>/verify
    after two passing verifies (seen on HIPS/autograd)."""
    run_dir = make_run_dir(tmp_path, run_id="20261129-102000-abcdef")
    write_verify(run_dir, 0)
    own = run_dir / "verify" / "verify.json"
    doc = json.loads(own.read_text())
    doc.update(passed=False, fidelity_failed="23 unexplained differences")
    own.write_text(json.dumps(doc))
    at = datetime(2026, 12, 6, 10, 20, tzinfo=UTC).timestamp()
    os.utime(own, (at, at))
    (run_dir / "export").mkdir()
    record = {"format": 1, "date": "2026-12-06T10:40:00Z", "synth_version": "0.1.0",
              "passed": True, "levels": {"C0": "pass", "C1": "pass"}, "fidelity": True}
    (run_dir / "export" / "verification.json").write_text(json.dumps(record))
    row = runs_view.view(run_dir)
    assert row["verify"]["from"] == "export/verification.json"
    assert runs_view.list_line(row).endswith("verify[rebuilt] PASSED C0=pass C1=pass")
    # The run's own record written after it (the same verify, or a later one) wins.
    record["date"] = "2026-12-06T10:10:00Z"
    (run_dir / "export" / "verification.json").write_text(json.dumps(record))
    row = runs_view.view(run_dir)
    assert "from" not in row["verify"] and "FAILED" in runs_view.list_line(row)


def test_image_sizes_where_the_engine_answers(tmp_path: Path) -> None:
    good, _liar, _bad = make_runs(tmp_path)
    sizes = {"synth-live/demo:20261129-101500-aaaaaa": 123_400_000}
    row = runs_view.view(good, sizes.get)
    assert row["images"] == {"live": {"ref": "synth-live/demo:20261129-101500-aaaaaa",
                                      "size": 123_400_000}}
    assert "live=123.4MB" in runs_view.list_line(row)
    assert row["claims"] == "missing"  # no claims.json recorded in run.json: nothing to check


def test_agent_labels() -> None:
    assert runs_view.agent_label({"kind": "exec", "argv": ["/opt/bin/my-agent", "-x"]}) \
        == "exec:my-agent"
    assert runs_view.agent_label({"kind": "exec", "preset": "codex"}) == "exec:codex"
    assert runs_view.agent_label({"kind": "shell"}) == "shell"
    assert runs_view.agent_label(None) == "-"


def test_untrusted_names_print_literally(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, task="evil", run_id="20261129-101500-dddddd")
    data = json.loads((run_dir / "run.json").read_text())
    data["task"]["name"] = "evil[/]:x:"
    data["agent"] = {"kind": "exec", "script": None, "argv": ["/x/[bold]agent:smile:"]}
    (run_dir / "run.json").write_text(json.dumps(data))
    proc = synth("runs", "list", "--artifacts", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "evil[/]:x:/20261129-101500-dddddd" in proc.stdout
    assert "exec:[bold]agent:smile:" in proc.stdout
    proc = synth("runs", "show", "latest", "--artifacts", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "agent-as   exec:[bold]agent:smile:" in proc.stdout


def test_a_run_whose_statements_failed_says_so_though_it_succeeded(tmp_path: Path) -> None:
    """A replay whose last statement succeeded is `succeeded` (the final state is the truth
    for export), but its failed statements show in runs list, runs show and bench."""
    from synth.bench.summary import _cell_line
    from synth.record.rundir import describe_run, format_run

    run_dir = make_run_dir(tmp_path, run_id="20261129-102000-abcdef")
    run = json.loads((run_dir / "run.json").read_text())
    run["failed_statements"] = [{"command": "pip-sync requirements.txt", "exit": 2}]
    (run_dir / "run.json").write_text(json.dumps(run))
    row = runs_view.view(run_dir)
    assert "succeeded(1 failed)" in runs_view.list_line(row)
    shown = format_run(describe_run(run_dir))
    assert "FAILED     1 statement(s) of the agent failed" in shown
    assert "  exit 2  pip-sync requirements.txt" in shown
    cell = _cell_line({"cell": "c", "run": {"failed_statements": 1}, "verify": {}})
    assert cell["error"] == "1 statement(s) of the agent failed"
