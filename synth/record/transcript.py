"""Transcripts: setup scripts split into the top-level statements an agent would have run.

The replay agent runs each statement of a transcript as its own ``bash -c`` call, the way
LLM agents issue one tool call per command: ``cd`` and ``export`` do not carry over from one
statement to the next, exactly as they would not between an agent's tool calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import bashlex
import bashlex.errors

_OPEN_WORDS = frozenset({"if", "for", "while", "until", "case", "select", "{"})
_CLOSE_WORDS = frozenset({"fi", "done", "esac", "}"})
_CONTINUATION = re.compile(r"(&&|\|\||\|)\s*$")
_WORD_BREAK = " \t\n;&|()<>"


@dataclass(frozen=True)
class _Heredoc:
    #: Span of the ``<<DELIM`` operator (``<<-`` and quoted delimiters included).
    op_start: int
    op_end: int
    #: Span of the body: from the line after the operator up to and including the
    #: delimiter line (its newline included when there is one).
    body_start: int
    body_end: int


@dataclass(frozen=True)
class _Scan:
    heredocs: tuple[_Heredoc, ...]
    #: The text with quoted strings, comments, escaped newlines and heredoc bodies blanked
    #: (same length, newlines kept where they end a line of code): only shell syntax remains.
    code: str


def split_statements(text: str) -> list[str]:
    """Split a bash script into its top-level statements, in order.

    Contract (the replay agent runs each returned string as one ``bash -c``):

    - A statement is one complete top-level command line: a simple command, a pipeline, or
      a list joined by ``&&``, ``||``, ``;`` or ``&`` on one logical line — or a compound
      command (``if``/``for``/``while``/``until``/``case``/``{ …; }``/``( … )``, a function
      definition) with everything up to its closing keyword.
    - A logical line continues across a backslash-newline, after a trailing ``&&``, ``||``
      or ``|``, and inside a quoted string spanning lines.
    - Here-documents belong to the statement whose line opens them: the statement text runs
      through the body and the delimiter line (``<<EOF``, ``<<'EOF'``, ``<<"EOF"``,
      ``<<-EOF``; ``<<<`` is a here-string, not a here-document).
    - Each statement is the exact source text (never rewritten), with surrounding
      whitespace stripped; a trailing comment on a statement's last line is not part of it.
      Blank lines, comment lines and a shebang between statements are dropped.
    - Several commands on one line (``a; b``) stay one statement: one line is one call.
    - Never raises: ``bashlex`` finds the boundaries; where it cannot parse the script, a
      line-based splitter applies the same rules (keywords counted as words, parentheses
      outside quotes); an unterminated construct takes the rest of the script.
    """
    scan = _scan(text)
    try:
        spans = _spans_bashlex(text, scan)
    except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError,
            TypeError, ValueError, AssertionError):
        spans = _spans_lines(text, scan)
    statements = []
    for start, end in spans:
        piece = text[start:end].strip()
        if piece:
            statements.append(piece)
    return statements


# --------------------------------------------------------------------------- scanning
def _scan(text: str) -> _Scan:
    """One pass over the text: where quotes, comments and here-documents are."""
    code = list(text)
    heredocs: list[_Heredoc] = []
    pending: list[tuple[int, int, str, bool]] = []  # op_start, op_end, delimiter, strip tabs
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 < n and text[i + 1] == "\n":
                code[i] = code[i + 1] = " "  # a line continuation joins two lines
            i += 2
            continue
        if c == "'":
            j = text.find("'", i + 1)
            j = n if j < 0 else j + 1
            _blank_quoted(code, i, j)
            i = j
            continue
        if c == '"':
            j = _end_of_double_quote(text, i + 1)
            _blank_quoted(code, i, j)
            i = j
            continue
        if c == "#" and (i == 0 or text[i - 1] in _WORD_BREAK):
            j = text.find("\n", i)
            j = n if j < 0 else j
            _blank(code, i, j)
            i = j
            continue
        if text.startswith("<<<", i):  # a here-string
            i += 3
            continue
        if text.startswith("<<", i):
            parsed = _heredoc_operator(text, i)
            if parsed is not None:
                op_end, delimiter, strip_tabs = parsed
                pending.append((i, op_end, delimiter, strip_tabs))
                i = op_end
                continue
            i += 2
            continue
        if c == "\n" and pending:
            i = _heredoc_bodies(text, code, pending, i + 1, heredocs)
            pending.clear()
            continue
        i += 1
    for op_start, op_end, _delimiter, _strip in pending:  # a body cut off by end of text
        heredocs.append(_Heredoc(op_start, op_end, n, n))
    return _Scan(tuple(heredocs), "".join(code))


def _blank(code: list[str], a: int, b: int) -> None:
    """Blank ``code[a:b]``, keeping its newlines."""
    for k in range(a, b):
        if code[k] != "\n":
            code[k] = " "


def _heredoc_bodies(text: str, code: list[str], pending: list[tuple[int, int, str, bool]],
                    pos: int, heredocs: list[_Heredoc]) -> int:
    """Read the bodies of the ``pending`` here-documents, in order, from ``pos`` (the line
    after their operators); each is blanked in ``code`` and added to ``heredocs``.
    Returns where the text after the last body starts."""
    n = len(text)
    for op_start, op_end, delimiter, strip_tabs in pending:
        body_start = pos
        while pos < n:
            eol = text.find("\n", pos)
            line = text[pos:n if eol < 0 else eol]
            pos = n if eol < 0 else eol + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
        heredocs.append(_Heredoc(op_start, op_end, body_start, pos))
        _blank(code, body_start, pos)
        if pos > body_start and text[pos - 1] == "\n":
            code[pos - 1] = "\n"  # the delimiter line's newline still ends the line
    return pos


def _end_of_double_quote(text: str, i: int) -> int:
    n = len(text)
    while i < n:
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i + 1
        i += 1
    return n


def _blank_quoted(code: list[str], a: int, b: int) -> None:
    # A quoted string stays one word, and a newline inside it never ends a line.
    for k in range(a, b):
        code[k] = "_"


def _heredoc_operator(text: str, i: int) -> tuple[int, str, bool] | None:
    """At ``<<``: (end of the operator, the delimiter unquoted, strip leading tabs)."""
    j = i + 2
    strip_tabs = False
    if j < len(text) and text[j] == "-":
        strip_tabs = True
        j += 1
    while j < len(text) and text[j] in " \t":
        j += 1
    start = j
    delimiter: list[str] = []
    while j < len(text) and text[j] not in _WORD_BREAK:
        c = text[j]
        if c in "'\"":
            close = text.find(c, j + 1)
            if close < 0:
                return None
            delimiter.append(text[j + 1:close])
            j = close + 1
        elif c == "\\" and j + 1 < len(text):
            delimiter.append(text[j + 1])
            j += 2
        else:
            delimiter.append(c)
            j += 1
    if j == start:
        return None
    return j, "".join(delimiter), strip_tabs


# ------------------------------------------------------------------------ the parsers
def _spans_bashlex(text: str, scan: _Scan) -> list[tuple[int, int]]:
    # bashlex cannot read quoted here-document delimiters: it parses a copy in which every
    # operator is an input redirect of the same length and every body is blank.
    masked = list(text)
    for doc in scan.heredocs:
        width = doc.op_end - doc.op_start
        masked[doc.op_start:doc.op_end] = list("<" + "x" * (width - 1))
        for k in range(doc.body_start, doc.body_end):
            if masked[k] != "\n":
                masked[k] = " "
    spans = []
    for node in bashlex.parse("".join(masked)):
        start, end = node.pos
        for doc in scan.heredocs:
            if start <= doc.op_start < end:
                end = max(end, doc.body_end)
        spans.append((start, end))
    return _merge_overlaps(spans)


def _spans_lines(text: str, scan: _Scan) -> list[tuple[int, int]]:
    """The fallback: statements end at a newline of code where nothing is left open."""
    heredoc_end = {doc.op_start: doc.body_end for doc in scan.heredocs}
    spans: list[tuple[int, int]] = []
    start: int | None = None
    depth = 0
    parens = 0
    pos = 0
    code = scan.code
    while pos < len(code):
        eol = code.find("\n", pos)
        line_end = len(code) if eol < 0 else eol
        line = code[pos:line_end]
        if start is None and line.strip():
            start = pos
        if start is not None:
            depth, parens = _count_blocks(line, depth, parens)
        nxt = len(code) if eol < 0 else eol + 1
        for op_start, body_end in heredoc_end.items():  # skip the bodies opened on this line
            if pos <= op_start < line_end:
                nxt = max(nxt, body_end)
        if start is not None and depth <= 0 and parens <= 0 and not _CONTINUATION.search(line):
            # the statement ends at its last character of code (a trailing comment is not
            # part of it), or with the last here-document it opened
            end = len(code[:line_end].rstrip())
            for op_start, body_end in heredoc_end.items():
                if start <= op_start < line_end:
                    end = max(end, body_end)
            spans.append((start, end))
            start, depth, parens = None, 0, 0
        pos = nxt
    if start is not None:
        spans.append((start, len(text)))
    return spans


def _count_blocks(line: str, depth: int, parens: int) -> tuple[int, int]:
    words = re.split(r"[\s;&|]+", line)
    for word in words:
        if word in _OPEN_WORDS:
            depth += 1
        elif word in _CLOSE_WORDS:
            depth -= 1
    if depth <= 0:  # case patterns (`a)`) hold unbalanced parentheses: count only outside
        parens += line.count("(") - line.count(")")
    return depth, max(parens, 0)


def _merge_overlaps(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
