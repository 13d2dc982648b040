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
from collections.abc import Sequence
from typing import NamedTuple

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_PARAM = rf"\$(?:{_NAME}|\{{{_NAME}\}})"
#: The plain characters of a ``"…"`` string: a parameter starts with ``$``, which they
#: exclude, so a string has one reading (``plain (param plain)*``) and an unclosed one is
#: refused without backtracking.
_DQ_PLAIN = r"[^\"'\\`$!\n]*"
#: One token: blanks, an operator, a redirection or a word. A word is a run of plain
#: characters, single-quoted strings, simple double-quoted strings and parameters. No
#: possessive quantifier: CPython before 3.11.3 (Debian 12's python3 is 3.11.2) matches
#: some wrongly (a word ran on past a ``"``); the word is the pattern's last part, so its
#: greedy loop is never backtracked into.
_TOKEN = re.compile(
    r"(?P<blank>[ ]*)(?:(?P<op>&&|\|\||[;|])"
    r"|(?P<redir>2>&1(?![^ ;|&])|&>(?![>&|])|2>>|2>(?![>&|])|>>(?![>&|])|>(?![>&|])"
    r"|<(?![<>&|]))"
    r"|(?P<word>(?:[^\s'\"\\`$!|&;<>(){}]+"
    r"|'[^'\n]*'"
    rf"|\"{_DQ_PLAIN}(?:{_PARAM}{_DQ_PLAIN})*\""
    rf"|{_PARAM})+))"
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
    """``(kind, text, start, end)`` of every token, blanks skipped; raises _Decline.

    One ``findall`` gives every token's groups; positions are the running sum of their
    lengths, which reaches the end of the line only if no character was skipped (a
    character no token matches)."""
    out: list[tuple[str, str, int, int]] = []
    pos, n = 0, len(source)
    for blank, op, redir, word in _TOKEN.findall(source):
        start = pos + len(blank)
        if op:
            out.append(("op", op, start, start + len(op)))
            pos = start + len(op)
            continue
        if redir:
            out.append(("redir", redir, start, start + len(redir)))
            pos = start + len(redir)
            continue
        end = pos = start + len(word)
        if (word[0] == "#" or word in _RESERVED or (end < n and source[end] in "<>"
                                                     and word.isdigit())
                or not _dequotable(word)):
            raise _Decline
        out.append(("word", word, start, end))
    if pos != len(source.rstrip(" ")):
        raise _Decline  # a character no token matches, or something after the last token
    return out


#: A pipeline member's assignment words, words, redirects, start and end.
_Parts = tuple[Sequence[str], Sequence[str], Sequence[tuple[str, str]], int, int]
_new_command = tuple.__new__


def _close_pipeline(out: list[FastCommand], pipeline: list[_Parts], before: str | None,
                    after: str | None) -> None:
    """The commands of a pipeline, with the walker's masking rule: every member of a
    pipeline next to ``||`` is masked, and every member but the last of any pipeline.
    Each FastCommand is made as the tuple it is (one per command of a long log)."""
    masked = before == "||" or after == "||"
    last = len(pipeline) - 1
    for i, (assignments, words, redirects, start, end) in enumerate(pipeline):
        out.append(_new_command(FastCommand, (tuple(assignments), tuple(words),
                                              tuple(redirects), start, end, masked or i < last)))


def _commands(tokens: list[tuple[str, str, int, int]]) -> tuple[FastCommand, ...]:
    """Tokens grouped into simple commands; raises _Decline."""
    out: list[FastCommand] = []
    pipeline: list[_Parts] = []
    before: str | None = None
    assignments: list[str] = []
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    start = end = -1
    i, n = 0, len(tokens)
    while i < n:
        kind, text, t_start, end_of = tokens[i]
        if kind == "word":
            if words:
                words.append(_unquote(text))
            elif redirects or _ODD_ASSIGNMENT.match(text):
                raise _Decline  # ``X=1 >f Y=2 cmd``, ``A[0]=1``, ``X+=1``: left to bashlex
            elif _ASSIGNMENT.match(text):
                assignments.append(_unquote(text))
            else:
                words.append(_unquote(text))
            start = t_start if start < 0 else start
        elif kind == "redir":
            if start < 0:
                raise _Decline  # a redirection before the command: left to bashlex
            if text == "2>&1":
                redirects.append((">&", "1"))
            else:
                i += 1
                if i == n or tokens[i][0] != "word":
                    raise _Decline
                redirects.append((_REDIRECT_TYPE[text], _unquote(tokens[i][1])))
                end_of = tokens[i][3]
        else:
            if start < 0:
                raise _Decline  # an empty command: a syntax error, bashlex reports it
            pipeline.append((assignments, words, redirects, start, end))
            assignments, words, redirects, start = [], [], [], -1
            if text != "|":
                _close_pipeline(out, pipeline, before, text)
                pipeline, before = [], text
        end = end_of
        i += 1
    if start >= 0:
        pipeline.append((assignments, words, redirects, start, end))
        _close_pipeline(out, pipeline, before, None)
    elif tokens[-1][1] != ";":
        raise _Decline  # ends in ``&&``, ``||`` or ``|``
    return tuple(out)


#: A line with none of these (and ASCII, single spaces between words) is *bare*: no
#: quoting, expansion, grouping, redirection or blank other than the space.
_NOT_BARE = re.compile("[\'\"\\\\`$!(){}<>\t\n\r\x0b\x0c\x1c-\x1f]")
#: An operator of a bare line: a word of its own, a space on either side.
_BARE_OPERATOR = re.compile(r" (&&|\|\||[|;]) ")
_OPERATOR_CHAR = re.compile("[&|;]")


def _bare_parse(source: str) -> tuple[FastCommand, ...] | None:
    """The commands of a *bare* line (the common case: ``cd /w && pip install x==1``),
    which is what :func:`_tokens` and :func:`_commands` give for it: one split at its
    operators (each a word of its own, a space on either side; one trailing `` ;`` is
    dropped) gives its commands, each the space-separated words of its text. A command
    that still holds ``&``, ``|`` or ``;`` had one glued to a word (``a&&b``, ``x;``,
    ``&``), and is empty if two operators met: the line then takes the general way (and
    gets its answer there, a decline included), as does any line that is not bare."""
    if (not source.isascii() or _NOT_BARE.search(source) is not None or "  " in source
            or not source or source[0] == " " or source[-1] == " "):
        return None
    parts = _BARE_OPERATOR.split(source[:-2] if source.endswith(" ;") else source)
    out: list[FastCommand] = []
    pipeline: list[_Parts] = []
    before: str | None = None
    pos = 0
    last = len(parts) - 1  # parts: command, operator, command, …, command
    for i in range(0, last + 1, 2):
        text = parts[i]
        if not text or _OPERATOR_CHAR.search(text) is not None:
            return None
        words = text.split(" ")
        if not _RESERVED.isdisjoint(words) or ("#" in text
                                               and any(w[0] == "#" for w in words)):
            return None
        k = 0  # the leading ``X=1`` words
        if "=" in text or "[" in text:
            for word in words:
                if "=" not in word and "[" not in word:
                    break
                if _ODD_ASSIGNMENT.match(word):
                    return None  # ``A[0]=1``, ``X+=1``: bashlex's
                if not _ASSIGNMENT.match(word):
                    break
                k += 1
        end = pos + len(text)
        pipeline.append((words[:k], words[k:], (), pos, end))
        after = parts[i + 1] if i < last else None
        if after != "|":
            _close_pipeline(out, pipeline, before, after)
            pipeline, before = [], after
        if after is not None:
            pos = end + len(after) + 2
    return tuple(out)


def fast_parse(source: str) -> tuple[FastCommand, ...] | None:
    """The simple commands of a plain line, in order; None when the line is not plain."""
    bare = _bare_parse(source)
    if bare is not None:
        return bare
    try:
        tokens = _tokens(source)
        return _commands(tokens) if tokens else None
    except _Decline:
        return None
