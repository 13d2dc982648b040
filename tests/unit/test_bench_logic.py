"""synth bench's pure parts: agent specs, the matrix, the results folder (append, torn
lines, recovery of a killed cell), the job bound, the summary and the HTML report."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest

from synth.bench.executors import CELL_MEMORY, bounded_jobs
from synth.bench.matrix import AgentSpec, Cell, plan_cells
from synth.bench.results import ResultsFolder
from synth.bench.run import _recover
from synth.bench.summary import render_markdown, summarize
from synth.errors import UsageError
from tests.conftest import REPO_ROOT

TASK = REPO_ROOT / "tests" / "bench_task"


def test_agent_specs() -> None:
    assert AgentSpec.parse("good") == AgentSpec("good", "replay")
    assert AgentSpec.parse("liar.sh") == AgentSpec("liar", "replay")
    assert AgentSpec.parse("cli=exec:my-agent --prompt 'a b'") == \
        AgentSpec("cli", "exec", ("my-agent", "--prompt", "a b"))
    for bad in ("", "a b", "x=shell:bash", "x=exec:", "../x"):
        with pytest.raises(UsageError):
            AgentSpec.parse(bad)


def test_plan_cells() -> None:
    cells = plan_cells([TASK], [AgentSpec.parse("good"), AgentSpec.parse("liar")], 2)
    assert [c.id for c in cells] == ["bench-tiny--good--r1", "bench-tiny--good--r2",
                                     "bench-tiny--liar--r1", "bench-tiny--liar--r2"]
    assert cells[0].script == TASK.resolve() / "agents" / "good.sh"
    assert Cell.from_json(json.loads(json.dumps(cells[3].to_json()))) == cells[3]
    with pytest.raises(UsageError, match="no transcript"):
        plan_cells([TASK], [AgentSpec.parse("sloppy")], 1)
    with pytest.raises(UsageError, match="named twice"):
        plan_cells([TASK, TASK], [AgentSpec.parse("good")], 1)
    with pytest.raises(UsageError, match="repeat"):
        plan_cells([TASK], [AgentSpec.parse("good"), AgentSpec.parse("good")], 1)
    with pytest.raises(UsageError, match="at least 1"):
        plan_cells([TASK], [AgentSpec.parse("good")], 0)


def test_results_append_latest_and_torn_line(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path / "r")
    folder.append({"cell": "a", "status": "crashed"})
    folder.append({"cell": "b", "status": "done"})
    folder.append({"cell": "a", "status": "done"})
    # Written unescaped (JSON allows it); the record stays one line.
    folder.append({"cell": "d", "status": "crashed", "error": "agent said a\u2028b\x85c"})
    with folder.cells_file.open("a") as fh:
        fh.write('{"cell": "c", "sta')  # a writer killed mid-line
    assert [r["cell"] for r in folder.records()] == ["a", "b", "a", "d"]
    assert folder.latest()["a"]["status"] == "done"
    assert folder.latest()["d"]["error"] == "agent said a\u2028b\x85c"
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cells.jsonl").write_text('{"x": 1}\n')
    with pytest.raises(UsageError, match=r"cells\.jsonl:1"):
        ResultsFolder(tmp_path / "bad").records()
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="not a folder"):
        ResultsFolder(tmp_path / "file")


def test_write_files_stays_in_the_cell_folder(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    folder.write_files("x", {"verify.json": "{}", "../evil": "no", ".hidden": "no"})
    assert sorted(p.name for p in folder.cell_dir("x").iterdir()) == ["verify.json"]


def test_recover_records_a_killed_cell_once(tmp_path: Path) -> None:
    folder = ResultsFolder(tmp_path)
    cells = plan_cells([TASK], [AgentSpec.parse("good"), AgentSpec.parse("liar")], 1)
    folder.mark_started(cells[0].id, "local")
    said: list[str] = []
    _recover(folder, cells, said.append)
    recs = folder.records()
    assert [(r["cell"], r["status"]) for r in recs] == [(cells[0].id, "crashed")]
    assert recs[0]["error"].startswith("interrupted: the bench stopped")
    assert "files" not in recs[0] and len(said) == 1
    _recover(folder, cells, said.append)  # already recorded: nothing new
    assert len(folder.records()) == 1


def test_bounded_jobs() -> None:
    assert bounded_jobs(8, cores=2, mem=64 * 1024**3) == 2
    assert bounded_jobs(8, cores=16, mem=3 * CELL_MEMORY) == 3
    assert bounded_jobs(4, cores=16, mem=CELL_MEMORY // 2) == 1
    assert bounded_jobs(1, cores=16, mem=None) == 1
    with pytest.raises(UsageError):
        bounded_jobs(0)


def _rec(cell: str, agent: str, levels: dict[str, str] | None, **extra: Any) -> dict[str, Any]:
    verify = None if levels is None else {
        "passed": levels.get("C1") == "pass", "levels": {"rebuilt": levels, "live": levels},
        "highest": {"rebuilt": "C1", "live": "C1"}, "reaches_live_level": True,
        "fingerprint_equal": True}
    return {"cell": cell, "task": "t", "agent": agent, "status": "done", "verify": verify,
            "times": {"run": 10.0, "export": 1.0, "build": 20.0, "verify": 5.0},
            "export": {"incomplete": []}, **extra}


_ALL_PASS = {"C0": "pass", "C1": "pass", "C2": "skipped", "C3": "not_applicable",
             "C4": "not_applicable", "C5": "pass"}


def test_summary_rates() -> None:
    recs = {
        "a1": _rec("a1", "a", _ALL_PASS),
        "a2": _rec("a2", "a", {**_ALL_PASS, "C1": "fail", "C5": "fail"}),
        "a3": _rec("a3", "a", None, error="the run broke"),  # no verdict: a failure
        "b1": _rec("b1", "b", _ALL_PASS, status="crashed"),
    }
    s = summarize(recs)
    a = s["agents"]["a"]
    assert (s["cells"], s["done"], s["crashed"]) == (4, 3, 1)
    assert a["levels"]["rebuilt"]["C0"]["rate"] == round(2 / 3, 4)
    assert a["levels"]["rebuilt"]["C1"] | {} == {
        "pass": 1, "fail": 1, "not_reached": 0, "no_verdict": 1, "not_applicable": 0,
        "skipped": 0, "decided": 3, "rate": round(1 / 3, 4)}
    assert a["levels"]["live"]["C2"]["rate"] is None
    assert a["levels"]["rebuilt"]["C3"]["not_applicable"] == 2
    assert a["mean_seconds"] == {"run": 10.0, "export": 1.0, "build": 20.0, "verify": 5.0}
    assert a["fidelity"] == {"compared": 2, "reaches": 2, "rate": 1.0}
    assert s["agents"]["b"]["crashed"] == 1 and s["agents"]["b"]["pass_rate"] is None
    md = render_markdown(s)
    assert "| agent | cells | C0 | C0i | C1 | C2 |" in md  # C0i has its column
    assert "| a | 3 | 67% / 67% | — / — | 33% / 33% | — / — |" in md
    assert "| b | 0 (+1 crashed) |" in md
    assert "the run broke" in md


def test_html_report_embeds_three_pngs() -> None:
    pytest.importorskip("matplotlib")
    from synth.bench.report import render_html

    s = summarize({"a1": _rec("a1", "a", _ALL_PASS), "b1": _rec("b1", "b", _ALL_PASS)})
    page = render_html(s)
    pngs = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(pngs) == 3
    assert all(base64.b64decode(p)[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert 'data-images-loaded="0"' in page
    # the tables as HTML tables (not markdown in a <pre>), C0i among the levels
    assert "<pre>" not in page and page.count("<table>") == 3
    assert "<th>C0i</th>" in page and "<tr><td>a</td>" in page
    assert render_html(s) == page  # the same results, the same bytes


def test_zero_bars_are_labelled_and_undecided_levels_say_so() -> None:
    """A 0 % bar has no height: its label says 0%; a level nobody decided says n/a."""
    from synth.bench.report import bar_labels

    s = summarize({"a1": _rec("a1", "a", {**_ALL_PASS, "C0i": "pass", "C1": "fail"})})
    assert bar_labels(s["agents"]["a"], "rebuilt") == \
        ["100%", "100%", "0%", "n/a", "n/a", "n/a", "100%"]


def test_a_bad_ray_address_is_refused_before_any_local_work(tmp_path: Path) -> None:
    import socket

    from synth.bench.executors import check_address
    from synth.bench.matrix import AgentSpec
    from synth.bench.run import BenchOptions, run_bench
    from synth.config import Settings
    from synth.errors import UsageError

    for bad, message in ((None, "needs --address"), ("head", "expected HOST:PORT"),
                         ("ray://head:10001", "expected HOST:PORT"),
                         ("head:99999", "expected HOST:PORT")):
        with pytest.raises(UsageError, match=message):
            check_address(bad)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "results"
    opts = BenchOptions(tasks=[tmp_path / "no-such-task"], agents=[AgentSpec("good", "replay")],
                        out_dir=out, executor="ray", address=f"127.0.0.1:{port}")
    with pytest.raises(UsageError, match="nothing answers there"):
        run_bench(opts, Settings.load(artifacts_dir=tmp_path), lambda _m: None)
    assert not out.exists()  # neither the task nor the results folder was touched
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        check_address(f"127.0.0.1:{server.getsockname()[1]}")


def test_cells_of_one_agent_share_a_download_cache(tmp_path: Path) -> None:
    from synth.bench.cell import _downloads
    from synth.bench.matrix import AgentSpec, Cell

    cell = Cell(task="t", task_dir=str(tmp_path), agent=AgentSpec("my agent", "replay"),
                repeat=1)
    assert _downloads({"download_cache": None}, cell) is None
    got = _downloads({"download_cache": str(tmp_path / "downloads")}, cell)
    assert got == tmp_path / "downloads" / "my_agent" and got.is_dir()


def test_pack_task_carries_the_task_folder(tmp_path: Path) -> None:
    import io
    import tarfile

    from synth.bench.executors import pack_task

    task = tmp_path / "t"
    (task / "repo" / "__pycache__").mkdir(parents=True)
    (task / "repo" / ".git").mkdir()
    (task / "task.toml").write_text("name = 't'\n")
    (task / "repo" / "a.py").write_text("")
    (task / "repo" / "__pycache__" / "a.pyc").write_text("")
    (task / "repo" / ".git" / "HEAD").write_text("")
    with tarfile.open(fileobj=io.BytesIO(pack_task(task)), mode="r:gz") as tar:
        names = sorted(tar.getnames())
    assert names == ["task", "task/repo", "task/repo/a.py", "task/task.toml"]


def test_agent_presets(tmp_path: Path) -> None:
    from synth.bench.presets import preset_agent, prompt
    from synth.formats.task import load_task

    binary = tmp_path / "agent-cli"
    binary.write_text("#!/bin/sh\n")
    spec = AgentSpec.parse(f"cc=preset:claude-code:{binary}")
    assert spec == AgentSpec("cc", "preset", ("claude-code", str(binary.resolve())))
    with pytest.raises(UsageError, match="Unknown agent preset"):
        AgentSpec.parse(f"x=preset:nope:{binary}")
    with pytest.raises(UsageError, match="not a file"):
        AgentSpec.parse(f"x=preset:codex:{tmp_path / 'missing'}")
    task = load_task(TASK)
    text = prompt(task, 600)
    assert "C1 (CPU): `python hello.py` must exit 0" in text
    assert "/synth/claims.json" in text and "600 seconds" in text and "\n\n" not in text
    assert ("with the fields python_path, python_version, torch_version, cuda_available, "
            "gpu_count, ddp_expected_ok, env_tool, env_name, notes (null where you do not "
            "know).") in text  # REB's report.json fields, from the claims schema's profile
    agent = preset_agent("claude-code", str(binary), task, 600)
    assert list(agent.argv) == ["/synth/agent/agent-cli", "-p", text,
                                "--dangerously-skip-permissions"]
    assert [(m.source, m.target, m.read_only) for m in agent.mounts] == \
        [(binary.resolve(), "/synth/agent/agent-cli", True)]
    assert agent.secret_names() == ["ANTHROPIC_API_KEY"]
    stdin = preset_agent("prompt-stdin", str(binary), task, 600)
    assert list(stdin.argv)[-2:] == ["/synth/agent/agent-cli", text]
