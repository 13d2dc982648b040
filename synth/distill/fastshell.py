"""A fast path for plain command lines: the same simple commands bashlex gives, or None.

bashlex is a faithful bash parser and a slow one (about a millisecond a line). Most audited
lines are plain: words, ``'…'`` and simple ``"…"`` strings, ``$VAR``/``${VAR}``, the
operators ``&&``, ``||``, ``|``, ``;``, a few redirections (``>``, ``>>``, ``<``, ``2>``,
``2>>``, ``2>&1``, ``&>``) and ``X=1`` prefixes. :func:`fast_parse` reads the tokens of
the shell lexer (:mod:`synth.util.shell_lexer`) and takes exactly that grammar; it declines
(returns None) everything else — command substitution, backslashes, ``!``, braces,
parentheses, here-documents, comments, keywords, background ``&``, tabs and newlines —
which then goes to bashlex as before. A test checks that, on every line of the bundled
transcripts and on a generated corpus, the fast path declines or agrees with bashlex
exactly (tests/unit/test_distill_fastshell.py).

A *bare* line — no character the lexer reads specially, single spaces between its words
— is the commonest of all: :func:`_bare_parse` reads its commands straight from its
space-separated words, without making tokens, and the same test checks that it gives what
the token reading gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from synth.util.shell_lexer import Token, lex_simple

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
#: A parameter's name takes all of its characters (``$ab`` is never ``$a`` then ``b``).
_PARAM = rf"\$(?:{_NAME}(?![A-Za-z0-9_])|\{{{_NAME}\}})"
#: The plain characters of a ``"…"`` string: a parameter starts with ``$``, which they
#: exclude, so a string has one reading (``plain (param plain)*``), and one that does not
#: close is refused in time linear in its length.
_DQ_PLAIN = r"[^\"'\\`$!\n]*"
#: A word of the grammar, as the lexer gives it: a run of plain characters, single-quoted
#: strings, simple double-quoted strings and parameters. Matched from the word's start
#: (never ``fullmatch``, which would backtrack into the loop): the word is plain when the
#: match reaches its end. No possessive quantifier: CPython before 3.11.3 (Debian 12's
#: python3 is 3.11.2) matches some wrongly.
_PLAIN_WORD = re.compile(
    r"(?:[^\s'\"\\`$!|&;<>(){}]+"
    r"|'[^'\n]*'"
    rf"|\"{_DQ_PLAIN}(?:{_PARAM}{_DQ_PLAIN})*\""
    rf"|{_PARAM})*"
)
#: Printable ASCII but the quotes, ``$`` and what the plain pieces exclude: a word of
#: these alone is plain, and its own value.
_PLAIN_CHARACTERS = frozenset(c for c in map(chr, range(33, 127)) if c not in "'\"\\`$!|&;<>(){}")
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
#: The redirection type bashlex reports for each operator of the grammar (its
#: ``RedirectNode.type``); ``2>&`` is taken only as ``2>&1``.
_REDIRECT_TYPE = {">": ">", ">>": ">>", "<": "<", "2>": ">", "2>>": ">>", "&>": "&>",
                  "2>&": ">&"}
#: The operators of the grammar.
_OPERATORS = frozenset({"&&", "||", "|", ";"})


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


def _value(word: str) -> str | None:
    """A word's value after quote removal when it is in the grammar, else None.

    In the grammar: plain pieces only, not a reserved word, and quoted the way bashlex
    unquotes it. bashlex does not always: of a word with two quoted strings (``'a'x'b'``,
    ``"a"'b'"c"``) it keeps the inner quotes, and a single-quoted string holding ``"``,
    ``$``, a backquote or a backslash is read again as if unquoted when the word has
    anything else in it. So a word holds at most one quoted string, and its value is the
    word without that string's quotes (what :func:`~synth.util.shell_lexer.unquote` gives
    too: a test checks it)."""
    if _PLAIN_CHARACTERS.issuperset(word):  # the common word: nothing in it to read
        return None if word in _RESERVED else word
    if (_PLAIN_WORD.match(word).end() != len(word)  # type: ignore[union-attr]
            or word in _RESERVED):
        return None
    if "'" not in word and '"' not in word:
        return word
    m = _QUOTED.search(word)
    if m is None or _QUOTED.search(word, m.end()) is not None:
        return None
    start, end = m.span()
    single = m.group(1)
    if single is None:
        single = m.group(2)
    elif end - start != len(word) and _SPECIAL_IN_SINGLE.search(single):
        return None
    return word[:start] + single + word[end:]


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


def _commands(source: str, tokens: Sequence[Token]) -> tuple[FastCommand, ...]:
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
            value = _value(text)
            if value is None:
                raise _Decline
            if words:
                words.append(value)
            elif redirects or _ODD_ASSIGNMENT.match(text):
                raise _Decline  # ``X=1 >f Y=2 cmd``, ``A[0]=1``, ``X+=1``: left to bashlex
            elif _ASSIGNMENT.match(text):
                assignments.append(value)
            else:
                words.append(value)
            start = t_start if start < 0 else start
        elif kind == "redirect":
            redirect = _REDIRECT_TYPE.get(text)
            i += 1
            if start < 0 or redirect is None or i == n:
                raise _Decline  # a redirection before the command, or outside the grammar
            target_kind, target, target_start, end_of = tokens[i]
            value = _value(target) if target_kind == "word" else None
            if value is None:
                raise _Decline
            if text == "2>&" and (target != "1" or target_start != t_start + 3 or source[
                    end_of:end_of + 1] not in ("", " ", ";", "|", "&")):
                raise _Decline  # only ``2>&1`` as one word, then a blank or an operator
            redirects.append((redirect, value))
        elif kind == "operator" and text in _OPERATORS:
            if start < 0:
                raise _Decline  # an empty command: a syntax error, bashlex reports it
            pipeline.append((assignments, words, redirects, start, end))
            assignments, words, redirects, start = [], [], [], -1
            if text != "|":
                _close_pipeline(out, pipeline, before, text)
                pipeline, before = [], text
        else:
            raise _Decline  # ``&``, ``;;``, parentheses, a newline, a comment, …
        end = end_of
        i += 1
    if start >= 0:
        pipeline.append((assignments, words, redirects, start, end))
        _close_pipeline(out, pipeline, before, None)
    elif tokens[-1].text != ";":
        raise _Decline  # ends in ``&&``, ``||`` or ``|``
    return tuple(out)


def _token_parse(source: str) -> tuple[FastCommand, ...] | None:
    """The commands of a line read from its tokens, or None outside the grammar. What the
    lexer reads only with its scanner (parentheses, escapes, substitutions, …) is outside
    it: the one-pass reading is enough."""
    if "\n" in source:
        return None  # a newline is never in the grammar, nor a line continuation
    tokens = lex_simple(source)
    if not tokens:
        return None
    if "\t" in source and not _blanks_are_spaces(source, tokens):
        return None  # a tab is a blank to bash, and outside the grammar between words
    try:
        return _commands(source, tokens)
    except _Decline:
        return None


def _blanks_are_spaces(source: str, tokens: Sequence[Token]) -> bool:
    """Whether no tab is outside the tokens."""
    pos = 0
    for token in tokens:
        if source.count("\t", pos, token.start):
            return False
        pos = token.end
    return "\t" not in source[pos:]


#: A line with none of these (and ASCII, single spaces between words) is *bare*: no
#: quoting, expansion, grouping, redirection or blank other than the space.
_NOT_BARE = re.compile("[\'\"\\\\`$!(){}<>\t\n\r\x0b\x0c\x1c-\x1f]")
#: An operator of a bare line: a word of its own, a space on either side.
_BARE_OPERATOR = re.compile(r" (&&|\|\||[|;]) ")
_OPERATOR_CHAR = re.compile("[&|;]")


def _bare_parse(source: str) -> tuple[FastCommand, ...] | None:
    """The commands of a *bare* line (the common case: ``cd /w && pip install x==1``),
    which is what :func:`_token_parse` gives for it: one split at its
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
    return _token_parse(source)
