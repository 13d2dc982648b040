"""``synth diff``: two runs, artifacts or images compared."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from synth.cli.app import ArtifactsOpt, JsonOpt, app, open_image_probe

#: Seconds one engine call of a diff may take (an image's inspection; the fingerprint probe
#: has its own limit).
DIFF_TIMEOUT = 30


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

    opts = DiffOptions(a=a, b=b, json=json_out, markdown=md, python=python,
                       fingerprint=fingerprint, artifacts_dir=artifacts)
    raise typer.Exit(diff_command(opts, open_image_probe(DIFF_TIMEOUT)))
