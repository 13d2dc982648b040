"""``synth minimize``: the smallest artifact that still passes (synth.verify.minimize)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from synth.cli.app import ArtifactsOpt, CaBundleOpt, JsonOpt, app, open_engine, settings_of
from synth.ui import console

#: ``--budget``'s default (synth.verify.minimize.DEFAULT_BUDGET, which a test holds equal).
DEFAULT_BUDGET = 16


@app.command()
def minimize(
    run_ref: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        metavar="RUN", help="Run dir, run id, <task>/<run-id> or `latest` (default).")] = None,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "-o", "--out", help="Folder for the trials, the report and the minimized artifact "
        "(default <run>/minimize; a second run there resumes).")] = None,
    budget: Annotated[int, typer.Option(
        help="Rebuilds this invocation may spend (the original's first).")] = DEFAULT_BUDGET,
    tooling: Annotated[bool, typer.Option(
        "--tooling", help="Also try the environments' own tooling: pip, setuptools, wheel "
        "and the variables that activate them (PATH, VIRTUAL_ENV).")] = False,
    artifacts: ArtifactsOpt = None,
    ca_bundle: CaBundleOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Find what no passing level needs and write a minimized artifact beside the original.

    Packages, apt packages and variables are left out by rebuilding without them; the report
    says what each removal saved."""
    from synth.record.rundir import find_run
    from synth.verify.minimize import MinimizeOptions
    from synth.verify.minimize import minimize as run_minimize

    settings = settings_of(artifacts, ca_bundle, None, no_disk_check=False)
    opts = MinimizeOptions(find_run(settings, run_ref), out_dir=out, budget=budget,
                           tooling=tooling)
    result = run_minimize(opts, settings, open_engine(), console.say)
    if json_out:
        console.print_json({**result.document, "out_dir": str(result.out_dir)})
        return
    doc = result.document
    console.show(f"removed: {', '.join(doc['removed']) or 'nothing'}; kept: "
                 f"{', '.join(doc['kept']) or 'nothing'}"
                 + (f"; undecided: {', '.join(doc['undecided'])}" if doc["undecided"] else ""))
    if result.artifact is not None:
        console.show(f"minimized artifact: {result.artifact}")
    console.show(f"report: {result.out_dir / 'minimize.md'}")
