"""Slow engine calls get a long read timeout; the quick ones keep the client's."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from synth.engine.docker import SLOW_CALL_TIMEOUT, Container, DockerEngine


class _Api:
    def __init__(self) -> None:
        self.timeout = 30


class _Raw:
    """A docker-py container that records the client's timeout when it is asked."""

    id = "c1"
    name = "synth-test"

    def __init__(self, api: _Api) -> None:
        self.api = api
        self.seen: list[int] = []

    def commit(self, **_kw: Any) -> Any:
        self.seen.append(self.api.timeout)
        return SimpleNamespace(id="sha256:" + "ab" * 32)

    def diff(self) -> list[dict[str, Any]]:
        self.seen.append(self.api.timeout)
        return [{"Kind": 1, "Path": "/x"}]


def _engine() -> tuple[DockerEngine, _Api]:
    api = _Api()
    engine = DockerEngine.__new__(DockerEngine)
    engine.client = SimpleNamespace(api=api)  # type: ignore[assignment]
    engine.api = api  # type: ignore[assignment]
    return engine, api


def test_commit_and_diff_wait_as_long_as_a_large_container_needs() -> None:
    # A torch environment's commit took over the 30 s the session's client had on a loaded
    # machine: the run ended `incomplete` ("Read timed out. (read timeout=30)").
    engine, api = _engine()
    raw = _Raw(api)
    container = Container(engine, raw)  # type: ignore[arg-type]
    container.commit("synth-live/t:1", labels={})
    assert container.diff() == [("A", "/x")]
    assert raw.seen == [SLOW_CALL_TIMEOUT, SLOW_CALL_TIMEOUT]
    assert api.timeout == 30  # restored for the quick calls


def test_the_timeout_is_restored_when_the_call_fails() -> None:
    engine, api = _engine()
    try:
        with engine.slow_call():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert api.timeout == 30
