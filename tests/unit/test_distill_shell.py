"""Audited command lines split into simple commands with their shell context."""

from __future__ import annotations

from synth.distill.load import AuditRecord
from synth.distill.shell import SimpleCommand, parse_line, simple_commands


def rec(command: str, *, seq: int = 1, exit: int | None = 0, cwd: str = "/workspace",
        source: str = "bash-c", parent: int | None = None) -> AuditRecord:
    return AuditRecord(seq=seq, source=source, command=command, cwd=cwd, exit=exit,
                       parent_seq=parent)


def test_and_list_cd_export_and_prefix() -> None:
    cmds = parse_line(rec('cd /src && export MAX_JOBS=4 CC="gcc -O2" && X=1 pip install -e .'))
    assert [c.argv[0] if c.argv else "" for c in cmds] == ["cd", "export", "pip"]
    pip = cmds[2]
    assert pip.cwd == "/src"
    assert pip.env_map() == {"MAX_JOBS": "4", "CC": "gcc -O2"}
    assert pip.assignments == (("X", "1"),)
    assert pip.argv == ("pip", "install", "-e", ".")
    assert pip.text == "X=1 pip install -e ."


def test_relative_cd_and_home() -> None:
    cmds = parse_line(rec("cd sub && cd ../other && ls; cd ~ && pwd", cwd="/w"))
    assert [c.cwd for c in cmds] == ["/w", "/w/sub", "/w/other", "/w/other", "/root"]


def test_pipeline_members_are_masked_but_last_is_not() -> None:
    cmds = parse_line(rec("pip list | grep torch"))
    assert [c.masked for c in cmds] == [True, False]


def test_or_list_masks_both_sides() -> None:
    cmds = parse_line(rec("python -c 'import wandb' || echo optional"))
    assert all(c.masked for c in cmds)


def test_activate_sets_virtual_env() -> None:
    cmds = parse_line(rec("source /opt/venv/bin/activate && pip install numpy"))
    assert cmds[1].activated == "/opt/venv/bin"
    assert cmds[1].env_map()["VIRTUAL_ENV"] == "/opt/venv"


def test_variable_expansion_uses_exports() -> None:
    cmds = parse_line(rec("export D=/opt/x && cd $D && make -j${N}"))
    assert cmds[2].cwd == "/opt/x"
    assert cmds[2].argv == ("make", "-j${N}")


def test_unparsable_line_is_kept_verbatim_and_flagged() -> None:
    text = "cat > /x <<EOF\nhello"  # the document never ends
    cmds = parse_line(rec(text))
    assert len(cmds) == 1 and not cmds[0].parsed
    assert cmds[0].text == text and "unparsed" in cmds[0].flags


def test_a_here_document_with_a_quoted_delimiter_is_parsed() -> None:
    """``cat > /synth/claims.json <<'JSON'`` (every claims file): bashlex looks for the
    delimiter with its quotes; read unquoted, each command's text is still the line's."""
    text = "cat > /synth/claims.json <<'JSON' && echo ok\n{\"a\": \"$(x)\"}\nJSON"
    cat, echo = parse_line(rec(text))
    assert (cat.parsed, cat.argv, cat.text) == (True, ("cat",),
                                                "cat > /synth/claims.json <<'JSON'")
    assert ("<<", "JSON") in cat.redirects and (">", "/synth/claims.json") in cat.redirects
    assert (echo.argv, echo.text) == (("echo", "ok"), "echo ok")
    [cat] = parse_line(rec('cat <<-"EOF" > x.txt\n\thi\n\tEOF'))
    assert cat.parsed and cat.text == 'cat <<-"EOF" > x.txt'


def test_broken_syntax_is_unparsed() -> None:
    cmds = parse_line(rec("if then fi (("))
    assert len(cmds) == 1 and not cmds[0].parsed and cmds[0].text == "if then fi (("


def test_loop_bodies_are_flagged() -> None:
    cmds = parse_line(rec("for p in a b; do pip install $p; done"))
    assert cmds and all("for" in c.flags for c in cmds)


def test_hook_records_give_per_command_exit_status() -> None:
    records = [
        rec("cd /w && pip install nope && echo done", seq=1, exit=1),
        rec("cd /w", seq=2, exit=0, source="bash-hook", parent=1),
        rec("pip install nope", seq=3, exit=1, source="bash-hook", parent=1),
    ]
    cmds = list(simple_commands(records))
    assert [(c.text, c.exit, c.ran) for c in cmds] == [
        ("cd /w", 0, True), ("pip install nope", 1, True), ("echo done", None, False)]


def test_without_hooks_a_failed_line_fails_every_command() -> None:
    cmds = list(simple_commands([rec("apt-get update && apt-get install -y x", exit=100)]))
    assert all(c.failed for c in cmds)


def test_orphan_hook_records_are_units_and_exec_trace_is_ignored() -> None:
    records = [
        rec("pip install numpy", seq=1, exit=0, source="bash-hook"),
        rec("/usr/bin/pip install numpy", seq=2, exit=None, source="exec-trace"),
    ]
    cmds = list(simple_commands(records))
    assert [c.text for c in cmds] == ["pip install numpy"]


def test_hook_records_of_a_called_script_become_nested_commands() -> None:
    records = [
        rec("bash setup.sh", seq=1, exit=0),
        rec("bash setup.sh", seq=2, exit=0, source="bash-hook", parent=1),
        rec("apt-get install -y git", seq=3, exit=0, source="bash-hook", parent=1),
    ]
    cmds = list(simple_commands(records))
    assert [c.text for c in cmds] == ["bash setup.sh", "apt-get install -y git"]
    assert "nested" in cmds[1].flags


def test_hook_text_reprinted_by_bash_still_matches() -> None:
    records = [
        rec("pip list 2>/dev/null | grep -E 'torch|numpy'", seq=1, exit=0),
        rec("pip list 2> /dev/null", seq=2, exit=0, source="bash-hook", parent=1),
        rec('grep -E "torch|numpy"', seq=3, exit=0, source="bash-hook", parent=1),
    ]
    cmds = list(simple_commands(records))
    assert [(c.exit, c.ran) for c in cmds] == [(0, True), (0, True)]
    assert not any("nested" in c.flags for c in cmds)


def test_a_here_document_s_hook_record_matches_its_command() -> None:
    """The hook prints a here-document's command with its body; the claims step of every
    transcript was reported as "never ran" plus an unclassified leftover (aics-cytoparam)."""
    line = "cat > /synth/claims.json <<'JSON'\n{\"gpu_count\": 0}\nJSON"
    records = [rec(line, seq=1, exit=0),
               rec(line, seq=2, exit=0, source="bash-hook", parent=1)]
    cmds = list(simple_commands(records))
    assert [(c.text, c.exit, c.ran) for c in cmds] == [
        ("cat > /synth/claims.json <<'JSON'", 0, True)]
    assert not any("not-run" in c.flags for c in cmds)


def test_succeeded_is_parsed_ran_and_not_failed() -> None:
    """The shortcut for the common case (exit 0, no flag) answers as the three properties
    do, on every combination of what they read."""
    for parsed in (True, False):
        for code in (None, 0, 1, 141, 2):
            for flags in ((), ("not-run",), ("nested",), ("compound", "not-run")):
                for masked in (False, True):
                    c = SimpleCommand(("x",), (), (), "x", "/", (), None, 1, code,
                                      parsed, flags, masked)
                    assert c.succeeded == (c.parsed and c.ran and not c.failed), c



def test_commands_are_whole_named_tuples() -> None:
    """The walker makes each command as the tuple it is (no __new__ to check the fields):
    every field is there, in its place, on both the fast and the bashlex path."""
    for fast in (True, False):
        cmds = parse_line(rec("cd /w && X=1 make -j2 > log 2>&1 | tee out; ls", seq=4),
                          fast=fast)
        assert [c.argv[0] for c in cmds] == ["cd", "make", "tee", "ls"]
        for i, c in enumerate(cmds):
            assert type(c) is SimpleCommand and len(c) == len(SimpleCommand._fields)
            assert c == SimpleCommand(*c) and c.index == i and c.ref == f"4.{i}"
            assert c.seq == 4 and c.parsed is True and isinstance(c.masked, bool)
        assert cmds[1].redirects == ((">", "log"), (">&", "1")) and cmds[1].masked
        assert cmds[3].cwd == "/w" and cmds[1].assignments == (("X", "1"),)
