"""What verify and bench add for a task imported from REB, pure parts: the options that reach
the assets step, the report path and the probe context of a probe container, REB's
``skipped`` stage results read back, and a bench cell written as a REB job folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.errors import UsageError
from synth.formats.verify import VerifyDocument
from synth.plugins.reb.jobs import bench_job
from synth.plugins.reb.probes import (
    AFTER,
    SCRIPTS_MOUNT,
    after_probes,
    before_probes,
    skip_reason,
    stage_verdicts,
)
from synth.plugins.reb.results import read_results
from synth.pyramid.result import LevelResult, Report
from synth.verify.command import ProbeContext, Target, VerifyOptions, probe_context, verify
from tests.distill_runs import NO_ENGINE
from tests.unit.test_reb_contract import _doc, _reb_task


def _report(*levels: tuple[str, str]) -> Report:
    return Report({"kind": "rebuilt"}, tuple(LevelResult(lv, st, seconds=1.0)  # type: ignore[arg-type]
                                             for lv, st in levels))


class FakeContainer:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.ran: list[list[str]] = []

    def exec(self, argv: Sequence[str]) -> Any:
        self.ran.append(list(argv))
        return None

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
        return self.files.get(path)


# ---------------------------------------------------------------- options
@pytest.mark.parametrize(("kw", "message"), [
    ({"assets_offline": True}, "--assets-offline needs --assets-cache"),
    ({"assets_cache": Path("/nonexistent/cache")}, "not a folder"),
    ({"assets_offline": True, "runtime": "host", "python": Path(sys.executable)},
     "belong to --runtime docker"),
    ({"scoring": ("bogus",)}, "Unknown scoring 'bogus'"),
])
def test_assets_options_are_checked_first(tmp_path: Path, kw: dict[str, Any],
                                          message: str) -> None:
    settings = Settings.load(artifacts_dir=tmp_path)
    with pytest.raises(UsageError, match=message):
        verify(VerifyOptions(target=str(tmp_path / "nothing"), **kw), settings, NO_ENGINE)


def test_cli_passes_the_assets_options_through(tmp_path: Path) -> None:
    """`synth verify --assets-cache DIR --assets-offline` reaches VerifyOptions: a cache that
    is no folder is refused by name before any target is looked up."""
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "verify", "latest", "--assets-offline",
         "--assets-cache", str(tmp_path / "no-cache")],
        capture_output=True, text=True, check=False,
        env={**os.environ, "SYNTH_ARTIFACTS": str(tmp_path / "art")})
    assert proc.returncode != 0
    assert f"--assets-cache {tmp_path / 'no-cache'}: not a folder" in proc.stderr


def test_probe_context_of_a_target(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    target = Target("run", run, None, None)
    opts = VerifyOptions(target=None, assets_cache=tmp_path, assets_offline=True)
    assert probe_context(opts, target) == ProbeContext(None, None, "/workspace", tmp_path, True)
    (run / "claims.json").write_text("{}")
    assert probe_context(opts, target).claims == run / "claims.json"
    assert Target("task", run, None, None).claims_file is None  # a task has no claims


def test_report_path_only_for_reb_tasks(tmp_path: Path) -> None:
    claims = tmp_path / "claims.json"
    claims.write_text("{}")
    from synth import profiles

    def probe_mounts(task_dir: Path, claims_file: Path | None) -> list[Any]:
        site = ProbeContext(task_dir, claims_file).site("image")
        return profiles.for_task(task_dir).probe_mounts(site)

    assert probe_mounts(tmp_path, claims) == []  # synth's own task
    # the report at REB's path, and REB's whole scripts folder, both read-only
    report, folder = probe_mounts(_reb_task(tmp_path / "t"), claims)
    assert (report.source, report.target, report.read_only) == \
        (claims, "/opt/scimlopsbench/report.json", True)
    assert [m.target for m in probe_mounts(tmp_path / "t", None)] == [SCRIPTS_MOUNT]
    assert (folder.source, folder.target, folder.read_only) == \
        ((tmp_path / "t" / "reb" / "benchmark_scripts").resolve(), SCRIPTS_MOUNT, True)


# ---------------------------------------------------------------- REB's skipped stages
def test_skip_reason() -> None:
    assert skip_reason(b'{"status": "skipped", "skip_reason": "needs 2 GPUs"}') == \
        "needs 2 GPUs"
    assert skip_reason(b'{"status": "skipped", "reason": "cpu only"}') == "cpu only"
    assert skip_reason(b'{"status": "skipped"}') == "no reason given"
    for raw in (None, b'{"status": "success"}', b"not json", b"[1]", b"\xff"):
        assert skip_reason(raw) is None


def test_levels_read_rebs_stage_files_as_run_all_does() -> None:
    """C1/C3/C4 read the stage's results.json, not the exit code: skipped is a skip, failure
    or exit_code 1 a failure, a missing or invalid file a failure, success passes (even
    where the script exited non-zero); every stage file is carried in the report."""
    report = _report(("C0", "pass"), ("C1", "pass"), ("C3", "fail"), ("C4", "pass"),
                     ("C5", "pass"))
    files = {
        "/w/build_output/cpu/results.json": b'{"status": "success", "exit_code": 1, '
                                            b'"failure_category": "deps"}',
        "/w/build_output/single_gpu/results.json": b'{"status": "success", "exit_code": 0}',
        "/w/build_output/multi_gpu/results.json":
            b'{"status": "skipped", "skip_reason": "insufficient_hardware"}',
        "/w/build_output/prepare/results.json": b'{"status": "success", "stage": "prepare"}',
        "/w/build_output/env_size/results.json": b"not json"}
    out = stage_verdicts(report, files.get, "/w/")
    assert [(r.level, r.status) for r in out.levels] == [
        ("C0", "pass"), ("C1", "fail"), ("C3", "pass"), ("C4", "skipped"), ("C5", "pass")]
    c1, c4 = out.get("C1"), out.get("C4")
    assert c1 is not None and c1.reason == "REB's cpu stage: success (deps)"
    assert c4 is not None and c4.reason == \
        "REB's multi_gpu stage skipped: insufficient_hardware"
    assert c4.details["reb_results"] == "/w/build_output/multi_gpu/results.json"
    assert c4.seconds == 1.0
    assert sorted(out.target["reb_stages"]) == ["cpu", "multi_gpu", "prepare", "single_gpu"]
    none = stage_verdicts(report, lambda p: None, "/w")
    assert [(r.level, r.status) for r in none.levels][1:4] == [
        ("C1", "fail"), ("C3", "fail"), ("C4", "fail")]
    assert none.get("C1").reason == "REB's cpu stage wrote no valid results.json"  # type: ignore[union-attr]


def test_before_and_after_the_probes_in_the_container() -> None:
    """Before: the image's stage files removed, REB's folder copied in. After: REB's cuda,
    env_size and hallucination stages run as run_all.sh runs them, then read back."""
    c = FakeContainer({"/w/build_output/cuda/results.json": b'{"status": "failure"}'})
    before_probes(c, "/w")
    (argv,) = c.ran
    assert "rm -rf /w/build_output/prepare" in argv[2]
    assert f"cp -a {SCRIPTS_MOUNT}/. /w/benchmark_scripts/" in argv[2]
    out = after_probes(c, _report(("C2", "fail")), "/w")
    ran = [a[2] for a in c.ran[1:]]
    assert [next(s for s in AFTER.values() if s in r) for r in ran] == list(AFTER.values())
    assert all("PY=python; command -v python" in r for r in ran)
    assert out.target["reb_stages"] == {"cuda": {"status": "failure"}}


# ---------------------------------------------------------------- bench
def test_bench_cell_of_a_reb_task_is_a_reb_job(tmp_path: Path) -> None:
    """A cell is one REB job: REB's job id (sha1 of owner/repo@commit::baseline), the
    bench's run id, the agent as the baseline, every stage file, the report and image."""
    import hashlib

    doc = _doc(tmp_path, None)
    task = tmp_path / "task"
    rec = {"cell": "alpha--good--r1", "agent": "good", "run": {"run_id": "20260101-x"},
           "started": 1767225600.0, "times": {"run": 30.0}}
    job = tmp_path / "cell" / "reb"
    typed = VerifyDocument.from_json(doc)
    paths = bench_job(typed, task, rec, json.dumps({"python_path": "/p"}), job, "bench-1")
    assert job / "job_summary.json" in paths
    summary = json.loads((job / "job_summary.json").read_text())
    commit = summary["commit_sha"]
    assert summary["job_id"] == hashlib.sha1(
        f"acme/alpha@{commit}::good".encode()).hexdigest()[:12]
    assert (summary["run_id"], summary["baseline"], summary["repo_url"], summary["script_id"]) \
        == ("bench-1", "good", "https://github.com/acme/alpha", "acme@alpha")
    assert summary["timestamps"]["agent_end"] - summary["timestamps"]["agent_start"] == 30.0
    assert sorted(read_results(job / "benchmark")) == sorted(
        ["pyright", "prepare", "cpu", "cuda", "single_gpu", "multi_gpu", "env_size",
         "hallucination", "summary"])
    assert read_results(job / "benchmark")["cpu"]["status"] == "success"
    assert json.loads((job / "agent" / "report.json").read_text()) == {"python_path": "/p"}
    assert (job / "docker" / "image_id.txt").read_text() == "sha256:1\n"
    # a cell of synth's own task is a job too (the task's name stands for the repository)
    other = bench_job(typed, tmp_path / "run", rec, "not json", tmp_path / "other", "b")
    assert tmp_path / "other" / "job_summary.json" in other
    assert not (tmp_path / "other" / "agent").exists()


def test_bench_writes_the_reb_job_of_each_finished_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run_bench's driver side, its executor faked: a finished cell of a REB task gets its
    stage files and its REB job folder from the verify.json the worker sent back."""
    from synth.bench import run as bench_run
    from synth.bench.cell import new_record, verify_summary
    from synth.bench.matrix import AgentSpec
    from synth.plugins.reb.importer import RebRepo, task_toml

    doc = _doc(tmp_path, None)
    task = tmp_path / "task"
    entry = {"repo_id": "Acme__Alpha", "repo_url": "https://github.com/acme/alpha",
             "commit_sha": "abc1234", "hardware_bucket": "cpu"}
    (task / "task.toml").write_text(task_toml(
        RebRepo("Acme__Alpha", entry["repo_url"], "abc1234", "cpu", entry), entry["repo_url"],
        None))
    (task / "agents").mkdir()
    (task / "agents" / "good.sh").write_text("true\n")

    def fake_local(cells: list[Any], opts: Any, on_start: Any, on_done: Any) -> None:
        for cell in cells:
            on_start(cell)
            rec = new_record(cell, "local", 60)
            rec.update(ended=rec["started"] + 1,
                       verify=verify_summary(VerifyDocument.from_json(doc)),
                       run={"run_id": "r9"}, times={"total": 1.0},
                       files={"verify.json": json.dumps(doc), "claims.json": "{}"})
            on_done(rec)

    monkeypatch.setattr(bench_run, "run_local", fake_local)
    opts = bench_run.BenchOptions(tasks=[task], agents=[AgentSpec("good", "replay")],
                                  out_dir=tmp_path / "bench")
    bench_run.run_bench(opts, Settings.load(artifacts_dir=tmp_path / "art"), lambda _m: None)
    (cell,) = (tmp_path / "bench" / "cells").iterdir()
    summary = json.loads((cell / "reb" / "job_summary.json").read_text())
    assert (summary["synth_cell"], summary["run_id"], summary["repo_id"]) == \
        (cell.name, "bench", "Acme__Alpha")
    stages = read_results(cell / "reb" / "benchmark")
    assert stages["cpu"]["status"] == "success" and len(stages) == 9
    # C5 by REB's rules on the cell's evidence: an empty report has no python_path
    hall = json.loads((cell / "reb" / "benchmark" / "build_output" / "hallucination" /
                       "results.json").read_text())
    assert (hall["status"], hall["hallucinations"]["path"]["count"]) == ("failure", 1)


def test_check_choices() -> None:
    from synth.verify.command import check_choices

    check_choices(runtime="host", scanner="libcst", progress="quiet")
    for bad in ({"runtime": "vm"}, {"scanner": "x"}, {"progress": "x"}):
        kw = {"runtime": "docker", "scanner": "ast", "progress": "steps", **bad}
        with pytest.raises(UsageError, match=r"--runtime|--progress"):
            check_choices(**kw)


def test_cli_scoring_reaches_the_verify_options(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`synth verify --scoring reb` is VerifyOptions.scoring ("reb",), the one path to the
    scoring hook; `synth` is none; an unknown name is a usage error."""
    from typer.testing import CliRunner

    from synth.cli import app

    seen: list[tuple[str, ...]] = []

    def fake_verify(opts: VerifyOptions, settings: Settings, engine: Any) -> Any:
        seen.append(opts.scoring)
        raise UsageError("stop here")

    monkeypatch.setattr("synth.verify.command.verify", fake_verify)
    monkeypatch.setenv("SYNTH_ARTIFACTS", str(tmp_path))
    runner = CliRunner()
    for word in ("reb", "synth"):
        assert runner.invoke(app, ["verify", "latest", "--scoring", word]).exit_code != 0
    assert seen == [("reb",), ()]
    bad = runner.invoke(app, ["verify", "latest", "--scoring", "bogus"])
    assert isinstance(bad.exception, UsageError) and seen == [("reb",), ()]
    assert "--scoring 'bogus': expected one of synth, reb" in str(bad.exception)


def test_reb_scoring_reads_regular_files_only(tmp_path: Path) -> None:
    """The files REB's scoring reads beside a target (run.json, manifest.json, the task's
    reb/ files) are read as regular files: a link to a host file, a FIFO or a folder there
    reads as absent, never followed or waited on."""
    import os

    from synth.plugins.reb.jobs import _task_repo
    from synth.plugins.reb.jobs import read_json as _json_file

    host = tmp_path / "host.json"
    host.write_text('{"repo_url": "https://host.example/secret"}')
    (tmp_path / "link.json").symlink_to(host)
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "task.toml").symlink_to(tmp_path / "real" / "task.toml")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "task.toml").write_text('[repo]\nurl = "https://x"\n')
    for name in ("link.json", "fifo.json", "dir.json", "missing.json"):
        assert _json_file(tmp_path / name) is None, name
    assert _json_file(host) == {"repo_url": "https://host.example/secret"}
    assert _task_repo(tmp_path / "linked") == {}
    assert _task_repo(tmp_path / "real") == {"url": "https://x"}
