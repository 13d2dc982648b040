"""However much a command prints, the host keeps a bounded part of it: an exec result
its head and tail, ``agent.log`` a line in pieces and the whole log up to its cap, with the
secrets masked across every cut."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from synth.engine.base import ExecResult, OutputSink
from synth.engine.fingerprint import fingerprint
from synth.errors import VerifyError
from synth.record.agents import AgentLog
from synth.record.audit import Masker

SECRET = "tok-5e4d3c2b1a9f"


def test_a_short_stream_is_kept_whole() -> None:
    sink = OutputSink(keep=16, tail=4)
    for chunk in (b"abc", b"def\n", b"ghi"):
        sink.add(chunk)
    assert sink.text() == "abcdef\nghi"
    assert not sink.truncated


def test_a_long_stream_keeps_its_head_and_tail_and_says_how_much_went() -> None:
    sink = OutputSink(keep=10, tail=5)
    data = bytes(range(97, 123)) * 4  # 104 bytes, a-z four times
    for i in range(0, len(data), 7):
        sink.add(data[i:i + 7])
    assert sink.truncated and sink.dropped == len(data) - 15
    head, note, tail = sink.text().split("\n")
    assert head == data[:10].decode() and tail == data[-5:].decode()
    assert note == "[synth: 89 bytes of output not kept]"


def test_a_stream_just_at_the_cap_is_not_truncated() -> None:
    sink = OutputSink(keep=8, tail=4)
    sink.add(b"12345678")
    sink.add(b"9ab")
    assert not sink.truncated and sink.text() == "123456789ab"


def _log(tmp_path: Path, **caps: int) -> AgentLog:
    return AgentLog(tmp_path / "agent.log", Masker([SECRET]), **caps)


@pytest.mark.parametrize("size", [1, 5, 7, 16, 64])
def test_a_line_without_end_is_written_in_pieces_and_its_secret_still_masked(
        tmp_path: Path, size: int) -> None:
    log = _log(tmp_path, line_bytes=32)
    data = (b"x" * 45 + SECRET.encode() + b"y" * 20) * 6
    held: list[int] = []
    for i in range(0, len(data), size):
        log.write("stdout", data[i:i + size])
        held.append(sum(map(len, log._pending.get("stdout", []))))
    log.close()
    written = (tmp_path / "agent.log").read_bytes()
    assert written == data.replace(SECRET.encode(), b"***") + b"\n"
    # what the log holds back never grows past a piece and a secret's length
    longest = max(len(v) for v in Masker([SECRET]).values)
    assert max(held) <= 32 + longest


def test_a_secret_in_base64_split_across_pieces_is_masked(tmp_path: Path) -> None:
    encoded = base64.b64encode(SECRET.encode())
    log = _log(tmp_path, line_bytes=16)
    data = b"." * 30 + encoded + b"." * 30
    for i in range(0, len(data), 3):
        log.write("stderr", data[i:i + 3])
    log.close()
    assert encoded not in (tmp_path / "agent.log").read_bytes()


def test_the_log_stops_at_its_cap_and_says_what_it_left_out(tmp_path: Path) -> None:
    log = _log(tmp_path, max_bytes=100)
    for _ in range(10):
        log.write("stdout", b"z" * 29 + b"\n")
    log.note("after the cap")
    log.close()
    text = (tmp_path / "agent.log").read_text()
    body, last = text[:100], text[100:]
    assert body == ("z" * 29 + "\n") * 3 + "z" * 10
    assert last == "[synth: 214 more bytes of output not logged: the log stops at 100B]\n"
    assert log.left_out == 214


class _Flooding:
    """A runtime whose probe printed past the cap (pure logic: no engine)."""

    description = "a flooding runtime"

    def copy_in(self, src: Path, dest: str) -> None:
        pass

    def exec(self, argv: list[str], **_kw: object) -> ExecResult:
        return ExecResult(tuple(argv), 0, '{"distributions": {}' + " " * 100, "",
                          truncated=argv[0] != "rm")


def test_the_fingerprint_probe_refuses_an_answer_it_could_not_keep_whole() -> None:
    with pytest.raises(VerifyError, match=r"printed more than 64M in a flooding runtime"):
        fingerprint(_Flooding(), "python3")  # type: ignore[arg-type]
