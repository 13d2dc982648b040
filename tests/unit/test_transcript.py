"""split_statements: the top-level statements a replay runs, one ``bash -c`` each."""

from __future__ import annotations

import random
import time
from pathlib import Path

import bashlex
import pytest

from synth.record.transcript import split_statements
from synth.util.shell_lexer import lex

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_simple_lines_comments_and_blank_lines() -> None:
    text = "#!/bin/bash\n# set up\napt-get update\n\n   # indented comment\npip install x  # why\n"
    assert split_statements(text) == ["apt-get update", "pip install x"]


def test_and_chain_and_semicolons_stay_one_statement() -> None:
    text = "cd /workspace && export A=1 && pip install .\necho a; echo b\n"
    assert split_statements(text) == ["cd /workspace && export A=1 && pip install .",
                                      "echo a; echo b"]


def test_line_continuations_and_trailing_operators() -> None:
    text = "pip install \\\n  numpy \\\n  scipy\nmake &&\n  make install\nls |\n  wc -l\n"
    assert split_statements(text) == [
            "pip install \\\n  numpy \\\n  scipy",
            "make &&\n  make install",
            "ls |\n  wc -l",
        ]


def test_compound_commands_span_lines() -> None:
    text = (
        "if [ -d build ]; then\n  rm -rf build\nfi\n"
        "for p in a b; do\n  echo $p\ndone\n"
        "while false; do\n  :\ndone\n"
        "f() {\n  echo f\n}\n"
        "( cd /tmp && ls )\n"
    )
    expected = [
        "if [ -d build ]; then\n  rm -rf build\nfi",
        "for p in a b; do\n  echo $p\ndone",
        "while false; do\n  :\ndone",
        "f() {\n  echo f\n}",
        "( cd /tmp && ls )",
    ]
    assert split_statements(text) == expected


@pytest.mark.parametrize("op", ["<<EOF", "<<'EOF'", '<<"EOF"', "<< EOF", "<<\\EOF"])
def test_heredoc_belongs_to_its_statement(op: str) -> None:
    text = f"cat > /synth/claims.json {op}\n{{\n  \"a\": 1  # not a comment\n}}\nEOF\necho done\n"
    assert split_statements(text) == [
        f"cat > /synth/claims.json {op}\n{{\n  \"a\": 1  # not a comment\n}}\nEOF", "echo done"]


def test_heredoc_with_tabs_two_bodies_and_a_pipe() -> None:
    text = "cat <<-A | tee x && cat > y <<B\n\tone\n\tA\ntwo\nB\nls\n"
    assert split_statements(text) == ["cat <<-A | tee x && cat > y <<B\n\tone\n\tA\ntwo\nB", "ls"]


def test_here_string_is_not_a_heredoc() -> None:
    text = "python - <<< 'print(1)'\nls\n"
    assert split_statements(text) == ["python - <<< 'print(1)'", "ls"]


def test_quoted_string_spanning_lines() -> None:
    text = "python -c \"\nimport sys\nprint(sys.path)  # x\n\"\npython -c 'a = 1\nprint(a)'\n"
    assert split_statements(text) == ["python -c \"\nimport sys\nprint(sys.path)  # x\n\"",
                                      "python -c 'a = 1\nprint(a)'"]


def test_case_and_arithmetic_commands() -> None:
    """Case patterns are not parentheses; ``((…))`` is one command (its ``<<`` no
    here-document)."""
    text = ("case $x in\n  a) echo a;;\n  (b|c) echo b;;\n  *) echo c;;\nesac\n"
            "(( n = 1 << 2 ))\necho $n\n")
    assert split_statements(text) == [
        "case $x in\n  a) echo a;;\n  (b|c) echo b;;\n  *) echo c;;\nesac",
        "(( n = 1 << 2 ))",
        "echo $n",
    ]


def test_reserved_words_count_only_where_a_command_starts() -> None:
    text = ("echo done if { fi\nfor i in 1 2; do echo \"done\"; done\n"
            "find . -name x -exec rm {} \\;\nls\n")
    assert split_statements(text) == ["echo done if { fi", "for i in 1 2; do echo \"done\"; done",
                                      "find . -name x -exec rm {} \\;", "ls"]


def test_function_headers_and_empty_arrays() -> None:
    """A function's body may start on the line after its header; ``x=()`` is no header."""
    text = ("f()\n{\n  :\n}\nfunction g\n{ :; }\nfunction h()\n{ :; }\nx=()\n"
            "declare -a y=()\narr=(\n  a\n  b\n)\nls\n")
    assert split_statements(text) == ["f()\n{\n  :\n}", "function g\n{ :; }",
                                      "function h()\n{ :; }", "x=()", "declare -a y=()",
                                      "arr=(\n  a\n  b\n)", "ls"]


def test_substitutions_and_blank_lines_after_an_operator() -> None:
    text = "x=$(\n  ls )\necho `date\n`\nmake &&\n\n  # then\n  make install\nf()\n{\n  :\n}\n"
    assert split_statements(text) == ["x=$(\n  ls )", "echo `date\n`",
                                      "make &&\n\n  # then\n  make install",
                                      "f()\n{\n  :\n}"]


def test_unterminated_constructs_never_raise() -> None:
    assert split_statements("if true; then\n  echo x\n") == ["if true; then\n  echo x"]
    assert split_statements("cat <<EOF\nbody\n") == ["cat <<EOF\nbody"]
    assert split_statements("echo 'open\nls\n") == ["echo 'open\nls"]
    assert split_statements("cat <<EOF # no body\n") == ["cat <<EOF # no body"]
    assert split_statements("ls &&\n") == ["ls &&"]
    assert split_statements("") == []
    assert split_statements("# only a comment\n\n") == []


def test_text_is_never_rewritten() -> None:
    line = "DEBIAN_FRONTEND=noninteractive   apt-get install -y  gcc   # compiler"
    assert split_statements(line) == ["DEBIAN_FRONTEND=noninteractive   apt-get install -y  gcc"]


def _bashlex_statements(text: str) -> list[str] | None:
    """The top-level statements bashlex finds, or None where it cannot parse the script.
    bashlex cannot read quoted here-document delimiters: it parses a copy in which every
    here-document operator is an input redirect of the same width and every body blank."""
    lexed = lex(text)
    masked = list(text)
    for doc in lexed.heredocs:
        masked[doc.op_start:doc.op_end] = "<" + "x" * (doc.op_end - doc.op_start - 1)
        for k in range(doc.body_start, doc.end):
            masked[k] = masked[k] if masked[k] == "\n" else " "
    try:
        nodes = bashlex.parse("".join(masked))
    except Exception:  # bashlex raises several kinds
        return None
    spans: list[tuple[int, int]] = []
    for node in nodes:
        start, end = node.pos
        for doc in lexed.heredocs:
            if start <= doc.op_start < end:
                end = max(end, doc.end)
        if spans and start < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return [text[a:b].strip() for a, b in spans]


def test_the_bundled_transcripts_split_as_bashlex_parses_them() -> None:
    scripts = sorted(TASKS.glob("*/agents/*.sh"))
    assert scripts
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert split_statements(text) == _bashlex_statements(text), script


_STATEMENTS = (
    "apt-get update", "pip install x  # why", "cd /w && export A=1 && pip install .",
    "echo a; echo b", "sleep 1 &", "ls | wc -l", "make &&\n  make install",
    "pip install \\\n  numpy", "python -c 'a = 1\nprint(a)'", "echo \"a\nb\" | wc -l",
    "x=$(\n  ls\n)", "echo `date`", "echo $((1 + 2))", "diff <(ls a) <(ls b)",
    "echo done if fi", "echo {a,b} && echo }", "[[ -f a && -d b ]] && echo ok",
    "if [ -d b ]; then\n  rm -rf b\nfi", "if true; then echo a; else echo b; fi",
    "for p in a b\ndo\n  echo $p\ndone > log", "while read l; do echo $l; done < file",
    "until true; do sleep 1; done", "f() {\n  echo f\n}", "function g {\n  echo g\n}",
    "( cd /tmp && ls )", "(\n  cd /tmp\n  ls\n)", "{ echo a; echo b; } > out",
    "cat > f <<EOF\nhello $x\n  # no comment\nEOF", "cat > f <<'EOF'\n{\"a\": 1}\nEOF",
    "cat <<-A | tee x && cat > y <<B\n\tone\n\tA\ntwo\nB", "python - <<< 'print(1)'",
    "if x; then\n  cat <<EOF\n  body\nEOF\nfi", "trap 'echo bye' EXIT", "# a comment", "",
    "#!/bin/bash", "  # indented", "f()\n{\n  :\n}", "function h()\n{ :; }",
)


def test_generated_scripts_split_as_bashlex_parses_them() -> None:
    """Scripts of the statements above in random orders, with trailing comments: wherever
    bashlex parses one, the splitter finds the same statements."""
    rng = random.Random(20261204)
    parsed = 0
    for _ in range(400):
        parts = [rng.choice(_STATEMENTS) + rng.choice(("", "", "  # note"))
                 for _ in range(rng.randint(1, 8))]
        text = "\n".join(parts) + rng.choice(("", "\n"))
        expected = _bashlex_statements(text)
        if expected is not None:
            parsed += 1
            assert split_statements(text) == expected, text
    assert parsed > 300


@pytest.mark.parametrize("hostile", [
    "ls\n" * 10_000 + "cat" + " <<E" * 10_000, "if x; then\n" * 10_000, "(" * 50_000,
    "echo 'a\n" * 10_000, "case x in\n" + "a) b;;\n" * 10_000, "a &&\n" * 10_000,
    "f()\n" * 10_000, "x=$(\n" * 10_000,
])
def test_long_hostile_scripts_are_linear(hostile: str) -> None:
    """A transcript is untrusted too: however long, it is split at once (a pass quadratic
    in these would take minutes)."""
    t0 = time.perf_counter()
    split_statements(hostile)
    assert time.perf_counter() - t0 < 5.0
