"""The fast path for plain command lines declines or agrees with bashlex, exactly."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from synth.distill.fastshell import _bare_parse, _token_parse, _value, fast_parse
from synth.distill.load import AuditRecord
from synth.distill.shell import parse_line
from synth.record.transcript import split_statements
from synth.util.shell_lexer import lex, unquote

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def _record(line: str) -> AuditRecord:
    return AuditRecord(seq=7, source="bash-c", command=line, cwd="/workspace/sub", exit=0)


def _agrees(line: str) -> bool:
    """True when the fast path took the line (and then it must match bashlex)."""
    rec = _record(line)
    fast = parse_line(rec)
    try:
        slow = parse_line(rec, fast=False)
    except Exception:  # bashlex failing in a way parse_line does not catch
        assert fast_parse(line) is None, line
        return False
    assert fast == slow, line
    return fast_parse(line) is not None


def test_bundled_transcripts_agree_with_bashlex() -> None:
    lines = [s for script in sorted(TASKS.glob("*/agents/*.sh"))
             for s in split_statements(script.read_text(encoding="utf-8"))]
    assert len(lines) > 100
    taken = sum(_agrees(line) for line in lines)
    # Most agent lines are plain: the fast path must carry them, not decline everything.
    assert taken > len(lines) // 2


# Pieces of generated lines: inside the fast path's grammar and outside it.
_WORDS = ("pip", "install", "-e", ".", "numpy==1.26.4", "/opt/venv/bin/python", "-c", "cd",
          "export", "ls", "-la", "a=b", "x2", "12", "2", "~", "~/x", "*.whl", "a[b]", "é",
          "https://e.org/a#b", "file.tar.gz", "--opt=v", "%", "@", "a,b", "-", "=x", "[",
          "source", "/opt/venv/bin/activate", "deactivate", "unset", "X", "-j4", "#c",
          "if", "then", "fi", "for", "do", "done", "in", "time", "{", "}", "!", "[[", "]]",
          "x{a,b}", "(x)", "a\\ b", "`id`", "$(pwd)", "a\tb", "a&b")
_QUOTES = ("'a b'", "'$X'", "'say \"hi\"'", "'x!y'", "''", '""', '"a b"', '"$X/y"',
           '"${HOME}/z"', '"it\'s"', '"a $1"', '"$(id)"', '"a\\"b"', '"x!"', '"`id`"',
           "'#'", "\"'\"", "\"a\"'b'\"c\"", "'\"b\"'x", "x'a b'y", "'a'\"b\"", "'$X'y",
           "'\"$X\"'$X", "'$(pwd)'$X", "--o='a \"b\"'", "'a\\b'",
           '"a"x"b"', "'a'x'b'", "'a'$X'b'", '"$X"\'b\'', "$'a\\n'", '$"x"',
           "'unterminated", '"unterminated')
_PARAMS = ("$X", "${X}", "$HOME", "${HOME}/a", "$X_1y", "$1", "$?", "$@", "$$", "${X:-d}",
           "$", "${#X}")
_PREFIX = ("X=1", "X=$HOME", 'Y="a b"', "Z=''", "X+=1", "A[0]=1", "X=~/a", "PATH=/b:$PATH",
           "MAX_JOBS=4")
_OPS = ("&&", "||", "|", ";", "&", "|&", ";;", "&&", "||", "|", ";")
_REDIRS = (">", ">>", "<", "2>", "2>>", "2>&1", "&>", "&>>", ">&2", "1>&2", "<<", "<<<",
           ">|", "12>", "<>", "2>&1x", ">f")
_TARGETS = ("/dev/null", "out.log", "~/.bashrc", "'a b'", '"$X"', "$X", "/etc/profile.d/x")


def _word(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.55:
        return rng.choice(_WORDS)
    if pick < 0.8:
        return rng.choice(_QUOTES)
    if pick < 0.9:
        return rng.choice(_PARAMS)
    return rng.choice(_WORDS) + rng.choice(_QUOTES + _PARAMS)


def _command(rng: random.Random) -> str:
    parts = [rng.choice(_PREFIX) for _ in range(rng.choice((0, 0, 0, 1, 2)))]
    parts += [_word(rng) for _ in range(rng.randint(0 if parts else 1, 5))]
    for _ in range(rng.choice((0, 0, 1, 2))):
        redir = rng.choice(_REDIRS)
        target = "" if "&" in redir[1:] or redir == ">f" else rng.choice(_TARGETS)
        # Mostly at the end, sometimes between the assignments and words.
        parts.insert(len(parts) if rng.random() < 0.8 else rng.randint(0, len(parts)),
                     redir + rng.choice(("", " ")) + target)
    return " ".join(parts)


def _line(rng: random.Random) -> str:
    line = _command(rng)
    for _ in range(rng.choice((0, 0, 1, 1, 2, 3))):
        line += rng.choice(("", " ")) + rng.choice(_OPS) + rng.choice(("", " ", "  "))
        line += _command(rng) if rng.random() < 0.95 else ""
    return line + rng.choice(("", "", "", ";", " ", " &&", "\n", " # note"))


def _plain_line(rng: random.Random) -> str:
    """A line inside the grammar, built like an agent's: these must all be taken."""
    cmds = []
    for _ in range(rng.randint(1, 4)):
        words = [rng.choice(("pip", "cd", "export", "echo", "apt-get", "make", "ls"))]
        words += [rng.choice(("install", "-y", "numpy==2.0", "X=$HOME", "/w/a b"[:4],
                              "'a b'", '"$X/y"', "${X}", "~/.bashrc", ".", "-j4"))
                  for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            words.insert(0, rng.choice(("X=1", "MAX_JOBS=4", 'CC="gcc -O2"')))
        if rng.random() < 0.3:
            words.append(rng.choice(("> out", ">> ~/.bashrc", "2>/dev/null", "2>&1", "&> log",
                                     "< input")))
        cmds.append(" ".join(words))
        cmds.append(rng.choice((" && ", " || ", " | ", "; ")))
    return "".join(cmds[:-1])


def test_generated_corpus_agrees_with_bashlex() -> None:
    rng = random.Random(20261201)
    lines = [_line(rng) for _ in range(2500)]
    taken = sum(_agrees(line) for line in lines)
    assert taken > 60  # both sides of the grammar are exercised
    plain = [_plain_line(rng) for _ in range(500)]
    assert all(_agrees(line) for line in plain)


def _bare_line(rng: random.Random) -> str:
    """Lines of single-spaced words and operators, some with an operator character glued
    to a word, a reserved word, a comment or an odd assignment among them."""
    words = ("pip", "install", "numpy==2.0", "X=1", "MAX_JOBS=4", "A[0]=1", "X+=1", "cd",
             "/w", ".", "-j4", "ls", "in", "do", "[[", "#c", "a#b", "é", "a;", "a&&b", "&",
             "|&", ";;", "x|y", "=x", "~/a")
    parts: list[str] = []
    for _ in range(rng.randint(1, 4)):
        parts += [rng.choice(words) for _ in range(rng.randint(0, 4))]
        parts.append(rng.choice(("&&", "||", "|", ";", "&&", "|")))
    if rng.random() < 0.7:
        parts.pop()
    return " ".join(parts)


def test_bare_lines_read_as_the_general_way() -> None:
    """The per-command reading of a bare line gives what the per-token one gives."""
    rng = random.Random(20261203)
    lines = ([_bare_line(rng) for _ in range(3000)] + [_plain_line(rng) for _ in range(500)]
             + [_line(rng) for _ in range(1000)])
    taken = 0
    for line in lines:
        bare = _bare_parse(line)
        if bare is not None:
            taken += 1
            assert bare == _token_parse(line), line
    assert taken > 150  # the bare reading is exercised, not only its declines


def test_declines_what_it_does_not_know() -> None:
    for line in ("echo $(pwd)", "echo `id`", "a \\\n b", "if true; then x; fi", "a &",
                 "cat <<EOF\nx\nEOF", "echo a # c", "f() { x; }", "(cd a && b)", "! x",
                 "a |& b", "x >&2", "echo {a,b}", "a\tb", "a &&", "", "  ", "time make",
                 "A[0]=1 x", "X+=1", "> f cmd", "X=1 >f Y=2 cmd", "echo $1", "echo \"a\\\"b\""):
        assert fast_parse(line) is None, line


def test_a_word_stops_at_a_quote_it_cannot_read() -> None:
    """A ``"…"`` holding a backslash is outside the grammar, wherever it is in the word.
    CPython before 3.11.3 (Debian 12's 3.11.2) matched possessive quantifiers wrongly and
    let such a word run on past its quotes to the end of the line; the token pattern has
    none."""
    for line in ('grep -rn "^import\\|^from" --include=*.py . | head -40', 'a "b\\c" d',
                 'x"y\\z" | w', 'echo "a\\"b" && ls'):
        assert fast_parse(line) is None, line


def test_takes_plain_lines() -> None:
    cmds = fast_parse("X=1 pip install 'a b' \"$H/c\" > out 2>&1 | tee log && cd /w; ls")
    assert cmds is not None
    assert [(c.words, c.masked) for c in cmds] == [
        (("pip", "install", "a b", "$H/c"), True), (("tee", "log"), False),
        (("cd", "/w"), False), (("ls",), False)]
    assert cmds[0].assignments == ("X=1",)
    assert cmds[0].redirects == ((">", "out"), (">&", "1"))


def test_a_word_value_is_its_quote_removal() -> None:
    """Of every word the grammar takes, the value is the lexer's quote removal."""
    rng = random.Random(20261204)
    taken = 0
    for line in [_line(rng) for _ in range(2000)]:
        for token in lex(line).tokens:
            value = _value(token.text) if token.kind == "word" else None
            if value is not None:
                taken += 1
                assert value == unquote(token.text), token.text
    assert taken > 2000


@pytest.mark.parametrize("hostile", [
    "a" + " " * 50_000 + "$(", "a" + " " * 50_000 + "\\", " " * 50_000 + "|",
    "echo " + "'a b' " * 8_000 + "\"", "a " * 25_000 + "&", "x=" + "$x" * 25_000 + "`",
    'echo "$' + "a" * 50_000 + '\\"', 'echo "$' + "a" * 50_000 + '!"',
])
def test_long_hostile_lines_are_linear(hostile: str) -> None:
    """An audit line is untrusted: however long (50,000 characters here), the fast path
    answers in a fraction of a second. (Its token pattern used to retry the blanks before
    an unreadable character at every position, 20,000 spaces then ``$(`` took 19 s; and
    it read ``"$ab`` as ``$a`` then ``b`` too, so an unclosed string with a long name
    took 5 s at 8,000 characters.)"""
    t0 = time.perf_counter()
    fast_parse(hostile)
    assert time.perf_counter() - t0 < 3.0
