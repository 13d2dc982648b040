"""Parsing strace logs of --trace-exec into exec-trace records."""

# ruff: noqa: E501 - verbatim strace lines

from __future__ import annotations

from synth.record.audit import merge_audit, parse_raw_events
from synth.record.trace import Tracer, parse_trace

LOG = r'''11    1795945336.948551 execve("/usr/bin/bash", ["bash", "-c", "cd /tmp && ls \"a b\""], 0x7ffe /* 3 vars */) = 0
11    1795945336.955173 chdir("/tmp")   = 0
16    1795945337.035671 execve("/usr/local/sbin/true", ["true"], 0x3db2 /* 8 vars */) = -1 ENOENT (No such file or directory)
16    1795945337.035831 execve("/usr/bin/true", ["true"], 0x3db2 /* 8 vars */) = 0
17    1795945337.1 execve("/usr/bin/printf", ["printf", "\x41\303\251\n"], 0x1 /* 2 vars */ <unfinished ...>
18    1795945337.2 execve("/usr/bin/false", ["false"], 0x1 /* 2 vars */) = 0
17    1795945337.3 <... execve resumed>) = 0
'''


def test_parse_trace_keeps_successful_execs_in_order() -> None:
    execs = parse_trace(LOG)
    assert [e["argv"] for e in execs] == [
        ["bash", "-c", 'cd /tmp && ls "a b"'], ["true"], ["false"], ["printf", "Aé\n"]]
    assert execs[1] == {"pid": 16, "start": 1795945337.035831, "path": "/usr/bin/true",
                        "argv": ["true"]}


def test_exec_trace_records_are_merged() -> None:
    records = merge_audit(parse_raw_events(""), [], session="s", started="t",
                          exec_traces=parse_trace(LOG))
    traces = [r for r in records if r.get("source") == "exec-trace"]
    assert [r["command"] for r in traces][:2] == ["bash -c 'cd /tmp && ls \"a b\"'", "true"]
    assert all(r["exit"] is None for r in traces)


def test_tracer_wraps_commands_in_the_mounted_strace() -> None:
    t = Tracer("/synth/audit")
    argv = t.wrap(["bash", "-c", "x"])
    assert argv[0] == "/synth/trace/ld.so" and "--seccomp-bpf" in argv
    assert argv[-4:] == ["--", "bash", "-c", "x"] and "/synth/audit/trace-1.txt" in argv
    assert "-v" not in argv  # never print environments
