"""The command line: each command builds one options object and calls one function."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth import __version__
from synth.config import Settings
from synth.errors import (
    EXIT_AGENT_FAILED,
    EXIT_AGENT_TIMEOUT,
    EXIT_INTERRUPTED,
    EXIT_NEGATIVE,
    EXIT_USAGE,
    RunError,
    SynthError,
    TaskError,
    UsageError,
    exit_codes,
)
from synth.ui import console

if TYPE_CHECKING:  # the commands import their modules when run: `synth --help` stays fast
    from synth.engine.doctor import DoctorReport
    from synth.export.artifact import ExportResult
    from synth.formats.task import TaskCheckReport
    from synth.verify.command import VerifyOutcome


def _epilog() -> str:
    from synth.errors import error_kinds

    outcomes = ". ".join(f"{code} = {meaning}" for code, meaning in exit_codes()
                         if code < SynthError.exit_code or code == EXIT_INTERRUPTED)
    kinds = ", ".join(f"{k.exit_code} = {k.__name__}" for k in error_kinds())
    return ("--json and --debug are accepted anywhere on the command line.\n\n"
            f"Exit codes: {outcomes}.\n\nErrors (README.md, synth/errors.py): {kinds}.")


app = typer.Typer(
    help="Audit an agent's setup of a research repo, distill it into a rebuildable artifact, "
    "and prove the artifact research-ready.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    epilog=_epilog(),
)
base_app = typer.Typer(help="Base images made locally (debootstrap), for air-gapped sites.")
task_app = typer.Typer(help="Task files: tasks/<name>/task.toml.")
app.add_typer(base_app, name="base")
app.add_typer(task_app, name="task")

JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print machine-readable JSON on stdout (errors too).")]
CaBundleOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option("--ca-bundle", help="CA bundle for a TLS-intercepting proxy "
                 "(env SYNTH_CA_BUNDLE). Mounted at run time, a BuildKit secret at build "
                 "time; never stored in an image."),
]
ArtifactsOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--artifacts", help="Where runs and exports go (env SYNTH_ARTIFACTS).",
                 envvar="SYNTH_ARTIFACTS"),
]


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    # main() takes --debug and --json off the command line wherever they are; these two
    # options only document them.
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print machine-readable JSON on stdout (errors too).")] = False,
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print synth's version and exit.")] = False,
) -> None:
    """The options every command takes."""


@app.command()
def version(json_out: JsonOpt = False) -> None:
    """Print synth's version."""
    if json_out:
        console.print_json({"version": __version__, "python": sys.version.split()[0]})
    else:
        typer.echo(__version__)


@app.command()
def doctor(json_out: JsonOpt = False, ca_bundle: CaBundleOpt = None) -> None:
    """Check the engine, BuildKit CLI, debootstrap, GPU runtime, base images and CA bundle."""
    from synth.engine.doctor import diagnose

    report = diagnose(Settings.load(ca_bundle=ca_bundle))
    if json_out:
        console.print_json(report.to_json())
    else:
        _print_checks(report)
    if not report.ok:
        raise typer.Exit(EXIT_NEGATIVE)


def _print_checks(report: DoctorReport) -> None:
    marks = {"ok": "[green]ok  [/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}
    for c in report.checks:
        console.out.print(f"{marks[c.status]} {console.literal(c.name):<28} "
                          f"{console.literal(c.detail)}", soft_wrap=True)
        if c.fix and c.status != "ok":
            console.out.print(f"     [dim]fix: {console.literal(c.fix)}[/]", soft_wrap=True)


@app.command()
def gc(
    images: Annotated[bool, typer.Option("--images", help="Also remove live and rebuilt "
                                         "images (base images are kept).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Also remove containers of synth "
                                        "processes still running.")] = False,
    all_folders: Annotated[bool, typer.Option(
        "--all", help="Every artifacts folder's objects, not only this one's.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List, remove nothing.")] = False,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remove containers, images and build cache synth left behind for this artifacts folder."""
    from synth.engine.docker import DockerEngine

    scope = None if all_folders else str(Settings.load(artifacts_dir=artifacts)
                                         .artifacts_dir.resolve())
    removed = DockerEngine.connect().gc(images=images, force=force, scope=scope,
                                        dry_run=dry_run)
    if json_out:
        console.print_json({"removed": removed})
    else:
        verb = "would remove" if dry_run else "removed"
        for item in removed:
            console.out.print(f"{verb} {item}", markup=False)
        console.out.print(f"{len(removed)} object(s) {verb}", markup=False)


@base_app.command("bootstrap")
def base_bootstrap(
    suite: Annotated[str, typer.Option(help="Debian suite.")] = "bookworm",
    tag: Annotated[str, typer.Option(help="Image tag to create.")] = "synth/debian:bookworm",
    include: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="Comma-separated extra packages (default: the recipe of a known "
                     "synth/… tag)."),
    ] = None,
    mirror: Annotated[Optional[str], typer.Option(help="Debian mirror URL.")] = None,  # noqa: UP045
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if it exists.")] = False,
    tool: Annotated[str, typer.Option(help="debootstrap, or mmdebstrap (a reproducible "
                                      "rootfs with --source-date-epoch).")] = "debootstrap",
    source_date_epoch: Annotated[Optional[int], typer.Option(  # noqa: UP045
        help="mmdebstrap: every timestamp in the rootfs (use with a snapshot --mirror).")
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Make a minimal Debian base image with debootstrap + docker import."""
    from synth.engine.base_images import bootstrap, recipe_from_options
    from synth.engine.docker import DockerEngine

    recipe = recipe_from_options(tag, suite, include, mirror, tool, source_date_epoch)
    image_id = bootstrap(DockerEngine.connect(), tag, recipe, force=force, say=console.say)
    if json_out:
        console.print_json({"image": tag, "id": image_id, "recipe": recipe.describe()})


@task_app.command("check")
def task_check(
    paths: Annotated[list[Path], typer.Argument(
        metavar="PATH",
        help="Task directories or task.toml files (a glob's other files are skipped).")],
    json_out: JsonOpt = False,
) -> None:
    """Validate task files; errors name the file, the field and the line."""
    from synth.formats.task import check_tasks

    report = check_tasks(paths)
    if json_out:
        console.print_json(report.to_json())
    else:
        _print_task_checks(report)
    if not report.ok:
        raise typer.Exit(TaskError.exit_code)


def _print_task_checks(report: TaskCheckReport) -> None:
    for r in report.results:
        if r.ok is None:
            console.say(f"note: skipped {r.path}: {r.skipped}")
        elif r.ok:
            console.out.print(f"[green]ok[/]   {console.literal(r.path)} "
                              f"({console.literal(r.name)})", soft_wrap=True)
        else:
            console.err.print(f"[red]fail[/] {console.literal(r.error)}", soft_wrap=True)


@task_app.command("import-reb")
def task_import_reb(
    reb_dir: Annotated[Path, typer.Argument(help="A ResearchEnvBench checkout.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Folder for the task folders.")],
    repo: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--repo", help="Only this repo_id (repeatable).")] = None,
    mirror: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--mirror", help="URL=PATH: a local git mirror of a repository URL.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """One synth task per ResearchEnvBench repository (url + commit, REB's probes)."""
    from synth.plugins.reb.importer import import_reb, parse_mirrors

    written = import_reb(reb_dir, out, repo or None, parse_mirrors(mirror or []))
    if json_out:
        console.print_json({"tasks": [str(p) for p in written]})
    for p in written:
        console.say(f"task: {p}")


runs_app = typer.Typer(help="Recorded agent sessions under <artifacts>/runs/.")
app.add_typer(runs_app, name="runs")


@app.command()
def run(
    task: Annotated[str, typer.Argument(
        metavar="TASK", help="A task directory or a task name under ./tasks.")],
    command: Annotated[Optional[list[str]], typer.Argument(  # noqa: UP045
        metavar="COMMAND", help="With --agent exec: the agent's command, after `--`.")] = None,
    agent: Annotated[str, typer.Option(help="replay, exec or shell.")] = "replay",
    script: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Replay: the setup script (one `bash -c` per top-level statement).")] = None,
    stop_on_error: Annotated[bool, typer.Option(
        "--stop-on-error", help="Replay: stop at the first failure.")] = False,
    agent_mount: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Exec: HOST:CONTAINER mounted read-only (the agent's tooling).")] = None,
    agent_env: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Exec: a variable passed from this environment; its value is masked as ***.")]
    = None,
    timeout: Annotated[float, typer.Option(help="Seconds before the agent is killed.")] = 3600,
    quiet: Annotated[bool, typer.Option(
        "--quiet", help="Exec: do not stream the agent's output to the terminal "
        "(logs/agent.log has it either way).")] = False,
    keep: Annotated[bool, typer.Option("--keep", help="Keep the session container.")] = False,
    trace_exec: Annotated[bool, typer.Option(
        "--trace-exec",
        help="Also record every exec with the host's strace (mounted, never installed).")]
    = False,
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder mounted read-only at /synth/wheelhouse (env SYNTH_WHEELHOUSE).")]
    = None,
    ca_bundle: CaBundleOpt = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run an agent in an audited session container and record what it did."""
    from synth.formats.task import load_task
    from synth.record import RunOptions, run_session
    from synth.record.agents import make_agent

    opts = RunOptions(
        task=load_task(task, tasks_root=Path("tasks")),
        agent=make_agent(agent, script=script, stop_on_error=stop_on_error,
                         command=command or (), mounts=agent_mount or (),
                         env_names=agent_env or (), quiet=quiet),
        settings=Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle,
                               wheelhouse=wheelhouse),
        timeout=timeout, keep=keep, trace_exec=trace_exec,
    )
    result = run_session(opts, say=console.say)
    if json_out:
        console.print_json(result.to_json())
    if not result.ok:
        raise typer.Exit(_RUN_EXIT.get(result.status, RunError.exit_code))


#: `synth run`'s exit code per run status other than succeeded (errors/exit codes).
_RUN_EXIT = {"failed": EXIT_AGENT_FAILED, "timeout": EXIT_AGENT_TIMEOUT,
             "interrupted": EXIT_INTERRUPTED, "error": RunError.exit_code}


@runs_app.command("list")
def runs_list(
    task: Annotated[Optional[str], typer.Option(help="Only this task's runs.")] = None,  # noqa: UP045
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List recorded runs, oldest first: agent, claims after C5, verify verdicts, image sizes."""
    from synth.engine.docker import image_sizes
    from synth.record import runs_view

    listing = runs_view.list_runs_view(Settings.load(artifacts_dir=artifacts), task,
                                       warn=console.warn, sizes=image_sizes)
    if json_out:
        console.print_json(listing.to_json())
        return
    for r in listing.rows:
        console.out.print(runs_view.list_line(r), markup=False, soft_wrap=True)


@runs_app.command("show")
def runs_show(
    run_ref: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="RUN", help="Run dir, run id, <task>/<run-id> or `latest` (default).")] = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show one run: outcome, violations, claims, and what it installed."""
    from synth.engine.docker import image_sizes
    from synth.record import runs_view
    from synth.record.rundir import format_run

    shown = runs_view.show_run_view(Settings.load(artifacts_dir=artifacts), run_ref,
                                    sizes=image_sizes)
    if json_out:
        console.print_json(shown.to_json())
    else:
        console.out.print("\n".join([format_run(shown.info), *runs_view.show_lines(shown.row)]),
                          markup=False, soft_wrap=True)


@app.command()
def diff(
    a: Annotated[str, typer.Argument(metavar="A", help="Run, artifact dir or image (image:REF).")],
    b: Annotated[str, typer.Argument(metavar="B", help="Run, artifact dir or image (image:REF).")],
    md: Annotated[bool, typer.Option("--md", help="Print markdown.")] = False,
    python: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Interpreter to fingerprint in images (default: its venv, else python3).")] = None,
    fingerprint: Annotated[bool, typer.Option(
        "--fingerprint",
        help="Also fingerprint runs' live images (native .so and file hashes).")] = False,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Compare two runs, artifacts or images; exit 0 equal, 1 differ, 2 error."""
    from synth.compare.load import DiffOptions, diff_command
    from synth.engine.fingerprint import ImageProbe

    raise typer.Exit(diff_command(DiffOptions(
        a=a, b=b, json=json_out, markdown=md, python=python, fingerprint=fingerprint,
        artifacts_dir=artifacts), connect=ImageProbe.connect))


@app.command("export")
def export_cmd(
    run_arg: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="RUN", help="Run dir, run id, <task>/<run-id> or `latest` (default).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="Artifact format.")] = "Dockerfile",
    run_opt: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--run", help="The run, as an option (the older form `synth export Dockerfile "
        "--run RUN`).")] = None,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "-o", "--out", help="Artifact folder (default <run>/export).")] = None,
    include: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--include", help="Container path to carry into the artifact (repeatable).")] = None,
    plan_only: Annotated[bool, typer.Option("--plan", help="Print plan.json "
                                            "and write nothing.")] = False,
    locker: Annotated[str, typer.Option(help="uv or pip-tools.")] = "uv",
    force: Annotated[bool, typer.Option(
        "--force", help="Let -o replace an artifact synth exported there before (never "
        "anything else).")] = False,
    allow_incomplete: Annotated[bool, typer.Option(
        "--allow-incomplete", help="Export a run that did not succeed or whose audit is "
        "unverified; the report says why at its top.")] = False,
    allow_missing: Annotated[bool, typer.Option("--allow-missing", help="Export even if the artifact leaves part of the final state out; the report says what at its top.")] = False,  # noqa: E501
    artifacts: ArtifactsOpt = None,
    ca_bundle: CaBundleOpt = None,
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder the run used (env SYNTH_WHEELHOUSE).")] = None,
    apt_snapshot: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--apt-snapshot", metavar="URL-TEMPLATE",
        help="Snapshot archive for .debs the mirror dropped; {timestamp} = the run's end, "
        "{archive} = debian or debian-security (default "
        "https://snapshot.debian.org/archive/{archive}/{timestamp}/).")] = None,
    apt_snapshot_only: Annotated[bool, typer.Option(
        "--apt-snapshot-only", help="Fetch .debs from the snapshot archive only.")] = False,
    archive: Annotated[bool, typer.Option(
        "--archive", help="Also write <task>-<run-id>.tar.gz (deterministic) beside the "
        "artifact, with an RO-Crate and a CycloneDX SBOM inside; print its sha256.")] = False,
    bundle: Annotated[bool, typer.Option("--bundle", help="Put every .deb, wheel and "
                                         "download under vendor/: it builds offline.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Distill a run into a rebuildable artifact (Dockerfile, locks, manifest, report)."""
    from synth.export.artifact import export_run, find_export_run, plan_json_of

    fmt, run_ref = _export_target(run_arg, fmt, run_opt)
    settings = Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    run_dir = find_export_run(settings, run_ref)
    if plan_only:
        sys.stdout.write(plan_json_of(run_dir, include or ()))
        return
    result = export_run(run_dir, settings, out_dir=out, include=include or (), locker=locker,
                        force=force, allow_incomplete=allow_incomplete, allow_missing=allow_missing,
                        apt_snapshot=apt_snapshot, apt_snapshot_only=apt_snapshot_only,
                        archive=archive, bundle=bundle)
    _print_export(result, run_dir, json_out)


def _print_export(result: ExportResult, run_dir: Path, json_out: bool) -> None:
    if json_out:
        console.print_json({"artifact_dir": str(result.artifact_dir), "run_dir": str(run_dir),
                            "warnings": list(result.warnings),
                            **({"bundle": result.bundle} if result.bundle else {}),
                            **({"archive": str(result.archive),
                                "archive_sha256": result.archive_sha256}
                               if result.archive else {})})
        return
    for w in result.warnings:
        console.warn(w)
    console.say(f"artifact: {result.artifact_dir}")
    if result.bundle:
        from synth.export.bundle import describe

        console.say(describe(result.bundle))
    if result.archive:
        for line in (f"archive: {result.archive}", f"sha256: {result.archive_sha256}"):
            console.err.print(line, markup=False, highlight=False, soft_wrap=True)


def _export_target(run_arg: str | None, fmt: str, run_opt: str | None) -> tuple[str, str | None]:
    """(format, run) from `export RUN [--format F]` or the older `export FORMAT [--run RUN]`."""
    from synth.export.artifact import FORMATS

    if run_arg is not None and run_arg in FORMATS:
        fmt, run_arg = run_arg, None
    if run_arg is not None and run_opt is not None:
        raise UsageError(f"Two runs named: {run_arg} and --run {run_opt}.",
                         hint="Name the run once: `synth export RUN`.")
    if fmt not in FORMATS:
        raise UsageError(f"Unknown export format {fmt!r}.",
                         hint=f"Supported: {', '.join(FORMATS)}.")
    return fmt, run_arg if run_arg is not None else run_opt


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
    require: Annotated[str, typer.Option(help="Exit 0 only if no level up to this one "
                                         "fails (skipped/n.a. do not fail).")] = "C1",
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
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder the artifact's lock needs to rebuild (env SYNTH_WHEELHOUSE).")] = None,
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
    json_out: JsonOpt = False,
) -> None:
    """Run the verification pyramid (C0-C5) on a rebuilt artifact, a live image or a host env."""
    from synth.verify import command as v
    v.check_choices(runtime=runtime, scanner=scanner, progress=progress)
    opts = v.VerifyOptions(
        target=target, rebuild=rebuild, live=live, levels=v.parse_levels(levels),
        require=v.parse_require(require), runtime=runtime,  # type: ignore[arg-type]
        python=python, repo=repo, out_dir=out, scanner=scanner,  # type: ignore[arg-type]
        progress=progress, allow_base_mismatch=allow_base_mismatch, offline=offline,
        allow_modified=allow_modified, assets_cache=assets_cache, assets_offline=assets_offline,
        scoring=v.parse_scoring(scoring))
    outcome = v.verify(opts, Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle,
                                           wheelhouse=wheelhouse))
    raise typer.Exit(_print_verify(outcome, json_out))


def _print_verify(outcome: VerifyOutcome, json_out: bool) -> int:
    """The verify document (JSON), or its table and where the report is; the exit code."""
    from synth.verify.command import print_table

    if json_out:
        console.print_json({**outcome.document, "out_dir": str(outcome.out_dir)})
    else:
        print_table(outcome.verify_document)
        console.out.print(f"report: {outcome.out_dir / 'verify.md'}", markup=False)
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
                       Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle))
    raise typer.Exit(_print_verify(outcome, json_out))


@app.command()
def bench(
    tasks: Annotated[list[Path], typer.Argument(help="Task directories (or task.toml files).")],
    agent: Annotated[list[str], typer.Option(
        help="A transcript name (good: agents/good.sh of each task) or NAME=exec:COMMAND; "
        "repeatable.")],
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
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder mounted in sessions and builds (env SYNTH_WHEELHOUSE).")] = None,
    ca_bundle: CaBundleOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run tasks x agents x repeats: run, export, rebuild, verify; summary and HTML report."""
    from synth.bench.matrix import AgentSpec
    from synth.bench.run import BenchOptions, run_bench

    outcome = run_bench(BenchOptions(
        tasks=tasks, agents=[AgentSpec.parse(a) for a in agent], out_dir=out, repeats=repeats,
        executor=executor, jobs=jobs, address=address, timeout=timeout,
        keep_images=keep_images), Settings.load(ca_bundle=ca_bundle, wheelhouse=wheelhouse),
        say=console.say)
    if json_out:
        console.print_json({"results_dir": str(outcome.results_dir), "ran": outcome.ran,
                            "skipped": outcome.skipped, "summary": outcome.summary})
    raise typer.Exit(1 if outcome.summary["crashed"] else 0)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Let `finally` blocks remove containers, exactly as for Ctrl-C.
    raise KeyboardInterrupt


def _global_flags(argv: list[str]) -> list[str]:
    """Take --debug and --json from anywhere before `--`: --debug is remembered, --json moves
    to the end, where the (sub)command that is run takes it. Sets console.mode."""
    cut = argv.index("--") if "--" in argv else len(argv)
    head, tail = argv[:cut], argv[cut:]
    console.mode["debug"] = "--debug" in head
    console.mode["json"] = "--json" in head
    head = [a for a in head if a not in ("--debug", "--json")]
    console.mode["command"] = _command_path(head)
    return head + (["--json"] if console.mode["json"] else []) + tail


def _command_path(args: list[str]) -> str:
    """The (sub)command the words of the command line name, e.g. `runs list`."""
    # Tests may stand the click command typer builds in for the app (built once).
    cmd: object = typer.main.get_command(app) if isinstance(app, typer.Typer) else app
    words: list[str] = []
    for arg in args:
        if arg.startswith("-"):
            continue
        sub = getattr(cmd, "commands", {}).get(arg)
        if sub is None:
            break
        words.append(arg)
        cmd = sub
    return " ".join(words)


def _plain_help() -> None:
    """Typer's help shows a type for every option (`--rebuild <bool>`): a flag has none.
    Its usage line writes a required argument `{TASK}`: the convention is `TASK`."""
    from typer.core import TyperArgument, TyperOption

    original = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else original(self, ctx)

    def usage_name(self: TyperArgument) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    setattr(TyperOption, "display_type_rich", display_type_rich)  # noqa: B010
    if hasattr(TyperArgument, "_usage_display_name"):
        setattr(TyperArgument, "_usage_display_name", usage_name)  # noqa: B010


_plain_help()


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    argv = _global_flags(sys.argv[1:])
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = app(args=argv, standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except SynthError as exc:
        if console.mode["debug"]:
            raise
        console.print_error(code=exc.exit_code, kind=type(exc).__name__, message=exc.message,
                            hint=exc.hint)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console.err.print("interrupted; cleaned up.", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        # Usage errors of the (vendored) click surface here without standalone mode.
        show = getattr(exc, "show", None)
        code = getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            if console.mode["json"] and code == EXIT_USAGE:
                console.print_error(code=code, kind="CommandLineError",
                                    message=str(getattr(exc, "message", exc)),
                                    hint="`synth --help` lists the commands and options.")
            else:
                show()
            sys.exit(code)
        raise
