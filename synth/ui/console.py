"""Terminal output: progress and messages on stderr, data (``--json``) on stdout.

Nothing printed here interprets text as rich markup or emoji unless the caller passes markup
it wrote itself: run names, task names, commands and agent output are untrusted text
(``[/]`` or ``:x:`` in them must print literally).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape

from synth import __version__

#: The envelope every command's ``--json`` output shares (``format`` is its version).
CLI_JSON_FORMAT = 1

err = Console(stderr=True, highlight=False, emoji=False)
out = Console(highlight=False, emoji=False)

#: Set once by the CLI edge (synth.cli.main) from the command line.
mode: dict[str, Any] = {"json": False, "debug": False, "command": ""}


def say(message: str) -> None:
    """A progress line on stderr, printed literally."""
    err.print(message, markup=False, emoji=False, highlight=False, soft_wrap=True)


def warn(message: str) -> None:
    """A warning on stderr; the message is printed literally."""
    err.print(f"[yellow]warning:[/] {escape(message)}", emoji=False, highlight=False,
              soft_wrap=True)


def literal(text: object) -> str:
    """Untrusted text made safe to embed in a markup string."""
    return escape(str(text))


def envelope(result: Any = None, *, error: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": CLI_JSON_FORMAT, "synth_version": __version__,
                           "command": mode["command"]}
    if error is not None:
        doc["error"] = error
    else:
        doc["result"] = result
    return doc


def print_json(result: Any) -> None:
    """A command's result on stdout, inside the shared envelope."""
    _write(envelope(result))


def print_error(*, code: int, kind: str, message: str, hint: str | None,
                fields: Mapping[str, object] | None = None) -> None:
    """An error: JSON on stdout under ``--json``, else text on stderr (the message and the
    hint). The JSON error is ``{"code", "kind", "message", "hint"}`` plus the kind's typed
    ``fields`` (:meth:`synth.errors.SynthError.fields`: ``path``, ``line``, ``engine``...)."""
    if mode["json"]:
        _write(envelope(error={**(fields or {}), "code": code, "kind": kind,
                               "message": message, "hint": hint}))
        return
    err.print(f"[bold red]error:[/] {escape(message)}", emoji=False, highlight=False,
              soft_wrap=True)
    if hint:
        err.print(f"[bold]hint:[/] {escape(hint)}", emoji=False, highlight=False,
                  soft_wrap=True)


def _write(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()
