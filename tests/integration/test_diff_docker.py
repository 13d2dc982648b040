"""synth diff on real runs of the bundled numpy-ext task, and a live image against its rebuild.

The runs come from the session-wide ``task_run`` fixture (memoised: the export and verify
tests replay the same transcripts); the one rebuilt image made here is removed afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synth.compare.diff import DiffResult, diff_sides
from synth.compare.fingerprint import compare_fingerprints
from synth.compare.load import DiffOptions, SideLoader, diff_command
from synth.config import Settings
from synth.engine.base import Engine
from synth.engine.fingerprint import ImageProbe

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "numpy-ext"


def artifacts_of(run_dir: Path) -> Path:
    return run_dir.parents[2]  # <artifacts>/runs/<task>/<run-id>


def run_diff(a: Path | str, b: Path | str, artifacts: Path, engine: Engine,
             **kw: Any) -> DiffResult:
    loader = SideLoader(Settings.load(artifacts_dir=artifacts), images=ImageProbe(engine),
                        **kw)
    return diff_sides(loader.load(str(a)), loader.load(str(b)))


def test_run_against_itself_is_equal(task_run: Callable[[str, str], Path],
                                     capsys: pytest.CaptureFixture[str],
                                     engine: Engine) -> None:
    run = task_run(TASK, "good.sh")
    code = diff_command(DiffOptions(a=str(run), b=str(run), json=True,
                                    artifacts_dir=artifacts_of(run)),
                        ImageProbe(engine))
    data = json.loads(capsys.readouterr().out)["result"]
    assert code == 0, [s for s in data["sections"] if s["status"] == "differ"]
    assert data["equal"] is True


def test_good_against_sloppy_shows_the_real_differences(
    task_run: Callable[[str, str], Path], engine: Engine,
) -> None:
    good, sloppy = task_run(TASK, "good.sh"), task_run(TASK, "sloppy.sh")
    result = run_diff(good, sloppy, artifacts_of(good), engine)
    assert result.exit_code == 1
    # sloppy.sh installs build-essential (with its recommends) where good.sh takes gcc alone.
    apt = {i.key: i for i in result.section("apt").items}
    assert apt["build-essential"].kind == "added"
    # Both build fastops from /workspace without isolation; sloppy.sh exports CFLAGS first.
    native = result.section("native_builds").items
    assert [(i.kind, i.key) for i in native] == [("changed", "fastops")]
    assert "env CFLAGS: (unset) -> -O2 -g0" in native[0].detail
    # Nothing spurious: same interpreter, same base, same persisted environment, and the
    # Python differences are limited to the build tools sloppy.sh upgraded.
    assert result.section("interpreter").status == "equal"
    assert result.section("env").status == "equal"
    python_keys = {i.key for i in result.section("python").items}
    assert python_keys <= {"setuptools", "wheel", "packaging"}, python_keys
    assert "fastops" not in python_keys and "numpy" not in python_keys


@pytest.fixture(scope="module")
def rebuilt(verified: Callable[..., Any]) -> tuple[Path, Path, str]:
    """(run dir, artifact dir, rebuilt image) for the task's good.sh run: the shared
    session-wide export and no-cache rebuild of the ``verified`` fixture."""
    doc = verified(TASK, "good.sh").document
    run = Path(doc["target"]["path"])
    return run, Path(doc["target"]["artifact_dir"]), str(doc["build"]["image"])


def test_live_image_against_rebuild(rebuilt: tuple[Path, Path, str], engine: Engine) -> None:
    run, _, image = rebuilt
    live = json.loads((run / "run.json").read_text())["live_image"]["ref"]
    python = json.loads((run / "state" / "python.json").read_text())["primary"]
    cmp = compare_fingerprints(ImageProbe(engine).fingerprint(live, python),
                               ImageProbe(engine).fingerprint(image, python))
    assert cmp.packages_equal, cmp.summary()
    assert cmp.content_equal, cmp.summary()
    # The compiled extension is rebuilt byte for byte (same source path, flags, compiler).
    assert cmp.native_equal, cmp.summary()

    result = run_diff(f"image:{live}", f"image:{image}", artifacts_of(run), engine)
    for name in ("interpreter", "python", "native_files", "python_files", "apt"):
        assert result.section(name).status == "equal", result.section(name).to_json()
    # uv installs the lock, pip installed live: only the launcher scripts differ, and the
    # section names them without counting them.
    note = result.section("python_files").note or ""
    assert not note or note.startswith("launcher scripts differ, written by another installer")
    # The exact difference: the rebuilt image sets PATH and VIRTUAL_ENV for its venv, the
    # committed live container had no ENV of its own.
    assert {i.key for i in result.section("env").items} <= {"PATH", "VIRTUAL_ENV"}


def test_run_against_its_artifact(rebuilt: tuple[Path, Path, str], engine: Engine) -> None:
    run, artifact, _ = rebuilt
    result = run_diff(run, artifact, artifacts_of(run), engine)
    for name in ("python", "native_builds", "apt"):
        assert result.section(name).status == "equal", result.section(name).to_json()
