"""Transcripts: setup scripts split into the top-level statements an agent would have run.

The replay agent runs each statement of a transcript as its own ``bash -c`` call, the way
LLM agents issue one tool call per command: ``cd`` and ``export`` do not carry over from one
statement to the next, exactly as they would not between an agent's tool calls.

The script is read through the shell lexer (:mod:`synth.util.shell_lexer`): quotes,
substitutions, comments and here-documents are its tokens, so a statement ends only at a
newline token of the top level, outside every compound command and parenthesis.
"""

from __future__ import annotations

from collections.abc import Sequence

from synth.util.shell_lexer import Token, lex

#: Reserved words that open and close a compound command (where a command starts).
_OPEN = frozenset({"if", "for", "while", "until", "case", "select", "{"})
_CLOSE = frozenset({"fi", "done", "esac", "}"})
#: Reserved words after which a command starts again.
_COMMAND_AFTER = frozenset({"if", "then", "elif", "else", "do", "while", "until", "{", "!",
                            "time"})
#: A line ending in one of these goes on on the next line.
_CONTINUES = frozenset({"&&", "||", "|", "|&"})
_CASE_ITEM_ENDS = frozenset({";;", ";&", ";;&"})


def split_statements(text: str) -> list[str]:
    """Split a bash script into its top-level statements, in order.

    Contract (the replay agent runs each returned string as one ``bash -c``):

    - A statement is one complete top-level command line: a simple command, a pipeline, or
      a list joined by ``&&``, ``||``, ``;`` or ``&`` on one logical line — or a compound
      command (``if``/``for``/``while``/``until``/``case``/``{ …; }``/``( … )``, a function
      definition) with everything up to its closing keyword.
    - A logical line continues across a backslash-newline, after a trailing ``&&``, ``||``
      or ``|``, and inside a quoted string or a substitution spanning lines.
    - Here-documents belong to the statement whose line opens them: the statement text runs
      through the body and the delimiter line (``<<EOF``, ``<<'EOF'``, ``<<"EOF"``,
      ``<<-EOF``; ``<<<`` is a here-string, not a here-document).
    - Each statement is the exact source text (never rewritten), with surrounding
      whitespace stripped; a trailing comment on a statement's last line is not part of it.
      Blank lines, comment lines and a shebang between statements are dropped.
    - Several commands on one line (``a; b``) stay one statement: one line is one call.
    - Reserved words count only where a command starts (``echo done`` closes nothing);
      ``case`` patterns are not parentheses.
    - Never raises: an unterminated construct (a quote, a here-document, a block) takes the
      rest of the script.
    """
    lexed = lex(text)
    spans = _spans(lexed.tokens, len(text))
    if spans and any(not doc.terminated for doc in lexed.heredocs):
        # A here-document without its delimiter line takes the rest of the script (its
        # body is the rest, so its statement is the last one).
        spans[-1] = (spans[-1][0], len(text))
    statements = []
    for start, end in spans:
        piece = text[start:end].strip()
        if piece:
            statements.append(piece)
    return statements


class _Statement:
    """What is open in the statement being read, token by token."""

    __slots__ = ("blocks", "command", "function", "last", "name", "parens", "pattern",
                 "subject")

    def __init__(self) -> None:
        #: The open compound commands' first words, innermost last.
        self.blocks: list[str] = []
        #: Parentheses open outside every compound command (``( … )`` subshells).
        self.parens = 0
        #: A command may start at the next word (so a reserved word counts there).
        self.command = True
        #: In a ``case``: 1 after ``case`` (its word comes next), 2 after that word (``in``
        #: comes next).
        self.subject = 0
        #: In a ``case``, where a pattern is read (up to its ``)``).
        self.pattern = False
        #: A function definition: 1 after ``function`` (its name comes next), 2 after the
        #: name or ``NAME ()``, when its body may still start on a later line; 3 after
        #: ``NAME (``.
        self.function = 0
        #: The last token was a word where a command starts that can name a function
        #: (``x=`` of ``x=()`` cannot).
        self.name = False
        #: The last token that is not a comment or a newline.
        self.last = ""

    def complete(self) -> bool:
        return (not self.blocks and not self.parens and not self.function
                and self.last not in _CONTINUES)

    def word(self, word: str) -> None:
        command = self.command
        self.last = word
        self.name = command and "=" not in word
        if self.function == 1:  # the name after ``function``
            self.function, self.command, self.name = 2, True, True
            return
        self.function = 0
        if self.subject:
            self.subject += 1
            if self.subject == 3:  # ``in``: the patterns start
                self.subject, self.pattern = 0, True
        elif self.pattern:
            if word == "esac":
                self.close()
        elif command and word in _OPEN:
            self.blocks.append(word)
            self.subject = 1 if word == "case" else 0
        elif command and word in _CLOSE:
            self.close()
        elif command and word == "function":
            self.function = 1
        self.command = command and word in _COMMAND_AFTER and not self.subject

    def close(self) -> None:
        if self.blocks:
            self.blocks.pop()
        self.pattern = False

    def operator(self, op: str) -> None:
        # ``NAME (`` then ``)``: a function's body follows.
        header = op == ")" and self.function == 3 and self.last == "("
        opens_header = op == "(" and self.name
        if self.pattern:
            self.pattern = op != ")"  # ``(a|b)``: its ``)`` ends the pattern
        elif op in ("(", ")") and not self.blocks:
            self.parens = self.parens + 1 if op == "(" else max(self.parens - 1, 0)
        elif op in _CASE_ITEM_ENDS and self.blocks[-1:] == ["case"]:
            self.pattern = True
        self.function = 2 if header else 3 if opens_header else 0
        self.command = True
        self.last = op
        self.name = False

    def other(self, text: str) -> None:
        """A redirection or an arithmetic command: no command starts after it."""
        self.function = 0
        self.command = False
        self.last = text
        self.name = False


def _spans(tokens: Sequence[Token], n: int) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each statement: from its first token to its last one (or
    the end of the last here-document it opened); one left open runs to the end (``n``)."""
    spans: list[tuple[int, int]] = []
    st = _Statement()
    start: int | None = None
    end = 0
    for kind, text, t_start, t_end in tokens:
        if kind == "comment":
            continue
        if kind == "heredoc":
            if start is None and spans:  # the body after the line that ended a statement
                spans[-1] = (spans[-1][0], t_end)
            else:
                end = t_end
            continue
        if kind == "newline":
            if start is not None and st.complete():
                spans.append((start, end))
                start, st = None, _Statement()
            elif st.blocks or st.parens:
                st.command = not st.pattern
            continue
        if start is None:
            start = t_start
        end = t_end
        if kind == "word":
            st.word(text)
        elif kind == "operator":
            st.operator(text)
        else:
            st.other(text)
    if start is not None:
        spans.append((start, end if st.complete() else n))
    return spans
