"""A fast path for plain command lines: the same simple commands bashlex gives, or None.

bashlex is a faithful bash parser and a slow one (about a millisecond a line). Most audited
lines are plain: words, ``'…'`` and simple ``"…"`` strings, ``$VAR``/``${VAR}``, the
operators ``&&``, ``||``, ``|``, ``;``, a few redirections (``>``, ``>>``, ``<``, ``2>``,
``2>>``, ``2>&1``, ``&>``) and ``X=1`` prefixes. :func:`fast_parse` reads exactly that
grammar and declines (returns None) everything else — command substitution, backslashes,
``!``, braces, parentheses, here-documents, comments, keywords, background ``&``, tabs and
newlines — which then goes to bashlex as before. A test checks that, on every line of the
bundled transcripts and on a generated corpus, the fast path declines or agrees with
bashlex exactly (tests/unit/test_distill_fastshell.py).
"""

from __future__ import annotations

import re
from typing import NamedTuple

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAM = rf"\$(?:{_NAME}|\{{{_NAME}\}})"
#: One token: blanks, an operator, a redirection or a word. A word is a run of plain
#: characters, single-quoted strings, simple double-quoted strings and parameters.
_TOKEN = re.compile(
    r"[ ]*(?:(?P<op>&&|\|\||[;|])"
    r"|(?P<redir>2>&1(?![^ ;|&])|&>(?![>&|])|2>>|2>(?![>&|])|>>(?![>&|])|>(?![>&|])"
    r"|<(?![<>&|]))"
    r"|(?P<word>(?:[^\s'\"\\`$!|&;<>(){}]++"
    r"|'[^'\n]*'"
    rf"|\"(?:[^\"'\\`$!\n]++|{_PARAM})*+\""
    rf"|{_PARAM})++))"
)
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
_SPECIAL_IN_SINGLE = re.compile(r"[\"$`\\]")
_ASSIGNMENT = re.compile(rf"{_NAME}=")
#: Words that look like an assignment bash treats specially (arrays, ``+=``): declined.
_ODD_ASSIGNMENT = re.compile(rf"{_NAME}(?:\[|\+=)")
#: Reserved words (and ``time``): a line holding one as a bare word goes to bashlex.
_RESERVED = frozenset({
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
    "do", "done", "in", "function", "time", "{", "}", "!", "[[", "]]", "coproc",
})
#: The redirection type bashlex reports for each operator (its ``RedirectNode.type``).
_REDIRECT_TYPE = {">": ">", ">>": ">>", "<": "<", "2>": ">", "2>>": ">>", "&>": "&>",
                  "2>&1": ">&"}


class FastCommand(NamedTuple):
    """One simple command: raw assignment words and words after quote removal, redirects
    as ``(type, target)`` the way the bashlex walker records them, and its source span."""

    assignments: tuple[str, ...]
    words: tuple[str, ...]
    redirects: tuple[tuple[str, str], ...]
    start: int
    end: int
    masked: bool


class _Decline(Exception):
    """The line is outside the fast path's grammar."""


def _dequotable(raw: str) -> bool:
    """Whether bashlex removes the quotes of this word the way bash does.

    It does not always: of a word with two quoted strings (``'a'x'b'``, ``"a"'b'"c"``) it
    keeps the inner quotes, and a single-quoted string holding ``"``, ``$``, a backquote or
    a backslash is read again as if unquoted when the word has anything else in it."""
    if "'" not in raw and '"' not in raw:
        return True
    quoted = list(_QUOTED.finditer(raw))
    if len(quoted) > 1:
        return False
    m = quoted[0]
    single = m.group(1)
    return single is None or m.group() == raw or not _SPECIAL_IN_SINGLE.search(single)


def _unquote(raw: str) -> str:
    if "'" not in raw and '"' not in raw:
        return raw
    return _QUOTED.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), raw)


def _tokens(source: str) -> list[tuple[str, str, int, int]]:
    """``(kind, text, start, end)`` of every token, blanks skipped; raises _Decline."""
    out: list[tuple[str, str, int, int]] = []
    pos, n = 0, len(source)
    for m in _TOKEN.finditer(source):
        end = m.end()
        if m.start() != pos or end == pos:
            raise _Decline  # something no token matches lies between
        kind = m.lastgroup or ""
        start = m.start(kind)
        text = source[start:end]
        if kind == "word" and (text[0] == "#" or text in _RESERVED
                               or (end < n and source[end] in "<>" and text.isdigit())
                               or not _dequotable(text)):
            raise _Decline
        out.append((kind, text, start, end))
        pos = end
    if source[pos:].strip(" "):
        raise _Decline
    return out


class _Builder:
    """Groups tokens into commands and pipelines, with the walker's masking rule."""

    def __init__(self) -> None:
        self.assignments: list[str] = []
        self.words: list[str] = []
        self.redirects: list[tuple[str, str]] = []
        self.start = -1
        self.end = -1
        #: Pipelines: ``(commands, operator before)``; their masking is set on close.
        self.pipeline: list[tuple[list[str], list[str], list[tuple[str, str]], int, int]] = []
        self.pipelines: list[tuple[list[tuple[list[str], list[str], list[tuple[str, str]],
                                              int, int]], str | None, str | None]] = []
        self.op_before: str | None = None

    def word(self, text: str, start: int, end: int) -> None:
        if self.start < 0:
            self.start = start
        if not self.words and not self.redirects and _ASSIGNMENT.match(text):
            self.assignments.append(_unquote(text))
        elif not self.words and _ODD_ASSIGNMENT.match(text):
            raise _Decline
        else:
            self.words.append(_unquote(text))
        self.end = end

    def redirect(self, op: str, target: str, start: int, end: int) -> None:
        if self.start < 0:
            raise _Decline  # a redirection before the command: left to bashlex
        self.redirects.append((_REDIRECT_TYPE[op], "1" if op == "2>&1" else _unquote(target)))
        self.end = end

    def close_command(self) -> None:
        if self.start < 0:
            raise _Decline  # an empty command: a syntax error, bashlex reports it
        self.pipeline.append((self.assignments, self.words, self.redirects, self.start,
                              self.end))
        self.assignments, self.words, self.redirects = [], [], []
        self.start = self.end = -1

    def close_pipeline(self, op_after: str | None) -> None:
        self.pipelines.append((self.pipeline, self.op_before, op_after))
        self.pipeline = []
        self.op_before = op_after

    def result(self) -> tuple[FastCommand, ...]:
        out = []
        for cmds, before, after in self.pipelines:
            masked = before == "||" or after == "||"
            last = len(cmds) - 1
            for i, (assignments, words, redirects, start, end) in enumerate(cmds):
                out.append(FastCommand(tuple(assignments), tuple(words), tuple(redirects),
                                       start, end, masked or i < last))
        return tuple(out)


def fast_parse(source: str) -> tuple[FastCommand, ...] | None:
    """The simple commands of a plain line, in order; None when the line is not plain."""
    try:
        tokens = _tokens(source)
        if not tokens:
            return None
        b = _Builder()
        i, n = 0, len(tokens)
        while i < n:
            kind, text, start, end = tokens[i]
            if kind == "word":
                b.word(text, start, end)
            elif kind == "redir":
                if text == "2>&1":
                    b.redirect(text, "", start, end)
                else:
                    if i + 1 >= n or tokens[i + 1][0] != "word":
                        raise _Decline
                    i += 1
                    b.redirect(text, tokens[i][1], start, tokens[i][3])
            else:
                b.close_command()
                if text != "|":
                    b.close_pipeline(text)
            i += 1
        if b.start >= 0:
            b.close_command()
            b.close_pipeline(None)
        elif tokens[-1][1] != ";":
            raise _Decline  # ends in ``&&``, ``||`` or ``|``
        return b.result()
    except _Decline:
        return None
