"""`synth gc --keep-runs N`: which images go (pure), and the runs that say so."""

from __future__ import annotations

from pathlib import Path

import pytest
from distill_runs import make_run_dir

from synth.config import Settings
from synth.formats.store import RunDir
from synth.record.rundir import mark_pruned
from synth.util.retention import TaggedImage, beyond_latest, live_run


def test_the_latest_runs_of_each_task_are_kept() -> None:
    live = [TaggedImage(f"synth-live/a:2026120{d}-100000-abcdef", "live", "") for d in (3, 1, 2)]
    rebuilt = [TaggedImage(f"synth-rebuilt/a:{h}", "rebuilt", f"2026-12-0{d}T00:00:00Z")
               for h, d in (("x1", 2), ("x2", 1))]
    other = [TaggedImage("synth-live/b:20261201-100000-abcdef", "live", ""),
             TaggedImage("synth/python:bookworm", "base", "")]
    old = beyond_latest([*live, *rebuilt, *other], keep=1)
    assert [i.ref for i in old] == ["synth-live/a:20261201-100000-abcdef",
                                    "synth-live/a:20261202-100000-abcdef",
                                    "synth-rebuilt/a:x2"]
    assert beyond_latest(live, keep=5) == []
    assert len(beyond_latest(live, keep=0)) == 3


def test_a_live_tag_names_its_run() -> None:
    assert live_run("synth-live/numpy-ext:20261201-100000-abcdef") == (
        "numpy-ext", "20261201-100000-abcdef")
    assert live_run("synth-rebuilt/numpy-ext:abc") is None


def test_a_pruned_run_says_when(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, task="demo", run_id="20261129-101500-a1b2c3")
    settings = Settings.load(artifacts_dir=tmp_path)
    removed = ["image synth-live/demo:20261129-101500-a1b2c3 (700 MB)",
               "image synth-live/gone:20261129-101500-a1b2c3 (1 MB)", "container x"]
    assert mark_pruned(settings, removed, "2026-12-04T10:00:00Z") == [run_dir]
    live = RunDir(run_dir).run_record().live_image
    assert live is not None and live.pruned == "2026-12-04T10:00:00Z"


def test_keep_runs_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synth.config import DEFAULT_KEEP_RUNS
    from synth.errors import UsageError

    monkeypatch.delenv("SYNTH_KEEP_RUNS", raising=False)
    assert Settings.load(artifacts_dir=tmp_path).keep_runs == DEFAULT_KEEP_RUNS == 5
    monkeypatch.setenv("SYNTH_KEEP_RUNS", "2")
    assert Settings.load(artifacts_dir=tmp_path).keep_runs == 2
    monkeypatch.setenv("SYNTH_KEEP_RUNS", "all")
    assert Settings.load(artifacts_dir=tmp_path).keep_runs is None
    for bad in ("0", "-1", "x", ""):
        monkeypatch.setenv("SYNTH_KEEP_RUNS", bad)
        with pytest.raises(UsageError, match="SYNTH_KEEP_RUNS"):
            Settings.load(artifacts_dir=tmp_path)


def test_run_and_verify_prune_after_their_work_and_a_failure_only_warns(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from synth.cli.app import prune_older_runs
    from synth.errors import EngineUnavailableError

    class Engine:
        def __init__(self) -> None:
            self.asked: list[tuple[int, str | None]] = []

        def prune_runs(self, keep: int, *, scope: str | None = None) -> list[str]:
            self.asked.append((keep, scope))
            return ["image synth-live/a:20261201-100000-abcdef (120 MB)"]

    monkeypatch.setenv("SYNTH_KEEP_RUNS", "3")
    settings = Settings.load(artifacts_dir=tmp_path)
    run_dir = make_run_dir(tmp_path, task="a", run_id="20261201-100000-abcdef")
    engine = Engine()
    prune_older_runs(engine, settings)  # type: ignore[arg-type]
    assert engine.asked == [(3, str(tmp_path.resolve()))]
    assert RunDir(run_dir).run_record().live_image.pruned  # the run says so
    assert "latest 3 (SYNTH_KEEP_RUNS)" in capsys.readouterr().err

    class Gone:
        def prune_runs(self, keep: int, *, scope: str | None = None) -> list[str]:
            raise EngineUnavailableError("the engine went away")

    prune_older_runs(Gone(), settings)  # type: ignore[arg-type]
    assert "were not pruned: the engine went away" in capsys.readouterr().err
    monkeypatch.setenv("SYNTH_KEEP_RUNS", "all")
    engine = Engine()
    prune_older_runs(engine, Settings.load(artifacts_dir=tmp_path))  # type: ignore[arg-type]
    assert engine.asked == []
