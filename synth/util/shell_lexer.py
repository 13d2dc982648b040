"""Shell text -> tokens: words with their quoting, operators, comments, here-documents.

The one lexer of synth's shell readers: the fast path for audited command lines
(:mod:`synth.distill.fastshell`) and the transcript splitter
(:mod:`synth.record.transcript`) read its tokens; bashlex stays as the full parser of the
audited lines the fast path declines (:mod:`synth.distill.shell`).

:func:`lex` follows bash's token rules (``man bash``: DEFINITIONS, QUOTING, REDIRECTION):

- blanks are spaces and tabs; a backslash-newline outside quotes joins two lines;
- a ``#`` where a token would start comments out the rest of the line;
- operators: ``&& || ;; ;& ;;& |& | ; & ( )`` and the newline (its own kind);
- redirections, each with its file descriptor number when digits come right before it:
  ``< > >> >| <> <& >& &> &>> << <<- <<<`` (``2>``, ``2>&`` …; the target is the next
  word);
- a word runs to the next blank or operator and keeps its quoting as written: ``'…'``,
  ``"…"``, ``$'…'``, ``$"…"``, backslash escapes, ``$NAME``, ``${…}``, ``$(…)``,
  ``$((…))``, backquotes and ``<(…)``/``>(…)`` nest inside it, across lines too;
  :func:`unquote` gives its value after quote removal;
- ``((…))`` where a command starts is one token (an arithmetic command, kind ``arith``);
- a here-document operator's next word is its delimiter (quoted: the body is literal);
  the bodies are read, in order, after the next newline of the same nesting level, up to
  the delimiter line (leading tabs dropped for ``<<-``): one ``heredoc`` token each, from
  the body's first line to the end of the delimiter line.

Not modelled: aliases, ``case`` patterns inside ``$(…)`` beyond counting ``case``/``esac``
words, ``{var}>`` redirections, extended globs.

The text is untrusted (an agent wrote it): lexing never raises and takes time linear in
the text (no pattern here can backtrack into a loop; nesting deeper than
:data:`MAX_NESTING` stops it). Bad input gives the tokens up to the fault and a
:class:`LexError`: an unclosed quote or substitution makes its word run to the end of the
text, an unterminated here-document its body.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NamedTuple

TokenKind = Literal["word", "operator", "redirect", "newline", "comment", "heredoc", "arith"]

#: ``$(`` inside ``"…"`` inside ``${`` …: deeper than this is refused as an error.
MAX_NESTING = 50

#: Characters that end a word (outside quotes and substitutions).
_DELIMITERS = frozenset(" \t\n|&;()<>")
#: The pieces of a word that need no nesting: unquoted characters, ``'…'``, ``"…"``
#: holding no escape or substitution but parameters, and the parameters ``$NAME``,
#: ``${NAME}`` and the special ones.
#: Each alternative starts with a character the others cannot, a name takes all of its
#: characters (``$ab`` is never ``$a`` then ``b``: that reading would make a ``"…"`` that
#: does not close cost time quadratic in its length), and nothing follows the loop in the
#: patterns below, so a match never backtracks into it.
_PARAM = (r"\$(?:[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_])|\{[A-Za-z_][A-Za-z0-9_]*\}"
          r"|[0-9?@#$!*-])")
_PIECES = (rf"(?:[^ \t\n|&;()<>'\"\\`$]+|'[^']*'|\"[^\"\\`$]*(?:{_PARAM}[^\"\\`$]*)*\""
           rf"|{_PARAM})")
#: The next token from ``pos``: blanks (and line continuations) first, then at most one
#: token's start, each kind its own group (:data:`_GROUP_KINDS`); a redirection comes
#: before a word, so that digits right before ``<`` or ``>`` are its fd number.
_NEXT = re.compile(
    r"(?:[ \t]|\\\n)*(?:([0-9]*(?:<<<|<>|<&|>&|>>|>\||<(?![<(])|>(?!\())|&>>|&>)"
    rf"|(#[^\n]*)|({_PIECES}+)"
    r"|(&&|\|\||;;&|;;|;&|\|&|[;&|])|(\n)|([()])|([0-9]*<<-?))?")
_REDIRECT, _COMMENT, _WORD, _OPERATOR, _NEWLINE, _PAREN, _HEREDOC = range(1, 8)
#: The same tokens for :func:`lex_simple`, all of a text at once: the blanks before each
#: token, then one group per kind, and a last group for a character that needs the
#: scanner (a quote it cannot read, a ``$(``, a parenthesis, …), so that every position
#: matches and ``findall`` never searches (a search would retry the blanks at each place).
_SIMPLE = re.compile(
    r"([ \t]*)(?:([0-9]*(?:<<<|<>|<&|>&|>>|>\||<(?![<(])|>(?!\())|&>>|&>)"
    rf"|(#[^\n]*)|({_PIECES}+)"
    r"|(&&|\|\||;;&|;;|;&|\|&|[;&|])|(\n)|(.)|\Z)")
#: Patterns that match at every position (each part is optional), as functions that
#: say so to the type checker.
_Match = Callable[[str, int], re.Match[str]]
_next: _Match = _NEXT.match  # type: ignore[assignment]
_more_pieces: _Match = re.compile(f"{_PIECES}*").match  # type: ignore[assignment]
_double_plain: _Match = re.compile(r"[^\"\\`$]*").match  # type: ignore[assignment]
_brace_plain: _Match = re.compile(r"[^}\"'\\`$]*").match  # type: ignore[assignment]
_arith_plain: _Match = re.compile(r"[^()]*").match  # type: ignore[assignment]
_BACKQUOTE = re.compile(r"[^`\\]*(?:\\.[^`\\]*)*`", re.DOTALL)
_ANSI_C = re.compile(r"[^'\\]*(?:\\.[^'\\]*)*'", re.DOTALL)
_parameter: _Match = re.compile(  # type: ignore[assignment]
    r"\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9?@#$!*-])?").match
#: Words after which a command starts (so ``((`` is arithmetic there).
_COMMAND_WORDS = frozenset({"if", "then", "elif", "else", "do", "while", "until", "for",
                            "!", "time", "{"})
_GROUP_KINDS: dict[int, TokenKind] = {
    _REDIRECT: "redirect", _WORD: "word", _OPERATOR: "operator", _NEWLINE: "newline",
    _COMMENT: "comment", _PAREN: "operator", _HEREDOC: "redirect"}


def _command_starts(prev: tuple[TokenKind, str] | None) -> bool:
    """Whether a command starts after the token ``prev`` (None: at the start)."""
    if prev is None:
        return True
    kind, text = prev
    return (kind in ("operator", "newline") and text != ")") or text in _COMMAND_WORDS


class Token(NamedTuple):
    """One token: its kind, its exact source text, and where that text is."""

    kind: TokenKind
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Heredoc:
    """A here-document: its operator and delimiter, and where its body is."""

    #: The ``<<`` / ``<<-`` operator (with any fd number) up to the end of its delimiter word.
    op_start: int
    op_end: int
    #: The delimiter after quote removal.
    delimiter: str
    #: The delimiter was quoted (``<<'EOF'``, ``<<\\EOF``): the body is not expanded.
    quoted: bool
    #: ``<<-``: leading tabs are dropped from the body and the delimiter line.
    strip_tabs: bool
    #: The body's lines, up to the start of the delimiter line.
    body_start: int
    body_end: int
    #: The end of the delimiter line (before its newline); the end of the text when the
    #: body never ends (then ``terminated`` is False).
    end: int
    terminated: bool


@dataclass(frozen=True)
class LexError:
    """Why lexing stopped short: the text from ``pos`` on is not complete shell."""

    pos: int
    message: str

    def __str__(self) -> str:
        return f"{self.message} (at offset {self.pos})"


class Lexed(NamedTuple):
    """The tokens of a text in order (blanks and line continuations are not tokens), its
    here-documents, and the first error (None when the text lexed cleanly)."""

    tokens: tuple[Token, ...]
    heredocs: tuple[Heredoc, ...]
    error: LexError | None


def lex(text: str) -> Lexed:
    """The tokens of a shell text; never raises (see the module's docstring)."""
    simple = lex_simple(text)
    if simple is not None:
        return Lexed(simple, (), None)
    lexer = _Lexer(text)
    lexer.run(0, lexer.tokens)
    return Lexed(tuple(lexer.tokens), tuple(lexer.heredocs), lexer.error)


_new_token = tuple.__new__


def lex_simple(text: str) -> tuple[Token, ...] | None:
    """The tokens :func:`lex` gives a text that needs no scanner — no parenthesis,
    here-document, escape, substitution beyond ``$NAME``/``${NAME}``, or quote it cannot
    close: the common audited line — read by one ``findall``; None for any other text
    (:func:`lex` then reads it with the scanner; a test checks that both give the same
    tokens). For a caller that declines such text anyway."""
    out: list[Token] = []
    append, new = out.append, _new_token  # locals: looked up once, not once a token
    pos = 0
    for blank, redirect, comment, word, operator, newline, other in _SIMPLE.findall(text):
        start = pos + len(blank)
        if word:
            kind: TokenKind = "word"
            token = word
        elif operator:
            kind, token = "operator", operator
        elif redirect:
            kind, token = "redirect", redirect
        elif newline:
            kind, token = "newline", newline
        elif comment:
            kind, token = "comment", comment
        elif other:
            return None
        else:
            break  # the end of the text
        pos = start + len(token)
        append(new(Token, (kind, token, start, pos)))
    return tuple(out)


class _Pending(NamedTuple):
    op_start: int
    op_end: int
    delimiter: str
    quoted: bool
    strip_tabs: bool


class _Lexer:
    """One pass over a text. Every scanning method takes the position after an opening
    and returns the position after its end; on an error it records it and returns the end
    of the text, so every caller stops."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)
        self.tokens: list[Token] = []
        self.heredocs: list[Heredoc] = []
        self.error: LexError | None = None
        self.depth = 0

    def fail(self, pos: int, message: str) -> int:
        if self.error is None:
            self.error = LexError(pos, message)
        return self.n

    def run(self, pos: int, out: list[Token] | None, opening: int = 0) -> int:
        """Tokens from ``pos``: to the end of the text (``out`` collects them), or, nested
        in the ``$(``/``<(`` at ``opening`` (``out`` is None), to the ``)`` that closes it.

        The common tokens (words, operators) take the first branches; a here-document's
        operator leaves ``delimiter`` set for the word after it, whose body the next
        newline reads."""
        text, n = self.text, self.n
        pending: list[_Pending] = []
        delimiter: tuple[int, bool] | None = None
        prev: tuple[TokenKind, str] | None = None  # for ``((``: does a command start here?
        parens = cases = 0
        kind: TokenKind
        while pos < n:
            m = _next(text, pos)
            group = m.lastindex
            if group == _WORD or group is None:
                start, end = self.word_span(m, group)
                if start == n:
                    break
                kind, token = "word", text[start:end]
                if delimiter is not None:
                    pending.append(_Pending(delimiter[0], end, unquote(token),
                                            _is_quoted(token), delimiter[1]))
                    delimiter = None
                elif out is None and token in ("case", "esac"):
                    cases += 1 if token == "case" else -1
            else:
                start, end = m.start(group), m.end()
                kind, token = _GROUP_KINDS[group], text[start:end]
                delimiter = None
                if group == _PAREN:
                    if token == "(" and text.startswith("(", end) and _command_starts(prev):
                        kind, end = "arith", self.arith(end + 1, 2, start)
                        token = text[start:end]
                    elif out is None:
                        if token == "(":
                            parens += 1
                        elif not parens and not cases:
                            return end
                        else:
                            parens = max(parens - 1, 0)
                elif group == _HEREDOC:
                    delimiter = (start, token.endswith("-"))
            if out is not None:
                out.append(_new_token(Token, (kind, token, start, end)))
            pos = end
            if group == _NEWLINE and pending:
                pos = self.bodies(pos, pending, out)
                pending = []
            if group != _COMMENT:
                prev = (kind, token)
        for doc in pending:  # the text ended before the line that holds the bodies
            self.unterminated(doc, n, out)
        if out is None:
            return self.fail(opening, f"unclosed {text[opening:opening + 2]!r}")
        return pos

    # ------------------------------------------------------------------ words
    def word_span(self, m: re.Match[str], group: int | None) -> tuple[int, int]:
        """Where the word is whose start ``m`` matched (``group`` None: a word that starts
        with a quote, an escape or a ``$`` the pattern leaves to the scanner)."""
        if group is None:
            start = m.end()
            return start, start if start == self.n else max(self.word(start, start),
                                                            start + 1)
        start, end = m.start(group), m.end()
        if end < self.n and self.text[end] not in _DELIMITERS:
            end = self.word(start, end)
        return start, end

    def word(self, start: int, pos: int) -> int:
        """The rest of a word from ``pos`` (``start`` is where the word began)."""
        text, n = self.text, self.n
        while pos < n:
            c = text[pos]
            if c in _DELIMITERS:
                if c not in "<>" or pos != start or not text.startswith("(", pos + 1):
                    return pos
                pos = self.nested(pos + 2)  # ``<(…)``, ``>(…)``: a process substitution
            elif c == "\\":
                pos = min(pos + 2, n)
            elif c == "'":
                close = text.find("'", pos + 1)
                if close < 0:
                    return self.fail(pos, "unclosed single quote")
                pos = close + 1
            elif c == '"':
                pos = self.double(pos + 1)
            elif c == "`":
                pos = self.backquote(pos + 1)
            elif c == "$":
                pos = self.dollar(pos)
            else:  # not reached: the pieces take every other character
                pos += 1
            pos = _more_pieces(text, pos).end()
        return pos

    def double(self, pos: int) -> int:
        """After an opening ``"``."""
        text, n = self.text, self.n
        opening = pos - 1
        while True:
            pos = _double_plain(text, pos).end()
            if pos >= n:
                return self.fail(opening, "unclosed double quote")
            c = text[pos]
            if c == '"':
                return pos + 1
            if c == "\\":
                pos += 2
            elif c == "`":
                pos = self.backquote(pos + 1)
            else:
                pos = self.dollar(pos, quoted=True)

    def backquote(self, pos: int) -> int:
        """After an opening backquote."""
        m = _BACKQUOTE.match(self.text, pos)
        return self.fail(pos - 1, "unclosed backquote") if m is None else m.end()

    def dollar(self, pos: int, quoted: bool = False) -> int:
        """At a ``$``: a parameter, ``${…}``, ``$(…)``, ``$((…))``, ``$'…'``, ``$"…"`` or
        a plain ``$`` (``quoted``: inside ``"…"``, where ``$'`` is not a quote)."""
        text = self.text
        nxt = text[pos + 1:pos + 2]
        if nxt == "(":
            if text.startswith("(", pos + 2):
                return self.arith(pos + 3, 2, pos)
            return self.nested(pos + 2)
        if nxt == "{":
            return self.brace(pos + 2, quoted)
        if nxt == "'" and not quoted:
            m = _ANSI_C.match(text, pos + 2)
            return self.fail(pos, "unclosed $'") if m is None else m.end()
        if nxt == '"' and not quoted:
            return self.double(pos + 2)
        return _parameter(text, pos).end()

    def nested(self, pos: int) -> int:
        """After ``$(``, ``<(`` or ``>(``: the commands up to the closing ``)``."""
        if self.depth >= MAX_NESTING:
            return self.fail(pos, f"nested deeper than {MAX_NESTING} levels")
        self.depth += 1
        try:
            return self.run(pos, None, pos - 2)
        finally:
            self.depth -= 1

    def brace(self, pos: int, quoted: bool) -> int:
        """After ``${``: up to its ``}``, through the quotes and substitutions inside (a
        ``'`` is no quote there when the ``${`` is inside ``"…"``)."""
        if self.depth >= MAX_NESTING:
            return self.fail(pos, f"nested deeper than {MAX_NESTING} levels")
        text, n = self.text, self.n
        opening = pos - 2
        self.depth += 1
        try:
            while True:
                pos = _brace_plain(text, pos).end()
                if pos >= n:
                    return self.fail(opening, "unclosed '${'")
                c = text[pos]
                if c == "}":
                    return pos + 1
                if c == "\\":
                    pos += 2
                elif c == "'":
                    close = pos if quoted else text.find("'", pos + 1)
                    if close < 0:
                        return self.fail(pos, "unclosed single quote")
                    pos = close + 1
                elif c == '"':
                    pos = self.double(pos + 1)
                elif c == "`":
                    pos = self.backquote(pos + 1)
                else:
                    pos = self.dollar(pos, quoted)
        finally:
            self.depth -= 1

    def arith(self, pos: int, depth: int, opening: int) -> int:
        """After the ``((`` or ``$((`` at ``opening``: up to the parenthesis that balances
        them."""
        text, n = self.text, self.n
        while True:
            pos = _arith_plain(text, pos).end()
            if pos >= n:
                return self.fail(opening, "unclosed '(('")
            depth += 1 if text[pos] == "(" else -1
            pos += 1
            if not depth:
                return pos

    # ------------------------------------------------------------ here-documents
    def bodies(self, pos: int, pending: list[_Pending], out: list[Token] | None) -> int:
        """The bodies of ``pending``, in order, from ``pos`` (the line after their
        operators); returns where the text after the last one starts."""
        text, n = self.text, self.n
        for doc in pending:
            body_start = line_start = pos
            while line_start < n:
                eol = text.find("\n", line_start)
                line_end = n if eol < 0 else eol
                line = text[line_start:line_end]
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    self.heredoc(doc, body_start, line_start, line_end, out)
                    pos = line_end if eol < 0 else eol + 1
                    break
                line_start = line_end + 1
            else:
                self.unterminated(doc, body_start, out)
                pos = n
        return pos

    def heredoc(self, doc: _Pending, body_start: int, body_end: int, end: int,
                out: list[Token] | None) -> None:
        if out is None:
            return  # a here-document inside a substitution is part of its word
        self.heredocs.append(Heredoc(doc.op_start, doc.op_end, doc.delimiter, doc.quoted,
                                     doc.strip_tabs, body_start, body_end, end, True))
        out.append(_new_token(Token, ("heredoc", self.text[body_start:end], body_start, end)))

    def unterminated(self, doc: _Pending, body_start: int, out: list[Token] | None) -> None:
        n = self.n
        if out is not None:
            self.heredocs.append(Heredoc(doc.op_start, doc.op_end, doc.delimiter, doc.quoted,
                                         doc.strip_tabs, body_start, n, n, False))
            if body_start < n:
                out.append(_new_token(Token, ("heredoc", self.text[body_start:], body_start,
                                              n)))
        self.fail(doc.op_start, f"here-document delimited by {doc.delimiter!r} has no end")


# ------------------------------------------------------------------ quote removal
_QUOTING = re.compile(r"['\"\\]")
#: What quote removal must read with the scanner: escapes, backquotes, ``$(``, ``${``,
#: ``$'…'``, ``$"…"``; a word without them has only plain text, ``$NAME``, ``'…'`` and
#: ``"…"`` holding no quote, which one substitution unquotes.
_NEEDS_SCAN = re.compile(r"[\\`]|\$[({'\"]")
_SIMPLE_QUOTES = re.compile(r"'([^']*)'?|\"([^\"]*)\"?")
_unquoted_plain: _Match = re.compile(r"[^'\"\\$`]*").match  # type: ignore[assignment]
_DOUBLE_ESCAPE = re.compile(r"\\([$`\"\\\n])")
_ANSI_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_ANSI = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
         "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _is_quoted(word: str) -> bool:
    return _QUOTING.search(word) is not None


def _ansi(m: re.Match[str]) -> str:
    code = m.group(1)
    if code[0] == "x":
        return chr(int(code[1:], 16))
    if code[0] in "01234567":
        return chr(int(code, 8) & 0xFF)
    return _ANSI.get(code, m.group(0))


def _simple_quote(m: re.Match[str]) -> str:
    single = m.group(1)
    return m.group(2) if single is None else single


def _double_escape(m: re.Match[str]) -> str:
    return "" if m.group(1) == "\n" else m.group(1)


def unquote(word: str) -> str:
    """A word's value after quote removal, without expansion: ``'a b'`` -> ``a b``,
    ``"x\\"y"`` -> ``x"y``, ``a\\ b`` -> ``a b``, ``$'a\\tb'`` -> ``a<tab>b``; ``$X``,
    ``${…}``, ``$(…)`` and backquotes stay as written (in ``"…"`` too), and a
    backslash-newline outside single quotes disappears. An unclosed quote runs to the end.
    Linear, like :func:`lex`."""
    if _QUOTING.search(word) is None:
        return word
    if _NEEDS_SCAN.search(word) is None:  # only '…', "…" and $NAME: the common case
        return _SIMPLE_QUOTES.sub(_simple_quote, word)
    scan = _Lexer(word)
    out: list[str] = []
    pos, n = 0, len(word)
    while pos < n:
        c = word[pos]
        if c == "'":
            close = word.find("'", pos + 1)
            end = n if close < 0 else close + 1
            out.append(word[pos + 1:close if close >= 0 else n])
        elif c == "\\":
            end = pos + 2
            out.append(word[pos + 1:end].replace("\n", ""))
        elif c == '"' or word.startswith('$"', pos):
            end = _unquote_double(scan, word, pos + 1 if c == '"' else pos + 2, out)
        elif word.startswith("$'", pos):
            end = scan.dollar(pos)
            body = word[pos + 2:end - 1 if end - 1 > pos + 1 and word[end - 1] == "'" else end]
            out.append(_ANSI_ESCAPE.sub(_ansi, body))
        elif c == "$":
            end = scan.dollar(pos)
            out.append(word[pos:end])
        elif c == "`":
            end = scan.backquote(pos + 1)
            out.append(word[pos:end])
        else:
            end = _unquoted_plain(word, pos).end()
            out.append(word[pos:end])
        pos = end
    return "".join(out)


def _unquote_double(scan: _Lexer, word: str, pos: int, out: list[str]) -> int:
    """The value of a ``"…"`` whose text starts at ``pos``; returns the position after it."""
    n = len(word)
    while pos < n:
        plain = _double_plain(word, pos).end()
        out.append(word[pos:plain])
        pos = plain
        if pos >= n:
            break
        c = word[pos]
        if c == '"':
            return pos + 1
        if c == "\\":
            end = min(pos + 2, n)
            out.append(_DOUBLE_ESCAPE.sub(_double_escape, word[pos:end]))
        elif c == "`":
            end = scan.backquote(pos + 1)
            out.append(word[pos:end])
        else:
            end = scan.dollar(pos)
            out.append(word[pos:end])
        pos = end
    return n
