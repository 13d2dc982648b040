"""The CLI edge of export, and build-context assembly (no Docker)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from distill_runs import cmd, make_run_dir, manifest

from synth.errors import BuildError
from synth.verify.build import assemble_context

REPO = Path(__file__).resolve().parents[2]


def synth(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "synth", *args], capture_output=True,
                          text=True, cwd=cwd, check=False)


def test_unknown_format_names_the_supported_ones(tmp_path: Path) -> None:
    out = synth("export", "--format", "Apptainer", "--artifacts", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 11
    assert "Dockerfile" in out.stderr
    # The run is the positional argument now; a format there is a run that is not found.
    out = synth("export", "Apptainer", "--artifacts", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 21
    assert "--format" in out.stderr


def test_run_is_positional_and_the_old_form_still_works(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, [cmd("python3 -m venv /opt/venv")])
    for args in (["export", run_dir.name], ["export", "Dockerfile", "--run", run_dir.name],
                 ["export", "latest", "--format", "Dockerfile"]):
        out = synth(*args, "--plan", "--artifacts", str(tmp_path), cwd=tmp_path)
        assert out.returncode == 0, (args, out.stderr)
        assert json.loads(out.stdout)["plan"]["task"] == "demo"
    out = synth("export", run_dir.name, "--run", "latest", "--artifacts", str(tmp_path),
                cwd=tmp_path)
    assert out.returncode == 11
    assert "Two runs named" in out.stderr


def test_plan_prints_json_for_the_latest_run(tmp_path: Path) -> None:
    make_run_dir(tmp_path, [cmd("python3 -m venv /opt/venv"), cmd("ls")])
    out = synth("export", "--plan", "--artifacts", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["plan"]["task"] == "demo"
    assert [o["decision"] for o in doc["report"]["outcomes"]] == ["kept", "dropped"]


def test_missing_wheel_is_named(tmp_path: Path) -> None:
    art = tmp_path / "art"
    art.mkdir()
    (art / "manifest.json").write_text(json.dumps(manifest(
        wheelhouse_required=True,
        wheel_files=["torch-9.9.9+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"])))
    (tmp_path / "wh").mkdir()
    (tmp_path / "ctx").mkdir()
    with pytest.raises(BuildError, match=r"torch-9\.9\.9\+cpu"):
        assemble_context(art, tmp_path / "ctx", tmp_path / "wh")
    with pytest.raises(BuildError, match="none is configured"):
        assemble_context(art, tmp_path / "ctx2", None)


def test_context_links_artifact_and_wheels(tmp_path: Path) -> None:
    art = tmp_path / "art"
    (art / "source").mkdir(parents=True)
    (art / "source" / "x.py").write_text("x = 1\n")
    wheel = "demo-1.0-py3-none-any.whl"
    (art / "manifest.json").write_text(json.dumps(manifest(
        wheelhouse_required=True, wheel_files=[wheel])))
    (tmp_path / "wh").mkdir()
    (tmp_path / "wh" / wheel).write_bytes(b"PK")
    (tmp_path / "wh" / "other.whl").write_bytes(b"PK")
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    assert assemble_context(art, ctx, tmp_path / "wh") == [wheel]
    assert (ctx / "source" / "x.py").read_text() == "x = 1\n"
    assert sorted(p.name for p in (ctx / "wheelhouse").iterdir()) == [wheel]
