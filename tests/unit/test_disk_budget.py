"""The disk budget: a step refused before it starts when the engine's data root or the
artifacts folder is short, with an injected disk_usage (no real disk is filled)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.engine import disk_budget
from synth.engine.disk_budget import Usage
from synth.engine.doctor import disk_check
from synth.errors import DiskFullError
from synth.export.artifact import ExportOptions, export_run
from synth.util.disk import GIB
from tests.distill_runs import NO_ENGINE


def _usage(free: dict[str, int]) -> disk_budget.DiskUsage:
    """Every path under a key of ``free`` has that many bytes free."""
    def usage(path: Path) -> Usage:
        for prefix, n in sorted(free.items(), key=lambda kv: -len(kv[0])):
            if str(path).startswith(prefix):
                return Usage(100 * GIB, 100 * GIB - n, n)
        return Usage(100 * GIB, 0, 100 * GIB)
    return usage


class _Engine:
    def __init__(self, root: str, sizes: dict[str, int]) -> None:
        self.root, self.sizes = root, sizes

    def info(self) -> dict[str, Any]:
        return {"DockerRootDir": self.root}

    def image_inspect(self, ref: str) -> dict[str, Any]:
        return {"Size": self.sizes[ref]}


def test_a_run_is_refused_when_the_data_root_is_short(tmp_path: Path) -> None:
    engine = _Engine("/var/lib/docker", {"synth/python:bookworm": 900 * 1024 ** 2})
    needs = disk_budget.run_needs(disk_budget.engine_data_root(engine), tmp_path,
                                  [disk_budget.image_size(engine, "synth/python:bookworm")])
    with pytest.raises(DiskFullError) as info:
        disk_budget.check_space(needs, "a run of t", usage=_usage({"/": GIB}))
    err = info.value
    assert "Not enough disk space for a run of t" in err.message
    assert "1.0 GiB free" in err.message and "the engine's data root" in err.message
    assert err.needed is not None and err.needed >= disk_budget.RUN_FLOOR
    assert "synth gc --images" in (err.hint or "") and "--no-disk-check" in (err.hint or "")
    # With room, nothing is said.
    disk_budget.check_space(needs, "a run of t", usage=_usage({"/": 10 * GIB}))


def test_estimates_grow_with_known_images_and_never_fall_below_the_floor() -> None:
    assert disk_budget.estimate(2 * GIB, [None, 100], 1.2, "a run")[0] == 2 * GIB
    needed, basis = disk_budget.estimate(3 * GIB, [4 * GIB], 1.5, "a rebuild")
    assert needed == 6 * GIB and "4.0 GiB x 1.5" in basis


def test_a_rebuild_of_a_big_live_image_needs_more_than_the_floor() -> None:
    needs = disk_budget.rebuild_needs(Path("/var/lib/docker"), 4 * GIB)
    with pytest.raises(DiskFullError, match=r"6\.0 GiB needed"):
        disk_budget.check_space(needs, "rebuilding t", usage=_usage({"/": 5 * GIB}))


def test_needs_on_one_file_system_add_up(tmp_path: Path) -> None:
    needs = [*disk_budget.run_needs(tmp_path, tmp_path, []),
             *disk_budget.rebuild_needs(tmp_path, None)]
    enough_for_each = disk_budget.REBUILD_FLOOR + GIB // 2
    with pytest.raises(DiskFullError):
        disk_budget.check_space(needs, "a bench cell", usage=_usage({"/": enough_for_each}))


def test_export_bundle_is_refused_before_any_work(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(disk_budget, "disk_usage", _usage({"/": 100 * 1024 ** 2}))
    monkeypatch.setattr("synth.export.artifact.check_trust", lambda *_a, **_k: [])
    monkeypatch.setattr("synth.export.artifact.check_destination", lambda *_a, **_k: None)
    settings = Settings.load(artifacts_dir=tmp_path)
    with pytest.raises(DiskFullError, match="for --bundle"):
        export_run(ExportOptions(tmp_path / "run", bundle=True), settings, NO_ENGINE)
    monkeypatch.setenv("SYNTH_DISK_CHECK", "0")
    assert not Settings.load(artifacts_dir=tmp_path).disk_check


def test_doctor_shows_both_free_spaces(tmp_path: Path) -> None:
    check = disk_check(Path("/var/lib/docker"), tmp_path,
                       usage=_usage({"/var/lib/docker": 50 * GIB, str(tmp_path): 3 * GIB}))
    assert check.status == "ok"
    assert "engine data root /var/lib/docker: 50.0 GiB free" in check.detail
    assert f"artifacts folder {tmp_path}: 3.0 GiB free" in check.detail
    short = disk_check(Path("/var/lib/docker"), tmp_path, usage=_usage({"/": GIB}))
    assert short.status == "warn" and short.fix and "synth gc" in short.fix


def test_a_session_stops_below_the_reserve_on_the_engine_s_data_root(tmp_path: Path) -> None:
    def usage(free: int) -> disk_budget.DiskUsage:
        return lambda _p: Usage(100 * GIB, 100 * GIB - free, free)

    assert disk_budget.below_reserve(tmp_path, usage=usage(2 * GIB)) is None
    assert disk_budget.below_reserve(tmp_path, usage=usage(disk_budget.SESSION_RESERVE)) is None
    low = disk_budget.below_reserve(tmp_path, usage=usage(512 << 20))
    assert low == (f"the file system of the engine's data root {tmp_path} has 512.0 MiB free "
                   "of 100.0 GiB (a session leaves at least 1.0 GiB)")

    def unreadable(_p: Path) -> Usage:
        raise OSError("a remote engine's path")

    assert disk_budget.below_reserve(tmp_path / "gone", usage=unreadable) is None


def test_a_commit_that_would_eat_into_the_reserve_is_refused(tmp_path: Path) -> None:
    def usage(_p: Path) -> Usage:
        return Usage(100 * GIB, 97 * GIB, 3 * GIB)

    disk_budget.check_commit_room(tmp_path, 2 * GIB, usage=usage)  # leaves 1 GiB: fits
    disk_budget.check_commit_room(tmp_path, None, usage=usage)  # the engine did not say
    with pytest.raises(DiskFullError) as err:
        disk_budget.check_commit_room(tmp_path, 2 * GIB + 1, usage=usage)
    assert err.value.message == (
        "Not enough disk space to commit the live image: the container's layer holds 2.0 GiB "
        f"and the file system of the engine's data root {tmp_path} has 3.0 GiB free (a "
        "commit writes the layer again and leaves at least 1.0 GiB).")
    assert err.value.free == 3 * GIB and err.value.hint == disk_budget.FREE_HINT
