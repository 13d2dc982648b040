"""The shell lexer: tokens with their exact text and place, here-documents, and errors."""

from __future__ import annotations

import random
import time

import pytest

from synth.util import shell_lexer
from synth.util.shell_lexer import MAX_NESTING, Heredoc, Token, lex, unquote


def kinds(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` of every token, checking that each token's text is its span."""
    lexed = lex(text)
    assert lexed.error is None, lexed.error
    for token in lexed.tokens:
        assert text[token.start:token.end] == token.text, token
    return [(t.kind, t.text) for t in lexed.tokens]


def words(text: str) -> list[str]:
    return [t for k, t in kinds(text) if k == "word"]


def test_words_operators_and_positions() -> None:
    assert lex("cd /w && pip  install x").tokens == (
        Token("word", "cd", 0, 2), Token("word", "/w", 3, 5), Token("operator", "&&", 6, 8),
        Token("word", "pip", 9, 12), Token("word", "install", 14, 21),
        Token("word", "x", 22, 23))
    assert kinds("a&&b||c;d|e&f;;g|&h;&i;;&j(k)l\nm") == [
        ("word", "a"), ("operator", "&&"), ("word", "b"), ("operator", "||"), ("word", "c"),
        ("operator", ";"), ("word", "d"), ("operator", "|"), ("word", "e"),
        ("operator", "&"), ("word", "f"), ("operator", ";;"), ("word", "g"),
        ("operator", "|&"), ("word", "h"), ("operator", ";&"), ("word", "i"),
        ("operator", ";;&"), ("word", "j"), ("operator", "("), ("word", "k"),
        ("operator", ")"), ("word", "l"), ("newline", "\n"), ("word", "m")]
    assert kinds("\t a \t") == [("word", "a")]
    assert kinds("") == [] and kinds("  \t ") == []


def test_redirections_and_their_fd_numbers() -> None:
    assert kinds("a 2>&1 >f 2>>g &>h &>>i <j <>k >|l <&3 1>&2 12>m x2>n") == [
        ("word", "a"), ("redirect", "2>&"), ("word", "1"), ("redirect", ">"), ("word", "f"),
        ("redirect", "2>>"), ("word", "g"), ("redirect", "&>"), ("word", "h"),
        ("redirect", "&>>"), ("word", "i"), ("redirect", "<"), ("word", "j"),
        ("redirect", "<>"), ("word", "k"), ("redirect", ">|"), ("word", "l"),
        ("redirect", "<&"), ("word", "3"), ("redirect", "1>&"), ("word", "2"),
        ("redirect", "12>"), ("word", "m"), ("word", "x2"), ("redirect", ">"), ("word", "n")]
    assert kinds("cat <<< 'x y'") == [("word", "cat"), ("redirect", "<<<"),
                                      ("word", "'x y'")]
    assert kinds("a 2&>f") == [("word", "a"), ("word", "2"), ("redirect", "&>"),
                               ("word", "f")]


def test_quoting_keeps_a_word_whole() -> None:
    assert words("""echo 'a b' "c d" e\\ f x'y z'w "$(echo "p q")" $'t\\'u' $"v w" """) == [
        "echo", "'a b'", '"c d"', "e\\ f", "x'y z'w", '"$(echo "p q")"', "$'t\\'u'",
        '$"v w"']
    assert words('echo "a \\" ; b" \'c " d\' "it\'s"') == [
        "echo", '"a \\" ; b"', "'c \" d'", '"it\'s"']
    assert words("echo 'a\nb' \"c\nd\"") == ["echo", "'a\nb'", '"c\nd"']


def test_substitutions_nest() -> None:
    assert words("echo $(cd /w && ls | grep ')' ) x") == [
        "echo", "$(cd /w && ls | grep ')' )", "x"]
    assert words("a=$(echo $(date) \"$(id -u)\")b c") == [
        "a=$(echo $(date) \"$(id -u)\")b", "c"]
    assert words("echo `ls -l | wc`x ${HOME:-/root}/a ${x//\\}/y} ${#x} $((1 + (2*3)))") == [
        "echo", "`ls -l | wc`x", "${HOME:-/root}/a", "${x//\\}/y}", "${#x}",
        "$((1 + (2*3)))"]
    assert words("diff <(ls a) >(cat) $(case x in a) echo;; esac) z") == [
        "diff", "<(ls a)", ">(cat)", "$(case x in a) echo;; esac)", "z"]
    assert words("echo ${x:-'}'} \"${y:-it's}\"") == ["echo", "${x:-'}'}", "\"${y:-it's}\""]
    assert words("x=$(\n  ls # a comment )\n) y") == ["x=$(\n  ls # a comment )\n)", "y"]


def test_comments() -> None:
    assert kinds("#!/bin/bash\nls # list\na#b $# ${#x};#c") == [
        ("comment", "#!/bin/bash"), ("newline", "\n"), ("word", "ls"),
        ("comment", "# list"), ("newline", "\n"), ("word", "a#b"), ("word", "$#"),
        ("word", "${#x}"), ("operator", ";"), ("comment", "#c")]
    assert kinds("echo '#' \"#\" \\#x") == [("word", "echo"), ("word", "'#'"),
                                             ("word", '"#"'), ("word", "\\#x")]


def test_line_continuations() -> None:
    assert kinds("pip install \\\n  numpy \\\n  scipy") == [
        ("word", "pip"), ("word", "install"), ("word", "numpy"), ("word", "scipy")]
    assert words("ab\\\ncd \"x\\\ny\" 'p\\\nq'") == ["ab\\\ncd", '"x\\\ny"', "'p\\\nq'"]
    assert unquote("ab\\\ncd") == "abcd" and unquote('"x\\\ny"') == "xy"
    assert unquote("'p\\\nq'") == "p\\\nq"


def test_heredocs() -> None:
    text = "cat <<EOF > f && cat <<-'E N' | tee\nbody $x\n# no comment\nEOF\n\tone\n\tE N\nls\n"
    lexed = lex(text)
    assert lexed.error is None
    assert [(t.kind, t.text) for t in lexed.tokens] == [
        ("word", "cat"), ("redirect", "<<"), ("word", "EOF"), ("redirect", ">"),
        ("word", "f"), ("operator", "&&"), ("word", "cat"), ("redirect", "<<-"),
        ("word", "'E N'"), ("operator", "|"), ("word", "tee"), ("newline", "\n"),
        ("heredoc", "body $x\n# no comment\nEOF"), ("heredoc", "\tone\n\tE N"),
        ("word", "ls"), ("newline", "\n")]
    first, second = lexed.heredocs
    body = text.index("body")
    assert first == Heredoc(op_start=4, op_end=9, delimiter="EOF", quoted=False,
                            strip_tabs=False, body_start=body, body_end=body + 21,
                            end=body + 24, terminated=True)
    assert text[first.body_start:first.body_end] == "body $x\n# no comment\n"
    assert (second.delimiter, second.quoted, second.strip_tabs) == ("E N", True, True)
    for op, delimiter in (("<<\"EOF\"", "EOF"), ("<<\\EOF", "EOF"), ("<< E'O'F", "EOF"),
                          ("<<$X", "$X")):
        doc, = lex(f"cat {op}\nx\n{delimiter}\n").heredocs
        assert doc.terminated and doc.delimiter == delimiter
        assert doc.quoted == (op != "<<$X")
    # Only the exact delimiter line ends the body (leading tabs too, for <<- only).
    doc, = lex("cat <<E\n E\nE \n\tE\nE").heredocs
    assert doc.terminated and doc.body_end == 17
    # ``((…))`` where a command starts is arithmetic: its ``<<`` is no here-document.
    assert kinds("((x << 2)); if ((y)); then :; fi") == [
        ("arith", "((x << 2))"), ("operator", ";"), ("word", "if"), ("arith", "((y))"),
        ("operator", ";"), ("word", "then"), ("word", ":"), ("operator", ";"),
        ("word", "fi")]
    # A here-document inside a substitution is part of its word.
    assert words("x=$(cat <<EOF\n)\nEOF\n) y") == ["x=$(cat <<EOF\n)\nEOF\n)", "y"]


def test_unquote() -> None:
    cases = {"plain": "plain", "'a b'": "a b", '"a b"': "a b", "a\\ b": "a b",
             '"x\\"y\\$z\\q"': 'x"y$z\\q', "x'y'\"z\"": "xyz", "$'a\\tb\\x41\\101\\''": "a\tbAA'",
             '$"v"': "v", '"$X/y"': "$X/y", '"$(echo "a b")"c': '$(echo "a b")c',
             "`echo 'x'`": "`echo 'x'`", "${x:-'a'}": "${x:-'a'}", "'open": "open",
             '"open': "open", "": "", "\\": ""}
    for word, value in cases.items():
        assert unquote(word) == value, word


@pytest.mark.parametrize(("text", "message", "pos"), [
    ("echo 'open", "unclosed single quote", 5),
    ('echo "open $x', "unclosed double quote", 5),
    ("echo `open", "unclosed backquote", 5),
    ("echo $(open", "unclosed '$('", 5),
    ("echo <(open", "unclosed '<('", 5),
    ("echo ${open", "unclosed '${'", 5),
    ("echo $((1 +", "unclosed '(('", 5),
    ("echo $'open", "unclosed $'", 5),
    ("echo $(a 'b)", "unclosed single quote", 9),
    ("cat <<EOF\nbody\n", "here-document delimited by 'EOF' has no end", 4),
    ("cat <<EOF", "here-document delimited by 'EOF' has no end", 4),
])
def test_bad_input_ends_in_an_error(text: str, message: str, pos: int) -> None:
    lexed = lex(text)
    assert lexed.error is not None
    assert (lexed.error.message, lexed.error.pos) == (message, pos)
    assert str(lexed.error) == f"{message} (at offset {pos})"
    first = text.split(maxsplit=1)[0]
    assert lexed.tokens[0] == Token("word", first, 0, len(first))
    # What is left open runs to the end of the text.
    assert lexed.tokens[-1].end == len(text) or lexed.heredocs[-1].end == len(text)


def test_unterminated_heredoc_body_runs_to_the_end() -> None:
    lexed = lex("cat <<A <<B\nx\nA\ny")
    assert [t.kind for t in lexed.tokens][-2:] == ["heredoc", "heredoc"]
    a, b = lexed.heredocs
    assert a.terminated and not b.terminated and b.end == len("cat <<A <<B\nx\nA\ny")


def test_nesting_deeper_than_the_limit_is_an_error() -> None:
    text = "echo " + "$(" * (MAX_NESTING + 1) + "x" + ")" * (MAX_NESTING + 1)
    lexed = lex(text)
    assert lexed.error is not None and "nested deeper" in lexed.error.message
    ok = "echo " + "$(" * MAX_NESTING + "x" + ")" * MAX_NESTING
    assert lex(ok).error is None


@pytest.mark.parametrize("hostile", [
    "'" + "a" * 50_000, '"' + "\\\"" * 25_000, "$(" * 25_000, "${" * 25_000,
    "`" + "\\`" * 25_000, "$((" * 17_000, "((" * 25_000, "<<E " * 12_000 + "\n",
    "cat <<E\n" + "x\n" * 25_000, "a" + " " * 50_000 + "$(", " " * 50_000 + "'",
    "a" * 50_000 + "{", "\\\n" * 25_000, "\n" * 50_000, "#" * 50_000,
    "1" * 50_000 + "x", '"$' * 25_000, "$'" + "\\'" * 25_000, "x=" + "$x" * 25_000,
    "<(" * 25_000, ";" * 50_000, "'a'" * 17_000 + "'", 'echo "$' + "a" * 50_000 + '\\"',
    '"${' + "a" * 50_000, "a=" + "1" * 50_000 + ">",
])
def test_long_hostile_input_is_linear(hostile: str) -> None:
    """Untrusted text never makes the lexer backtrack or recurse without bound: each of
    these (50,000 characters or so) lexes in a fraction of a second, quote removal of it
    as one word too, where a pass quadratic in its length would take a minute or more."""
    t0 = time.perf_counter()
    lexed = lex(hostile)
    unquote(hostile)
    assert time.perf_counter() - t0 < 3.0
    assert lexed.tokens or lexed.error or hostile == "\\\n" * 25_000


def _fuzz(rng: random.Random) -> str:
    alphabet = ("a", "b", " ", " ", "\t", "\n", "'", '"', "\\", "`", "$", "$(", "${", ")",
                "}", "(", "|", "&", ";", "<", ">", "<<", "#", "2", "=", "x y", "EOF\n")
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))


def test_tokens_cover_the_text_in_order() -> None:
    """On any text: tokens are in order, do not overlap, and each is its own span; what
    lies between them is blanks, line continuations, and the newline that ends a
    here-document's delimiter line."""
    rng = random.Random(20261204)
    for _ in range(5000):
        text = _fuzz(rng)
        lexed = lex(text)
        pos, previous = 0, ""
        for token in lexed.tokens:
            assert token.start >= pos and token.end > token.start, (text, token)
            assert text[token.start:token.end] == token.text
            gap = text[pos:token.start]
            if previous == "heredoc" and gap.startswith("\n"):
                gap = gap[1:]
            assert gap.replace("\\\n", "").strip(" \t") == "", (text, token)
            pos, previous = token.end, token.kind


def test_the_one_pass_reading_equals_the_scanner() -> None:
    """The ``findall`` reading of simple text gives the scanner's tokens exactly."""
    rng = random.Random(20261205)
    taken = 0
    for _ in range(5000):
        text = _fuzz(rng)
        simple = shell_lexer.lex_simple(text)
        if simple is None:
            continue
        taken += 1
        scanner = shell_lexer._Lexer(text)
        scanner.run(0, scanner.tokens)
        assert scanner.error is None and simple == tuple(scanner.tokens), text
    assert taken > 300
