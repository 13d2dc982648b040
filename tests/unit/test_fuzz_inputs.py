"""The fuzz suite (tests/fuzz_inputs.py): seeded mutants of every untrusted input synth
reads on the host — task files, run directories, artifact folders, ResearchEnvBench trees
and bench results folders — each driven through synth in-process, with 0 tracebacks and
0 silent accepts: a mutant is accepted as a valid input (identical in content where
``synth diff`` calls it equal) or refused with a SynthError naming the file. Bounded for
CI (about half a minute); ``python bench/fuzz_inputs.py --cases N`` runs N of each."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz_inputs import (
    INPUT_KINDS,
    build_world,
    failures,
    offline_locker,
    run_cases,
    stats,
)

#: Cases per input kind in CI (the cheap kinds more), and the seed (change it to explore).
CASES = {"task": 40, "reb": 40, "run": 10, "artifact": 10, "bench": 10}
SEED = 11


@pytest.fixture(autouse=True)
def _no_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Nothing here needs an engine; make sure nothing reaches the shared one either.
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")


@pytest.mark.timeout(600)
def test_mutated_inputs_keep_every_property(tmp_path: Path) -> None:
    world = build_world(tmp_path / "world")
    done = []
    with offline_locker():
        for kind in INPUT_KINDS:
            done += run_cases(world, CASES[kind], SEED, tmp_path / kind, (kind,))
    broken = failures(done)
    assert not broken, "\n".join(f"{c.kind} {c.outcome}: {c.what}\n{c.detail}"
                                 for c in broken[:5])
    by_kind = stats(done)
    assert {k: v["cases"] for k, v in by_kind.items()} == CASES
    # The mutants reach both outcomes: refusals, and inputs that still load.
    for kind, row in by_kind.items():
        assert row["refused"] > 0, (kind, row)
