"""``synth bench`` on a real engine, over ONE tiny task (tests/bench_task: stdlib only, a
cell takes seconds) x two transcripts (good, liar). One results folder serves every test:
a bench killed in its first cell, resumed in-process with two jobs, then re-run through
the CLI (which skips every finished cell); the report is opened in a real headless browser;
the same matrix on a local Ray cluster gives the same verdicts. One more cell plays a CLI
agent preset with a stand-in script."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synth.plugins.reb.results import read_results
from tests.conftest import REPO_ROOT

TASK = REPO_ROOT / "tests" / "bench_task"
GOOD, LIAR = "bench-tiny--good--r1", "bench-tiny--liar--r1"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "synth", "bench", str(TASK), "--agent", "good",
            "--agent", "liar", "--timeout", "300", *args]


def _cleanup(engine: Any, out: Path) -> None:
    """Containers and images of this folder's cells (a killed cell leaves its session
    container, stopped when its lease lapses, and maybe a live image)."""
    def ours(labels: dict[str, str]) -> bool:
        return str(labels.get("synth.artifacts", "")).startswith(str(out))

    for c in engine.managed_containers():
        if ours(c.labels):
            c.remove(force=True)
    for image in engine.managed_images():
        if ours(image.labels):
            for tag in image.tags:
                engine.remove_image(tag)


@pytest.fixture(scope="module")
def bench_results(
    engine: Any, base_image: str, ca_bundle: Path | None, wheelhouse: Path | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Path, Any, list[str]]]:
    from synth.bench.matrix import AgentSpec
    from synth.bench.run import BenchOptions, run_bench
    from synth.config import Settings

    out = tmp_path_factory.mktemp("bench") / "results"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    log = (out.parent / "killed.log").open("w")
    proc = subprocess.Popen(_cli("-o", str(out)), env=env, stdout=log, stderr=log,
                            start_new_session=True, cwd=REPO_ROOT)
    marker = out / "cells" / GOOD / "started.json"
    try:
        deadline = time.monotonic() + 120
        while not marker.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert marker.is_file(), (out.parent / "killed.log").read_text()
        time.sleep(3)  # inside the cell: its session is starting
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        log.close()
        lines: list[str] = []
        settings = Settings.load(ca_bundle=ca_bundle, wheelhouse=wheelhouse)
        outcome = run_bench(BenchOptions(
            tasks=[TASK], agents=[AgentSpec.parse("good"), AgentSpec.parse("liar")],
            out_dir=out, timeout=300, jobs=2), settings, say=lines.append)
        yield out, outcome, lines
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        _cleanup(engine, out)


def _records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "cells.jsonl").read_text().splitlines()]


def test_killed_cell_is_recorded_then_resumed(bench_results: tuple[Path, Any, list[str]]) -> None:
    out, outcome, lines = bench_results
    recs = _records(out)
    good = [r for r in recs if r["cell"] == GOOD]
    assert [r["status"] for r in good] == ["crashed", "done"], good
    assert good[0]["error"].startswith("interrupted: the bench stopped while this cell ran")
    assert [r["status"] for r in recs if r["cell"] == LIAR] == ["done"]
    assert outcome.ran == 2 and outcome.skipped == 0
    assert any(line.startswith("[2/2] ") for line in lines), lines  # progress


def test_cells_verdicts_times_sizes(bench_results: tuple[Path, Any, list[str]]) -> None:
    out, _, _ = bench_results
    latest = {r["cell"]: r for r in _records(out)}
    for cell, c5 in ((GOOD, "pass"), (LIAR, "fail")):
        rec = latest[cell]
        assert rec["run"]["status"] == "succeeded" and rec["export"]["ok"]
        assert rec["export"]["incomplete"] == []
        for target in ("rebuilt", "live"):
            levels = rec["verify"]["levels"][target]
            assert (levels["C0"], levels["C1"], levels["C2"], levels["C5"]) == \
                ("pass", "pass", "not_applicable", c5), (cell, target, levels)
        assert rec["verify"]["passed"] and rec["verify"]["reaches_live_level"]
        assert all(rec["times"][s] > 0 for s in ("run", "export", "build", "verify"))
        assert rec["images"]["live"]["size"] > 0 and rec["images"]["rebuilt"]["size"] > 0
        verify_json = json.loads((out / "cells" / cell / "verify.json").read_text())
        assert verify_json["reports"]["rebuilt"]["highest"] == "C1"
        assert (out / "cells" / cell / "run.json").is_file()
        # the cell as a REB job: every stage's results.json, one run id for the bench
        reb = read_results(out / "cells" / cell / "reb" / "benchmark")
        job = json.loads((out / "cells" / cell / "reb" / "job_summary.json").read_text())
        assert (job["run_id"], job["baseline"]) == (out.name, cell.split("--")[1])
        # the cell's images are removed and what else its builds left pruned (gc's words)
        assert isinstance(rec["pruned"], list), rec.get("pruned")
        assert not any(p.startswith("gc failed") for p in rec["pruned"]), rec["pruned"]
        # REB's CUDA stage always runs: no GPU seen is its failure
        assert (reb["cpu"]["status"], reb["cuda"]["status"], reb["hallucination"]["status"]) \
            == ("success", "failure", "success" if c5 == "pass" else "failure")


def test_summary_and_report(bench_results: tuple[Path, Any, list[str]]) -> None:
    out, outcome, _ = bench_results
    summary = json.loads((out / "summary.json").read_text())
    assert summary == outcome.summary
    assert (summary["cells"], summary["done"], summary["crashed"]) == (2, 2, 0)
    good, liar = summary["agents"]["good"], summary["agents"]["liar"]
    assert good["levels"]["rebuilt"]["C5"]["rate"] == 1.0
    assert liar["levels"]["rebuilt"]["C5"]["rate"] == 0.0
    assert liar["levels"]["live"]["C1"]["rate"] == 1.0
    assert good["levels"]["rebuilt"]["C3"]["rate"] is None  # not applicable: not decided
    assert good["fidelity"] == {"compared": 1, "reaches": 1, "rate": 1.0}
    md = (out / "summary.md").read_text()
    assert re.search(r"\| liar \| 1 \| 100% / 100% \| [^|]+ \| 100% / 100% \| — / — \|", md), md
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 3
    assert "<th>C0i</th>" in page and "<pre>" not in page
    # each agent's cells shared one pip/uv download cache
    assert (out / "downloads" / "good").is_dir() and (out / "downloads" / "liar").is_dir()


def test_rerun_skips_finished_cells(bench_results: tuple[Path, Any, list[str]]) -> None:
    out, _, _ = bench_results
    before = (out / "cells.jsonl").read_bytes()
    proc = subprocess.run(_cli("-o", str(out), "--json"), capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, cwd=REPO_ROOT,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["command"] == "bench"
    assert (doc["result"]["ran"], doc["result"]["skipped"]) == (0, 2)
    assert "2 cells (0 to run, 2 finished and skipped)" in proc.stderr
    assert (out / "cells.jsonl").read_bytes() == before


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_opens_in_a_headless_browser(
    bench_results: tuple[Path, Any, list[str]], tmp_path: Path
) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install chromium); .ci/run installs it")
    out, _, _ = bench_results
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    url = (out / "report.html").as_uri()
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=5000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120, check=False)
    assert 'data-images-loaded="3"' in dom.stdout, dom.stderr[-2000:]
    # the tables are real tables in the browser's DOM, C0i among the levels
    assert dom.stdout.count("<table>") == 3 and "<th>C0i</th>" in dom.stdout
    shot = tmp_path / "report.png"
    subprocess.run([browser, *flags, "--window-size=1200,1600", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=False)
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local Ray cluster: a head that runs no cells and one worker node offering one
    ``synth_docker`` slot (tests/ray_local.py)."""
    pytest.importorskip("ray")
    from tests.ray_local import RAY_CLI, RayClusterError, local_ray_cluster

    if not RAY_CLI.is_file():
        pytest.skip(f"no ray command beside {sys.executable}")
    try:
        with local_ray_cluster(tmp_path_factory.mktemp("ray"), workers=1) as address:
            yield address
    except RayClusterError as e:
        pytest.fail(str(e))


def _wait_for_slot(address: str) -> None:
    code = ("import ray, sys, time\n"
            f"ray.init(address={address!r}, logging_level='ERROR')\n"
            "for _ in range(180):\n"
            "    if ray.cluster_resources().get('synth_docker', 0) >= 1: sys.exit(0)\n"
            "    time.sleep(1)\n"
            "sys.exit(1)\n")
    if subprocess.run([sys.executable, "-c", code], capture_output=True,
                      timeout=300, check=False).returncode == 0:
        return
    pytest.fail(f"the local Ray cluster at {address} never offered synth_docker")


def test_ray_executor_gives_the_same_verdicts(
    bench_results: tuple[Path, Any, list[str]], ray_cluster: str, ca_bundle: Path | None,
    wheelhouse: Path | None, tmp_path: Path,
) -> None:
    from synth.bench.matrix import AgentSpec
    from synth.bench.run import BenchOptions, run_bench
    from synth.config import Settings

    local_out, _, _ = bench_results
    _wait_for_slot(ray_cluster)
    out = tmp_path / "ray-results"
    settings = Settings.load(ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    said: list[str] = []
    outcome = run_bench(BenchOptions(
        tasks=[TASK], agents=[AgentSpec.parse("good"), AgentSpec.parse("liar")],
        out_dir=out, timeout=300, executor="ray", address=ray_cluster), settings,
        say=said.append)
    assert (outcome.ran, outcome.summary["done"]) == (2, 2), outcome.summary
    # a Ray cell waits for a node's free slot: dispatched is "queued", never "start"
    assert f"  queued {GOOD}" in said and not any(m.startswith("  start") for m in said)
    local = {r["cell"]: r for r in _records(local_out)}
    remote = {r["cell"]: r for r in _records(out)}
    for cell in (GOOD, LIAR):
        assert remote[cell]["executor"] == "ray"
        assert remote[cell]["verify"]["levels"] == local[cell]["verify"]["levels"]
        assert remote[cell]["verify"]["passed"] == local[cell]["verify"]["passed"]
        # the reports came home with the task's result; the node's work folder is gone
        assert json.loads((out / "cells" / cell / "verify.json").read_text())["passed"]
        assert not Path(remote[cell]["run"]["run_dir"]).exists()
        # the task folder travelled with the Ray task: the node ran its own copy
        task_file = json.loads((out / "cells" / cell / "run.json").read_text())[
            "task"]["task_file"]
        assert task_file.endswith("/task/task.toml") and not task_file.startswith(str(TASK))
    for which in ("C1", "C5"):
        assert outcome.summary["agents"]["liar"]["levels"]["rebuilt"][which]["rate"] == \
            json.loads((local_out / "summary.json").read_text())[
                "agents"]["liar"]["levels"]["rebuilt"][which]["rate"]


def test_cli_agent_preset_with_a_stand_in(
    engine: Any, base_image: str, ca_bundle: Path | None, wheelhouse: Path | None,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The claude-code preset, played by a stand-in script that behaves like the CLI: its
    binary mounted from the host, its key passed through and masked, the prompt naming
    the probes and the claims path, one bench cell end to end."""
    from synth.bench.matrix import AgentSpec
    from synth.bench.run import BenchOptions, run_bench
    from synth.config import Settings

    key = "sk-standin-" + "7" * 24
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    out = tmp_path / "preset"
    agent = AgentSpec.parse(f"cli=preset:claude-code:{TASK / 'standin_cli.sh'}")
    outcome = run_bench(BenchOptions(tasks=[TASK], agents=[agent], out_dir=out, timeout=300),
                        Settings.load(ca_bundle=ca_bundle, wheelhouse=wheelhouse),
                        say=lambda _m: None)
    rec = _records(out)[-1]
    assert (outcome.ran, rec["status"], rec["run"]["status"]) == (1, "done", "succeeded"), rec
    assert rec["run"]["claims"] == "valid"
    levels = rec["verify"]["levels"]["rebuilt"]
    assert (levels["C1"], levels["C5"]) == ("pass", "pass"), levels
    run = json.loads((out / "cells" / "bench-tiny--cli--r1" / "run.json").read_text())
    argv = run["agent"]["argv"]
    assert argv[0] == "/synth/agent/standin_cli.sh" and "`python hello.py`" in argv[2]
    assert run["secret_env"] == ["ANTHROPIC_API_KEY"]
    logs = list((out / "cells").rglob("agent.log"))
    assert logs and "using key ***" in logs[0].read_text()
    assert key not in "".join(p.read_text(errors="replace") for p in out.rglob("*")
                              if p.is_file() and p.suffix in (".json", ".jsonl", ".log", ".md"))
