"""``synth verify`` and ``synth demo``: the pyramid on a rebuilt artifact, a live image or a
host environment."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth.cli.app import (
    ArtifactsOpt,
    CaBundleOpt,
    JsonOpt,
    NoDiskCheckOpt,
    app,
    open_engine,
    prune_older_runs,
    settings_of,
)
from synth.config import Settings
from synth.ui import console

if TYPE_CHECKING:  # the commands import their modules when run: `synth --help` stays fast
    from synth.verify.command import VerifyOptions, VerifyOutcome


#: The wheel folder a rebuild needs.
WheelhouseOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    help="Wheel folder the artifact's lock needs to rebuild (env SYNTH_WHEELHOUSE).")]


@app.command("verify")
def verify_cmd(
    target: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="TARGET",
        help="Run (dir, id, latest) or artifact dir; with --runtime host also a task.")] = None,
    rebuild: Annotated[bool, typer.Option("--rebuild", help="Build the artifact from scratch "
                                          "(no cache) and verify the new image.")] = False,
    live: Annotated[bool, typer.Option("--live", help="With --rebuild, also verify the run's "
                                       "live image, side by side. (A run without --rebuild "
                                       "is verified on its live image anyway.)")] = False,
    levels: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Levels to run, e.g. C0,C1 (default all).")] = None,
    require: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Exit 0 only if no level up to this one fails (skipped/n.a. do not fail); "
        "default C1, or with --levels every level selected.")] = None,
    runtime: Annotated[str, typer.Option(help="docker or host.")] = "docker",
    python: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="The interpreter to verify (--runtime host).")] = None,
    repo: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="The repository (--runtime host; default the task's repo path).")] = None,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "-o", "--out", help="Where verify.json, verify.md, build.log go.")] = None,
    scanner: Annotated[str, typer.Option(help="C0 parser: ast or libcst.")] = "ast",
    progress: Annotated[str, typer.Option(
        help="The rebuild on the terminal: steps (each BuildKit step as it starts, with "
        "long steps' time), plain (every line, as docker's --progress plain) or quiet. "
        "build.log has every line either way.")] = "steps",
    allow_modified: Annotated[bool, typer.Option(
        "--allow-modified", help="Rebuild an artifact whose files differ from its "
        "manifest.json (said in the report).")] = False,
    wheelhouse: WheelhouseOpt = None,
    allow_base_mismatch: Annotated[bool, typer.Option(
        "--allow-base-mismatch", help="Rebuild even on a base image whose rootfs differs "
        "from the one manifest.json records.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="With --rebuild, build with no "
                                          "network (an artifact exported with --bundle).")] = False,
    scoring: Annotated[str, typer.Option(help="synth, or reb: also score C0/C5 as "
                                         "ResearchEnvBench does (docs/bench.md).")] = "synth",
    assets_cache: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="A REB task's assets cache (REB's benchmark_assets/cache).")] = None,
    assets_offline: Annotated[bool, typer.Option(
        "--assets-offline", help="Run a REB task's assets step without network.")] = False,
    ca_bundle: CaBundleOpt = None,
    artifacts: ArtifactsOpt = None,
    no_disk_check: NoDiskCheckOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run the verification pyramid (C0-C5) on a rebuilt artifact, a live image or a host env."""
    from synth.verify import command as v
    v.check_choices(runtime=runtime, scanner=scanner, progress=progress)
    opts = v.VerifyOptions(
        target=target, rebuild=rebuild, live=live, levels=v.parse_levels(levels),
        require=v.parse_require(require or "C1"), runtime=runtime,  # type: ignore[arg-type]
        levels_explicit=levels is not None, require_explicit=require is not None,
        python=python, repo=repo, out_dir=out, scanner=scanner,  # type: ignore[arg-type]
        progress=progress, allow_base_mismatch=allow_base_mismatch, offline=offline,
        allow_modified=allow_modified, assets_cache=assets_cache, assets_offline=assets_offline,
        scoring=v.parse_scoring(scoring))
    settings = settings_of(artifacts, ca_bundle, wheelhouse, no_disk_check)
    raise typer.Exit(_print_verify(_verified(opts, settings), json_out))


def _verified(opts: VerifyOptions, settings: Settings) -> VerifyOutcome:
    """The verification, then, after a rebuild, each task's images beyond its latest few
    pruned (SYNTH_KEEP_RUNS)."""
    from synth.verify import command as v

    engine = open_engine(required=False) if opts.runtime == "docker" else None
    outcome = v.verify(opts, settings, engine)
    if engine is not None and opts.rebuild:
        prune_older_runs(engine, settings)
    return outcome


def _print_verify(outcome: VerifyOutcome, json_out: bool) -> int:
    """The verify document (JSON), or its table and where the report is; the exit code."""
    from synth.verify.command import print_table

    if json_out:
        console.print_json({**outcome.document, "out_dir": str(outcome.out_dir)})
    else:
        print_table(outcome.verify_document)
        console.show(f"report: {outcome.out_dir / 'verify.md'}")
    return outcome.exit_code


@app.command()
def demo(
    task: Annotated[str, typer.Option(help="Bundled task to run.")] = "numpy-ext",
    agent_script: Annotated[str, typer.Option("--script", help="Its transcript under "
                                              "agents/.")] = "good.sh",
    ca_bundle: CaBundleOpt = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run a bundled task with its transcript, export, rebuild from scratch, verify."""
    from synth.cli.demo import DemoOptions, run_demo

    outcome = run_demo(DemoOptions(task=task, script=agent_script),
                       Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle),
                       open_engine())
    raise typer.Exit(_print_verify(outcome, json_out))
