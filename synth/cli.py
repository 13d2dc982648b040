"""The command line: each command builds one options object and calls one function."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Annotated, Optional

import typer
from rich.markup import escape

from synth import __version__, console
from synth.config import Settings
from synth.errors import SynthError, UsageError

app = typer.Typer(
    help="Audit an agent's setup of a research repo, distill it into a rebuildable artifact, "
    "and prove the artifact research-ready.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
base_app = typer.Typer(help="Base images made locally (debootstrap), for air-gapped sites.")
task_app = typer.Typer(help="Task files: tasks/<name>/task.toml.")
app.add_typer(base_app, name="base")
app.add_typer(task_app, name="task")

_state: dict[str, object] = {"debug": False}

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
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


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
) -> None:
    _state["debug"] = debug


@app.command()
def version() -> None:
    """Print synth's version."""
    typer.echo(__version__)


@app.command()
def doctor(json_out: JsonOpt = False, ca_bundle: CaBundleOpt = None) -> None:
    """Check the engine, BuildKit CLI, debootstrap, GPU runtime, base images and CA bundle."""
    from synth.doctor import run_checks

    checks = run_checks(Settings.load(ca_bundle=ca_bundle))
    if json_out:
        console.print_json({
            "ok": all(c.status != "fail" for c in checks),
            "checks": [c.to_json() for c in checks],
        })
    else:
        marks = {"ok": "[green]ok  [/]", "warn": "[yellow]warn[/]", "fail": "[red]FAIL[/]"}
        for c in checks:
            console.out.print(f"{marks[c.status]} {c.name:<28} {c.detail}")
            if c.fix and c.status != "ok":
                console.out.print(f"     [dim]fix: {c.fix}[/]")
    if any(c.status == "fail" for c in checks):
        raise typer.Exit(1)


@app.command()
def gc(
    images: Annotated[bool, typer.Option(help="Also remove live and rebuilt images "
                                         "(base images are kept).")] = False,
    force: Annotated[bool, typer.Option(help="Also remove containers of synth processes "
                                        "still running.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Remove containers (and temporary images) synth left behind."""
    from synth.engine.docker import DockerEngine

    removed = DockerEngine.connect().gc(images=images, force=force)
    if json_out:
        console.print_json({"removed": removed})
    else:
        for item in removed:
            console.out.print(f"removed {item}")
        console.out.print(f"{len(removed)} object(s) removed")


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
    force: Annotated[bool, typer.Option(help="Rebuild even if it exists.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Make a minimal Debian base image with debootstrap + docker import."""
    from synth.base_images import BaseRecipe, bootstrap, recipe_for
    from synth.engine.docker import DockerEngine

    known = recipe_for(tag, mirror)
    recipe = BaseRecipe(
        suite=suite,
        include=tuple(sorted(i for i in include.split(",") if i)) if include is not None
        else (known.include if known else ()),
        mirror=mirror or (known.mirror if known else BaseRecipe(suite).mirror),
    )
    image_id = bootstrap(DockerEngine.connect(), tag, recipe, force=force, say=console.say)
    if json_out:
        console.print_json({"image": tag, "id": image_id, "recipe": recipe.describe()})


@task_app.command("check")
def task_check(
    paths: Annotated[list[Path], typer.Argument(help="Task directories or task.toml files.")],
    json_out: JsonOpt = False,
) -> None:
    """Validate task files; errors name the file, the field and the line."""
    from synth.task import load_task

    results = []
    failed = False
    for p in paths:
        try:
            t = load_task(p)
            results.append({"path": str(p), "ok": True, "name": t.name})
        except SynthError as exc:
            failed = True
            results.append({"path": str(p), "ok": False, "error": exc.message})
    if json_out:
        console.print_json({"ok": not failed, "tasks": results})
    else:
        for r in results:
            if r["ok"]:
                console.out.print(f"[green]ok[/]   {r['path']} ({r['name']})")
            else:
                console.err.print(f"[red]fail[/] {r['error']}", markup=True)
    if failed:
        raise typer.Exit(SynthError.exit_code + 2)


runs_app = typer.Typer(help="Recorded agent sessions under <artifacts>/runs/.")
app.add_typer(runs_app, name="runs")


@app.command()
def run(
    task: Annotated[str, typer.Argument(help="A task directory or a task name under ./tasks.")],
    command: Annotated[Optional[list[str]], typer.Argument(  # noqa: UP045
        help="With --agent exec: the agent's command, after `--`.")] = None,
    agent: Annotated[str, typer.Option(help="replay, exec or shell.")] = "replay",
    script: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Replay: the setup script (one `bash -c` per top-level statement).")] = None,
    stop_on_error: Annotated[bool, typer.Option(help="Replay: stop at the first failure.")]
    = False,
    agent_mount: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Exec: HOST:CONTAINER mounted read-only (the agent's tooling).")] = None,
    agent_env: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        help="Exec: a variable passed from this environment; its value is masked as ***.")]
    = None,
    timeout: Annotated[float, typer.Option(help="Seconds before the agent is killed.")] = 3600,
    keep: Annotated[bool, typer.Option(help="Keep the session container.")] = False,
    trace_exec: Annotated[bool, typer.Option(
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
    from synth.session import RunOptions, run_session
    from synth.session.agents import make_agent
    from synth.task import load_task

    opts = RunOptions(
        task=load_task(task, tasks_root=Path("tasks")),
        agent=make_agent(agent, script=script, stop_on_error=stop_on_error,
                         command=command or (), mounts=agent_mount or (),
                         env_names=agent_env or ()),
        settings=Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle,
                               wheelhouse=wheelhouse),
        timeout=timeout, keep=keep, trace_exec=trace_exec,
    )
    result = run_session(opts, say=console.say)
    if json_out:
        console.print_json(result.to_json())
    if not result.ok:
        raise typer.Exit(130 if result.status == "interrupted" else 1)


@runs_app.command("list")
def runs_list(
    task: Annotated[Optional[str], typer.Option(help="Only this task's runs.")] = None,  # noqa: UP045
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List recorded runs, oldest first."""
    from synth.session.rundir import list_runs, summarize

    rows = [summarize(d) for d in list_runs(Settings.load(artifacts_dir=artifacts), task)]
    skipped = [r for r in rows if r["status"] == "unreadable"]
    rows = [r for r in rows if r["status"] != "unreadable"]
    for r in skipped:
        console.err.print(f"warning: skipped {r['run_dir']}: {r['error']}", markup=False,
                          highlight=False, soft_wrap=True)
    if json_out:
        console.print_json({"runs": rows, "skipped": skipped})
        return
    for r in rows:
        console.out.print(f"{r['task']}/{r['run_id']}  {r['status']:<11} {r.get('agent') or '-':<7}"
                          f"  violations={r.get('violations', 0)}  claims={r.get('claims')}",
                          markup=False, soft_wrap=True)


@runs_app.command("show")
def runs_show(
    run_ref: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="RUN", help="Run dir, run id, <task>/<run-id> or `latest` (default).")] = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Show one run: outcome, violations, claims, and what it installed."""
    from synth.session.rundir import describe_run, find_run, format_run

    info = describe_run(find_run(Settings.load(artifacts_dir=artifacts), run_ref))
    if json_out:
        console.print_json(info)
    else:
        console.out.print(format_run(info), markup=False, soft_wrap=True)


@app.command()
def diff(
    a: Annotated[str, typer.Argument(help="Run, artifact dir or image (image:REF).")],
    b: Annotated[str, typer.Argument(help="Run, artifact dir or image (image:REF).")],
    md: Annotated[bool, typer.Option("--md", help="Print markdown.")] = False,
    python: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="Interpreter to fingerprint in images (default: its venv, else python3).")] = None,
    fingerprint: Annotated[bool, typer.Option(
        help="Also fingerprint runs' live images (native .so and file hashes).")] = False,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Compare two runs, artifacts or images; exit 0 equal, 1 differ, 2 error."""
    from synth.diff_load import DiffOptions, diff_command

    raise typer.Exit(diff_command(DiffOptions(
        a=a, b=b, json=json_out, markdown=md, python=python, fingerprint=fingerprint,
        artifacts_dir=artifacts)))


@app.command("export")
def export_cmd(
    fmt: Annotated[str, typer.Argument(metavar="[FORMAT]",
                                       help="Artifact format: Dockerfile.")] = "Dockerfile",
    run_ref: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--run", help="Run dir, run id, <task>/<run-id> or latest (default).")] = None,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "-o", "--out", help="Artifact folder (default <run>/export).")] = None,
    include: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
        "--include", help="Container path to carry into the artifact (repeatable).")] = None,
    plan_only: Annotated[bool, typer.Option("--plan", help="Print the BuildPlan as JSON "
                                            "and write nothing.")] = False,
    locker: Annotated[str, typer.Option(help="uv or pip-tools.")] = "uv",
    artifacts: ArtifactsOpt = None,
    ca_bundle: CaBundleOpt = None,
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder the run used (env SYNTH_WHEELHOUSE).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Distill a run into a rebuildable artifact (Dockerfile, locks, manifest, report)."""
    from synth.export import FORMATS, export_run
    from synth.session.rundir import find_run

    if fmt not in FORMATS:
        raise UsageError(f"Unknown export format {fmt!r}.",
                         hint=f"Supported: {', '.join(FORMATS)}.")
    settings = Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    run_dir = find_run(settings, run_ref)
    if plan_only:
        from synth.distill.load import load_run
        from synth.distill.plan import distill
        from synth.render import plan_json

        sys.stdout.write(plan_json(distill(load_run(run_dir), include=include or ())))
        return
    result = export_run(run_dir, settings, out_dir=out, include=include or (), locker=locker)
    if json_out:
        console.print_json({"artifact_dir": str(result.artifact_dir), "run_dir": str(run_dir),
                            "warnings": list(result.warnings)})
        return
    for w in result.warnings:
        console.err.print(f"[yellow]warning:[/] {w}", markup=True, highlight=False)
    console.say(f"artifact: {result.artifact_dir}")


@app.command("verify")
def verify_cmd(
    target: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="Run (dir, id, latest) or artifact dir; with --runtime host also a task.")] = None,
    rebuild: Annotated[bool, typer.Option(help="Build the artifact from scratch (no cache) "
                                          "and verify the new image.")] = False,
    live: Annotated[bool, typer.Option(help="Verify the run's live image (the default for a "
                                       "run without --rebuild; with it, side by side).")] = False,
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
    scanner: Annotated[str, typer.Option(help="C0 parser: ast (default) or libcst.")] = "ast",
    wheelhouse: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Wheel folder the artifact's lock needs to rebuild (env SYNTH_WHEELHOUSE).")] = None,
    ca_bundle: CaBundleOpt = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Run the verification pyramid (C0-C5) on a rebuilt artifact, a live image or a host env."""
    from synth import verify_cmd as v

    if runtime not in ("docker", "host") or scanner not in ("ast", "libcst"):
        raise UsageError("--runtime is docker or host; --scanner is ast or libcst.")
    opts = v.VerifyOptions(
        target=target, rebuild=rebuild, live=live, levels=v.parse_levels(levels),
        require=v.parse_require(require), runtime=runtime,  # type: ignore[arg-type]
        python=python, repo=repo, out_dir=out, scanner=scanner,  # type: ignore[arg-type]
    )
    outcome = v.verify(opts, Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle,
                                           wheelhouse=wheelhouse))
    if json_out:
        console.print_json({**outcome.document, "out_dir": str(outcome.out_dir)})
    else:
        v.print_table(outcome.document)
        console.out.print(f"report: {outcome.out_dir / 'verify.md'}", markup=False)
    raise typer.Exit(outcome.exit_code)


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
    from synth.demo import DemoOptions, run_demo
    from synth.verify_cmd import print_table

    outcome = run_demo(DemoOptions(task=task, script=agent_script),
                       Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle))
    if json_out:
        console.print_json({**outcome.document, "out_dir": str(outcome.out_dir)})
    else:
        print_table(outcome.document)
        console.out.print(f"report: {outcome.out_dir / 'verify.md'}", markup=False)
    raise typer.Exit(outcome.exit_code)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Let `finally` blocks remove containers, exactly as for Ctrl-C.
    raise KeyboardInterrupt


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except SynthError as exc:
        if _state["debug"]:
            raise
        # Messages quote files and agents' text: escaped, never read as markup.
        console.err.print(f"[bold red]error:[/] {escape(exc.message)}", markup=True,
                          highlight=False, emoji=False)
        if exc.hint:
            console.err.print(f"[bold]hint:[/] {escape(exc.hint)}", markup=True,
                              highlight=False, emoji=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console.err.print("interrupted; cleaned up.", markup=False)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(130)
    except Exception as exc:
        # Usage errors of the (vendored) click surface here without standalone mode.
        show = getattr(exc, "show", None)
        if callable(show) and isinstance(getattr(exc, "exit_code", None), int):
            show()
            sys.exit(exc.exit_code)  # type: ignore[attr-defined]
        raise
