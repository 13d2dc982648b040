"""Terminal output: progress and messages on stderr, data (``--json``) on stdout.

Nothing printed here interprets text as rich markup or emoji unless the caller passes markup
it wrote itself: run names, task names, commands and agent output are untrusted text
(``[/]`` or ``:x:`` in them must print literally). Nor does any of it reach the terminal
with a control character or escape sequence in it: every function here passes its text
through :func:`synth.util.text.printable` (``\x1b[2J`` prints as those characters), and
:func:`literal` does for a piece of untrusted text embedded in markup. ``--json`` output is
JSON with every such character escaped (:func:`synth.util.text.json_safe`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape

from synth import __version__
from synth.util.text import json_safe, printable

#: The envelope every command's ``--json`` output shares (``format`` is its version).
CLI_JSON_FORMAT = 1

err = Console(stderr=True, highlight=False, emoji=False)
out = Console(highlight=False, emoji=False)

#: Set once by the CLI edge (synth.cli.main) from the command line.
mode: dict[str, Any] = {"json": False, "debug": False, "command": ""}


def say(message: str) -> None:
    """A progress line on stderr, printed literally."""
    err.print(printable(message), markup=False, emoji=False, highlight=False, soft_wrap=True)


def show(text: str, *, newlines: bool = True) -> None:
    """Lines of a command's human output on stdout, printed literally (``newlines=False``:
    one line, whatever the text holds)."""
    out.print(printable(text, newlines=newlines), markup=False, emoji=False, highlight=False,
              soft_wrap=True)


def warn(message: str) -> None:
    """A warning on stderr; the message is printed literally."""
    err.print(f"[yellow]warning:[/] {literal(message)}", emoji=False, highlight=False,
              soft_wrap=True)


def literal(text: object, *, newlines: bool = True) -> str:
    """Untrusted text made safe to embed in a markup string (no markup, no control
    characters; ``newlines=False`` for a one-line field such as a name)."""
    return escape(printable(text, newlines=newlines))


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
    err.print(f"[bold red]error:[/] {literal(message)}", emoji=False, highlight=False,
              soft_wrap=True)
    if hint:
        err.print(f"[bold]hint:[/] {literal(hint)}", emoji=False, highlight=False,
                  soft_wrap=True)


def write_stdout(text: str) -> None:
    """Text a command writes to stdout as it is (a Markdown report): printable."""
    sys.stdout.write(printable(text))
    sys.stdout.flush()


def write_json_text(text: str) -> None:
    """A JSON document's text on stdout (``export --plan``), every control character
    escaped."""
    sys.stdout.write(json_safe(text))
    sys.stdout.flush()


def _write(doc: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()
