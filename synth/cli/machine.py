"""This machine: ``synth doctor``, ``synth gc`` and ``synth base bootstrap``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth.cli.app import ArtifactsOpt, CaBundleOpt, JsonOpt, app, base_app, open_engine
from synth.config import Settings
from synth.errors import (
    EXIT_NEGATIVE,
)
from synth.ui import console

if TYPE_CHECKING:  # the commands import their modules when run: `synth --help` stays fast
    from synth.engine.doctor import DoctorReport


@app.command()
def doctor(json_out: JsonOpt = False, ca_bundle: CaBundleOpt = None) -> None:
    """Check the engine, BuildKit CLI, debootstrap, GPU runtime, base images and CA bundle."""
    from synth.engine.doctor import ENGINE_TIMEOUT, diagnose

    settings = Settings.load(ca_bundle=ca_bundle)
    report = diagnose(settings, open_engine(ENGINE_TIMEOUT, required=False))
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
    keep_runs: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--keep-runs", min=0, help="Also remove the live and rebuilt images older than each "
        "task's latest N (recorded in their runs).")] = None,
    artifacts: ArtifactsOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Remove containers, images and build cache synth left behind for this artifacts folder."""
    from synth.record.rundir import mark_pruned

    settings = Settings.load(artifacts_dir=artifacts)
    scope = None if all_folders else str(settings.artifacts_dir.resolve())
    removed = open_engine().gc(images=images, force=force, scope=scope, dry_run=dry_run,
                               keep_runs=keep_runs)
    marked = [] if dry_run else mark_pruned(settings, removed)
    if json_out:
        console.print_json({"removed": removed, "runs_marked": [str(p) for p in marked]})
    else:
        verb = "would remove" if dry_run else "removed"
        for item in removed:
            console.show(f"{verb} {item}")
        console.show(f"{len(removed)} object(s) {verb}")


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

    recipe = recipe_from_options(tag, suite, include, mirror, tool, source_date_epoch)
    image_id = bootstrap(open_engine(), tag, recipe, force=force, say=console.say)
    if json_out:
        console.print_json({"image": tag, "id": image_id, "recipe": recipe.describe()})
