"""Untrusted text made safe for a terminal: the one helper every human output goes through.

File names, task and run names, commands, probe output, claims: much of what synth prints
came from an agent or an input file. An escape sequence in it (``ESC [ 2 J`` clears the
screen, ``ESC ] 0 ;`` retitles the window, OSC 52 writes the clipboard, a ``CR`` rewrites
the line already shown) must print as text, never act. :func:`printable` writes every C0
control character but newline and tab, ``DEL``, every C1 control character (``U+0080``-
``U+009F``: ``U+009B`` is an 8-bit CSI) and the bidirectional overrides and isolates
(``U+202A``-``U+202E``, ``U+2066``-``U+2069``: they reorder what the eye reads) as a
visible escape (``\\x1b``, ``\\u202e``), so an escape sequence shows as the characters it
was made of. Newlines are kept where they structure the output (``newlines=True``), else
written ``\\n``. :func:`json_safe` does the same to JSON text, where such a character can
only sit inside a string, as a JSON escape (the same value).
"""

from __future__ import annotations

import re

#: What a terminal may act on: C0 but newline and tab, DEL, C1, the bidi controls.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_LINE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Complete ANSI sequences: CSI (``ESC [`` … final byte) and OSC (``ESC ]`` … BEL or ST).
_ANSI = re.compile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(?:\x07|\x1b\\\\)?"
                   "|\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\x1b\x9c]*(?:\x07|\x9c)?")


def _escaped(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch == "\n":
        return "\\n"
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def printable(text: object, *, newlines: bool = True) -> str:
    """``text`` with every character a terminal would act on written as a visible escape;
    newlines kept (``newlines=False``: written ``\\n`` too, for one-line fields)."""
    s = str(text)
    return (_UNSAFE if newlines else _UNSAFE_LINE).sub(_escaped, s)


def without_ansi(text: str) -> str:
    """An agent's output stream as text: complete ANSI sequences (colours, cursor moves,
    titles) dropped, as a log viewer would, then :func:`printable`."""
    return printable(_ANSI.sub("", text))


def json_safe(text: str) -> str:
    """JSON text with every C1 control character, ``DEL`` and bidi control written as a
    JSON ``\\u`` escape (the same document: outside strings JSON has none of them; C0 ones
    are escaped by every JSON encoder already)."""
    return re.sub("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]",
                  lambda m: f"\\u{ord(m.group(0)):04x}", text)
