"""Task files: ``synth task check`` and ``synth task import-reb``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth.errors import (
    TaskError,
)
from synth.ui import console

if TYPE_CHECKING:  # the commands import their modules when run: `synth --help` stays fast
    from synth.formats.task import TaskCheckReport
from synth.cli.app import JsonOpt, task_app


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
    base_image: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="The tasks' base image (default synth/research:bookworm, the tools REB's "
        "agent image offers).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """One synth task per ResearchEnvBench repository (url + commit, REB's probes)."""
    from synth.plugins.reb.importer import import_reb, parse_mirrors, report_import

    outcome = import_reb(reb_dir, out, repo or None, parse_mirrors(mirror or []),
                         **({"base_image": base_image} if base_image else {}))
    if json_out:
        console.print_json({"tasks": [str(p) for p in outcome.tasks],
                            "incomplete_mirrors": outcome.problems()})
    for p in outcome.tasks:
        console.say(f"task: {p}")
    report_import(outcome)
