"""``synth export``: a run distilled into an artifact folder."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth.cli.app import ArtifactsOpt, CaBundleOpt, JsonOpt, app, open_engine, settings_of
from synth.config import Settings
from synth.distill.leave_out import parse_parts
from synth.errors import (
    UsageError,
)
from synth.ui import console

if TYPE_CHECKING:  # the commands import their modules when run: `synth --help` stays fast
    from synth.export.artifact import ExportOptions, ExportResult
    from synth.verify.push import Pushed

#: How the published artifact is cited (synth.export.metadata) and where it is pushed.
AuthorOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--author", metavar="'GIVEN FAMILY <EMAIL>'", help="An author for CITATION.cff, "
    ".zenodo.json and the RO-Crate (repeatable; default: the authors of task.toml's "
    "citation table, else git config --global user.name).")]
LicenseOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--license", metavar="SPDX-ID", help="The licence the artifact is published under "
    "(an SPDX id; default: the license of task.toml's citation table).")]
ReleaseOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--release", metavar="VERSION", help="The artifact's version (default: the run id).")]
RepositoryOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--repository-url", metavar="URL", help="Where the research code lives (default: "
    "the repository of task.toml's citation table, or its repo.url).")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="Let -o replace an artifact synth exported there before (never "
    "anything else).")]
AllowIncompleteOpt = Annotated[bool, typer.Option(
    "--allow-incomplete", help="Export a run that did not succeed or whose audit is "
    "unverified; the report says why at its top.")]
WithoutOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--without", metavar="KIND:NAME", help="Leave a part of the plan out: python:NAME, "
    "apt:NAME, env:NAME or prefix:PATH (a whole environment other than the primary one, "
    "such as a tool's own venv; repeatable; needs -o; the report names it).")]
PushOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--push", metavar="REGISTRY", help="Also push the base and the built image to REGISTRY "
    "(a host, host:port or host/path), printing their digests.")]


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
    force: ForceOpt = False,
    allow_incomplete: AllowIncompleteOpt = False,
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
    without: WithoutOpt = None,
    author: AuthorOpt = None,
    license_id: LicenseOpt = None,
    release: ReleaseOpt = None,
    repository_url: RepositoryOpt = None,
    push: PushOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Distill a run into a rebuildable artifact (Dockerfile, locks, manifest, report)."""
    from synth.export.artifact import ExportOptions, find_export_run, plan_json_of
    from synth.export.metadata import CitationOptions
    _fmt, run_ref = _export_target(run_arg, fmt, run_opt)
    settings = settings_of(artifacts, ca_bundle, wheelhouse, no_disk_check=False)
    opts = ExportOptions(
        find_export_run(settings, run_ref), out_dir=out, include=tuple(include or ()),
        locker=locker, force=force, allow_incomplete=allow_incomplete,
        allow_missing=allow_missing, apt_snapshot=apt_snapshot,
        apt_snapshot_only=apt_snapshot_only, archive=archive, bundle=bundle,
        citation=CitationOptions(tuple(author or ()), license_id, release, repository_url),
        without=parse_parts(without))
    if plan_only:  # nothing is asked of the engine: docker-py is not even loaded
        console.write_json_text(plan_json_of(opts.run_dir, opts.include))
        return
    result, pushed = _export_and_push(opts, settings, push)
    _print_export(result, opts.run_dir, json_out, pushed)


def _export_and_push(opts: ExportOptions, settings: Settings,
                     registry: str | None) -> tuple[ExportResult, Pushed | None]:
    """The export on the command's one engine (none needed where it asks nothing of the
    live image), then ``--push REGISTRY``: the base and the built image, in the registry."""
    from synth.export.artifact import export_run

    engine = open_engine(required=False)
    result = export_run(opts, settings, engine)
    if registry is None:
        return result, None
    from synth.verify.push import push_artifact

    return result, push_artifact(result.artifact_dir, registry, settings, engine, console.say)


def _print_export(result: ExportResult, run_dir: Path, json_out: bool,
                  pushed: Pushed | None = None) -> None:
    if json_out:
        console.print_json({"artifact_dir": str(result.artifact_dir), "run_dir": str(run_dir),
                            "warnings": list(result.warnings),
                            **({"bundle": result.bundle} if result.bundle else {}),
                            **({"archive": str(result.archive),
                                "archive_sha256": result.archive_sha256}
                               if result.archive else {}),
                            **({"pushed": pushed.to_json()} if pushed else {})})
        return
    for w in result.warnings:
        console.warn(w)
    console.say(f"artifact: {result.artifact_dir}")
    if result.bundle:
        from synth.export.bundle import describe

        console.say(describe(result.bundle))
    lines = [f"archive: {result.archive}", f"sha256: {result.archive_sha256}"] \
        if result.archive else []
    for line in [*lines, *(pushed.lines() if pushed else [])]:
        console.say(line)


def _export_target(run_arg: str | None, fmt: str, run_opt: str | None) -> tuple[str, str | None]:
    """(format, run) from `export RUN [--format F]` or the older `export FORMAT [--run RUN]`."""
    from synth.export.artifact import FORMATS

    if run_arg is not None and run_arg in FORMATS:
        fmt, run_arg = run_arg, None
    if run_arg is not None and run_opt is not None:
        raise UsageError(f"Two runs named: {run_arg} and --run {run_opt}.",
                         hint="Name the run once: `synth export RUN`.", option="--run")
    if fmt not in FORMATS:
        raise UsageError(f"Unknown export format {fmt!r}.",
                         hint=f"Supported: {', '.join(FORMATS)}.", option="--format")
    return fmt, run_arg if run_arg is not None else run_opt
