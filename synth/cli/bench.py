"""``synth bench``: tasks x agents x repeats."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from synth.cli.app import CaBundleOpt, JsonOpt, app
from synth.config import Settings
from synth.ui import console


@app.command()
def bench(
    tasks: Annotated[list[Path], typer.Argument(help="Task directories (or task.toml files).")],
    agent: Annotated[list[str], typer.Option(
        help="A transcript name (good: agents/good.sh of each task), auto (synth's own setup "
        "agent) or NAME=exec:COMMAND; repeatable.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The results folder (resumable).")],
    repeats: Annotated[int, typer.Option(help="Cells per task and agent.")] = 1,
    executor: Annotated[str, typer.Option(help="local or ray.")] = "local",
    jobs: Annotated[int, typer.Option(help="Local: cells at a time (bounded by cores and "
                                      "memory).")] = 1,
    address: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Ray: the cluster's head, HOST:PORT.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds an agent may work per cell.")] = 3600,
    keep_images: Annotated[bool, typer.Option(help="Keep each cell's live and rebuilt "
                                              "images.")] = False,
    share_downloads: Annotated[bool, typer.Option(
        help="One pip/uv download cache per agent, shared by its cells.")] = True,
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder mounted in sessions and builds (env SYNTH_WHEELHOUSE).")] = None,
    ca_bundle: CaBundleOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run tasks x agents x repeats: run, export, rebuild, verify; summary and HTML report."""
    from synth.bench.matrix import AgentSpec
    from synth.bench.run import BenchOptions, run_bench

    opts = BenchOptions(
        tasks=tuple(tasks), agents=tuple(AgentSpec.parse(a) for a in agent), out_dir=out,
        repeats=repeats, executor=executor, jobs=jobs, address=address, timeout=timeout,
        keep_images=keep_images, share_downloads=share_downloads)
    # No engine here: each cell's worker process opens its own (synth.bench.cell.run_cell).
    outcome = run_bench(opts, Settings.load(ca_bundle=ca_bundle, wheelhouse=wheelhouse),
                        say=console.say)
    if json_out:
        console.print_json({"results_dir": str(outcome.results_dir), "ran": outcome.ran,
                            "skipped": outcome.skipped, "summary": outcome.summary})
    raise typer.Exit(1 if outcome.summary["crashed"] else 0)
