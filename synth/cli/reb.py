"""ResearchEnvBench: ``synth reb assets fetch`` (a REB task's assets into an offline cache)
and ``synth reb score`` (REB's C5 again, from a stored verification). docs/bench.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from synth.config import Settings
from synth.ui import console

if TYPE_CHECKING:  # the commands import their modules when run: `synth --help` stays fast
    from synth.plugins.reb.assets_fetch import FetchOutcome
from synth.cli.app import CaBundleOpt, JsonOpt, app

reb_app = typer.Typer(help="ResearchEnvBench tasks: their assets, REB's scoring "
                      "(docs/bench.md).", no_args_is_help=True)
assets_app = typer.Typer(help="What a REB task's prepare_assets.sh downloads.",
                         no_args_is_help=True)
reb_app.add_typer(assets_app, name="assets")
app.add_typer(reb_app, name="reb")


@assets_app.command("fetch")
def reb_assets_fetch(
    tasks: Annotated[list[Path], typer.Argument(help="Task folders imported from REB.")],
    to: Annotated[Path, typer.Option("--to", help="The cache folder (what --assets-cache "
                                     "of synth verify reads).")],
    hf_endpoint: Annotated[Optional[str], typer.Option(  # noqa: UP045
        help="The Hugging Face hub or a mirror (default HF_ENDPOINT, else "
        "https://huggingface.co).")] = None,
    ca_bundle: CaBundleOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Download the tasks' assets (hub and URLs) into CACHE, each file's sha256 recorded."""
    from synth.plugins.reb.assets_fetch import fetch_assets, make_fetcher

    fetcher = make_fetcher(to, hf_endpoint, Settings.load(ca_bundle=ca_bundle).ca_bundle)
    outcome = fetch_assets(tasks, fetcher, console.say)
    _print_fetch(outcome, json_out)


def _print_fetch(outcome: FetchOutcome, json_out: bool) -> None:
    if json_out:
        console.print_json({"cache": str(outcome.cache), "fetched": outcome.fetched,
                            "unresolved": outcome.unresolved})
        return
    files = sum(len(a["files"]) for a in outcome.fetched.values())
    console.say(f"assets: {len(outcome.fetched)} asset(s), {files} file(s) in {outcome.cache}")
    for task, items in outcome.unresolved.items():
        for item in items:
            console.say(f"note: {task}: not fetched, computed at run time: {item['what']} "
                        f"({item['where']})")


@reb_app.command("score")
def reb_score(
    verify: Annotated[Path, typer.Argument(help="A verify.json, or the folder holding it.")],
    claims: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        help="Score this report instead of the verified target's claims.")] = None,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "-o", "--out", help="Where reb/ goes (default: beside verify.json).")] = None,
    json_out: JsonOpt = False,
) -> None:
    """REB's C5 scored again from a stored verification (no rebuild); a new REB job folder."""
    from synth.plugins.reb.scoring import rescore, say_scoring

    result = rescore(verify, claims, out)
    if json_out:
        console.print_json(result)
    else:
        say_scoring(result, console.say)
