"""split_statements: the top-level statements a replay runs, one ``bash -c`` each."""

from __future__ import annotations

from pathlib import Path

import pytest

from synth.record import transcript
from synth.record.transcript import split_statements


def both_ways(text: str) -> list[list[str]]:
    """The statements through bashlex and through the line-based fallback."""
    scan = transcript._scan(text)
    fallback = [text[a:b].strip() for a, b in transcript._spans_lines(text, scan)]
    return [split_statements(text), [s for s in fallback if s]]


def test_simple_lines_comments_and_blank_lines() -> None:
    text = "#!/bin/bash\n# set up\napt-get update\n\n   # indented comment\npip install x  # why\n"
    for got in both_ways(text):
        assert got == ["apt-get update", "pip install x"]


def test_and_chain_and_semicolons_stay_one_statement() -> None:
    text = "cd /workspace && export A=1 && pip install .\necho a; echo b\n"
    for got in both_ways(text):
        assert got == ["cd /workspace && export A=1 && pip install .", "echo a; echo b"]


def test_line_continuations_and_trailing_operators() -> None:
    text = "pip install \\\n  numpy \\\n  scipy\nmake &&\n  make install\nls |\n  wc -l\n"
    for got in both_ways(text):
        assert got == [
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
    for got in both_ways(text):
        assert got == expected


@pytest.mark.parametrize("op", ["<<EOF", "<<'EOF'", '<<"EOF"', "<< EOF", "<<\\EOF"])
def test_heredoc_belongs_to_its_statement(op: str) -> None:
    text = f"cat > /synth/claims.json {op}\n{{\n  \"a\": 1  # not a comment\n}}\nEOF\necho done\n"
    for got in both_ways(text):
        assert got == [f"cat > /synth/claims.json {op}\n{{\n  \"a\": 1  # not a comment\n}}\nEOF",
                       "echo done"]


def test_heredoc_with_tabs_two_bodies_and_a_pipe() -> None:
    text = "cat <<-A | tee x && cat > y <<B\n\tone\n\tA\ntwo\nB\nls\n"
    for got in both_ways(text):
        assert got == ["cat <<-A | tee x && cat > y <<B\n\tone\n\tA\ntwo\nB", "ls"]


def test_here_string_is_not_a_heredoc() -> None:
    text = "python - <<< 'print(1)'\nls\n"
    for got in both_ways(text):
        assert got == ["python - <<< 'print(1)'", "ls"]


def test_quoted_string_spanning_lines() -> None:
    text = "python -c \"\nimport sys\nprint(sys.path)  # x\n\"\npython -c 'a = 1\nprint(a)'\n"
    for got in both_ways(text):
        assert got == ["python -c \"\nimport sys\nprint(sys.path)  # x\n\"",
                       "python -c 'a = 1\nprint(a)'"]


def test_constructs_bashlex_cannot_read_fall_back() -> None:
    text = "case $x in\n  a) echo a;;\n  *) echo b;;\nesac\n(( n = 1 + 2 ))\necho $n\n"
    assert split_statements(text) == [
        "case $x in\n  a) echo a;;\n  *) echo b;;\nesac",
        "(( n = 1 + 2 ))",
        "echo $n",
    ]


def test_unterminated_constructs_never_raise() -> None:
    assert split_statements("if true; then\n  echo x\n") == ["if true; then\n  echo x"]
    assert split_statements("cat <<EOF\nbody\n") == ["cat <<EOF\nbody"]
    assert split_statements("echo 'open\nls\n") == ["echo 'open\nls"]
    assert split_statements("") == []
    assert split_statements("# only a comment\n\n") == []


def test_text_is_never_rewritten() -> None:
    line = "DEBIAN_FRONTEND=noninteractive   apt-get install -y  gcc   # compiler"
    assert split_statements(line) == ["DEBIAN_FRONTEND=noninteractive   apt-get install -y  gcc"]


def test_both_splitters_agree_on_the_bundled_transcripts() -> None:
    scripts = sorted((Path(__file__).resolve().parents[2] / "tasks").glob("*/agents/*.sh"))
    assert scripts
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        scan = transcript._scan(text)
        parsed = [text[a:b].strip() for a, b in transcript._spans_bashlex(text, scan)]
        assert parsed == both_ways(text)[1], script
