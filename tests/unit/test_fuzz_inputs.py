"""The fuzz suite (tests/fuzz_inputs.py): seeded mutants of task.toml, every run-directory
file and every artifact file, through the real CLI in-process. Bounded for CI; run more
with ``python bench/fuzz_inputs.py --cases N``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz_inputs import build_world, offline_locker, run_cases, stats

#: Cases per test run in CI (24 per file kind), and the seed (change it to explore).
CASES = 288
SEED = 11


@pytest.fixture(autouse=True)
def _no_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Nothing here needs an engine; make sure nothing reaches the shared one either.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")


def test_mutated_inputs_keep_every_property(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    with offline_locker():
        done = run_cases(world, CASES, SEED, tmp_path / "cases")
    by_kind = stats(done)
    assert len(done) == CASES
    assert len(by_kind) == 12 and min(by_kind.values()) >= CASES // 12, by_kind
