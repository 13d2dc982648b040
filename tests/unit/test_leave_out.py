"""Parts of a plan left out (synth.distill.leave_out): the outcomes say so, and the
artifact's regenerate command names every option that shaped it."""

from __future__ import annotations

import json
from pathlib import Path

from distill_runs import NO_ENGINE, cmd, dist, make_run_dir, system_python, venv
from msgspec.structs import replace
from test_uv_project import _uv_locker

from synth.config import Settings
from synth.distill.leave_out import Part, leave_out
from synth.distill.load import load_run
from synth.distill.plan import distill
from synth.export.artifact import ExportOptions, export_run
from synth.export.metadata import CitationOptions

TOOL = "/opt/tool"


def _run(tmp_path: Path) -> Path:
    tool = venv(TOOL, [dist("poetry", "2.5.1", location=f"{TOOL}/lib/python3.11/site-packages")])
    return make_run_dir(tmp_path, [
        cmd("python3 -m venv /opt/venv && /opt/venv/bin/pip install numpy==2.3.5"),
        cmd(f"python3 -m venv {TOOL}"), cmd(f"{TOOL}/bin/pip install poetry==2.5.1")],
        python=[system_python(), venv(dists=[dist("numpy", "2.3.5")]), tool])


def test_the_commands_of_an_environment_left_out_are_dropped_saying_why(
        tmp_path: Path) -> None:
    run = load_run(_run(tmp_path))
    _plan, report = distill(run)
    kept = {o.command: o.reason for o in report.outcomes if o.decision == "kept"}
    assert kept[f"python3 -m venv {TOOL}"] == f"Python environment {TOOL}"
    assert kept[f"{TOOL}/bin/pip install poetry==2.5.1"].startswith("requirements-opt-tool.lock ")
    # Distilled without the tool's environment, every command is decided knowing it.
    parts = [Part.parse(f"prefix:{TOOL}")]
    _plan, without = leave_out(*distill(run, without=parts), parts)
    after = {o.command: (o.decision, o.reason) for o in without.outcomes}
    assert after[f"python3 -m venv {TOOL}"] == (
        "dropped", f"left out on request (synth export --without); would be: Python "
        f"environment {TOOL}")
    decision, reason = after[f"{TOOL}/bin/pip install poetry==2.5.1"]
    assert decision == "dropped" and reason.startswith(
        "left out on request (synth export --without); would be: requirements-opt-tool.lock ")
    # The primary environment's commands are as they were.
    assert after["/opt/venv/bin/pip install numpy==2.3.5"][0] == "kept"
    assert after["python3 -m venv /opt/venv"] == ("kept", "Python environment /opt/venv")


def test_the_regenerate_command_names_the_options_that_shaped_the_artifact(
        tmp_path: Path) -> None:
    run = _run(tmp_path)
    opts = ExportOptions(run, out_dir=tmp_path / "out", locker=_uv_locker, ask_live=False,
                         without=(Part.parse(f"prefix:{TOOL}"),),
                         citation=CitationOptions(("Ada Lovelace <ada@example.org>",), "mit"))
    art = export_run(opts, Settings.load(artifacts_dir=tmp_path), NO_ENGINE).artifact_dir
    command = ("synth export demo/20261129-101500-a1b2c3 --without prefix:/opt/tool --author "
               "'Ada Lovelace <ada@example.org>' --license mit")
    assert f"# Regenerate: {command}\n" in (art / "Dockerfile").read_text()
    assert json.loads((art / "export-report.json").read_text())["command"] == command
    assert json.loads((art / "manifest.json").read_text())["command"] == command
    assert command in (art / "README.md").read_text()
    report = json.loads((art / "export-report.json").read_text())
    dropped = [c for c in report["commands"] if c["command"] == f"python3 -m venv {TOOL}"]
    assert [c["decision"] for c in dropped] == ["dropped"]
    # The paths carried (--include, the plan's own), quoted for the shell.
    plan, _report = distill(load_run(run))
    carried = replace(plan, includes=("/data/my weights",), export_options=("--bundle",))
    assert carried.regenerate_command == ("synth export demo/20261129-101500-a1b2c3 "
                                          "--include '/data/my weights' --bundle")
    # An export with no such options says only the run.
    plain = export_run(ExportOptions(run, out_dir=tmp_path / "plain", locker=_uv_locker,
                                     ask_live=False), Settings.load(artifacts_dir=tmp_path),
                       NO_ENGINE).artifact_dir
    assert "# Regenerate: synth export demo/20261129-101500-a1b2c3\n" in (
        plain / "Dockerfile").read_text()


def test_no_credentials_of_an_option_reach_the_artifact(tmp_path: Path) -> None:
    """An --apt-snapshot or --repository-url with a token in it: the regenerate command
    names the URL without it, and no file of the artifact holds the token."""
    run = _run(tmp_path)
    opts = ExportOptions(run, out_dir=tmp_path / "out", locker=_uv_locker, ask_live=False,
                         apt_snapshot="https://me:s3cr3t-tok@snap.example.org/{archive}/"
                                      "{timestamp}/",
                         citation=CitationOptions(
                             repository="https://oauth2:s3cr3t-tok@git.example.org/lab/x"))
    assert opts.command_words() == (
        "--apt-snapshot", "https://snap.example.org/{archive}/{timestamp}/",
        "--repository-url", "https://git.example.org/lab/x")
    art = export_run(opts, Settings.load(artifacts_dir=tmp_path), NO_ENGINE).artifact_dir
    leaks = [p.name for p in art.rglob("*") if p.is_file() and b"s3cr3t-tok" in p.read_bytes()]
    assert leaks == []


def test_a_repository_url_with_a_token_is_written_without_it(tmp_path: Path) -> None:
    """The plan names a repository without credentials, even where a URL with them got past
    the task file's rules (which refuse them)."""
    from types import SimpleNamespace

    from synth.distill.common import Notes
    from synth.distill.source import source_plan
    from synth.util.urls import without_credentials

    repo = SimpleNamespace(url="https://x-access-token:ghs_s3cr3t@github.com/lab/x.git",
                           commit="ab" * 20)
    plan = source_plan(SimpleNamespace(repo=repo), Notes())  # type: ignore[arg-type]
    assert plan.url == "https://github.com/lab/x.git" and plan.commit == "ab" * 20
    assert without_credentials("git@github.com:lab/x.git") == "git@github.com:lab/x.git"
    assert without_credentials("http://[::1") == "http://[::1"


def test_a_local_build_into_an_environment_left_out_goes_with_it(tmp_path: Path) -> None:
    """A uv-made venv has no pip, so its local build is replayed by the base's pip for it
    (``python3 -m pip --python ENV``): the step is found by the environment it installs
    into, not only by the program that runs it."""
    site = f"{TOOL}/lib/python3.11/site-packages"
    plugin = dist("plugin", "0.1", installer="uv", location=site,
                  direct_url={"url": "file:///workspace/plugin", "dir_info": {}})
    run = make_run_dir(tmp_path, [
        cmd("python3 -m venv /opt/venv && /opt/venv/bin/pip install numpy==2.3.5"),
        cmd(f"uv venv {TOOL}"),
        cmd(f"cd /workspace && uv pip install --python {TOOL}/bin/python ./plugin")],
        python=[system_python(), venv(dists=[dist("numpy", "2.3.5")]), venv(TOOL, [plugin])])
    plan, report = distill(load_run(run))
    [step] = plan.native
    assert step.distribution == "plugin==0.1" and step.argv[:5] == (
        "python3", "-m", "pip", "--python", f"{TOOL}/bin/python"), step
    parts = [Part.parse(f"prefix:{TOOL}")]
    after, report = leave_out(*distill(load_run(run), without=parts), parts)
    assert after.native == () and [e.prefix for e in after.envs] == ["/opt/venv"]
    [build] = [o for o in report.outcomes if o.ref == step.ref]
    assert build.decision == "dropped" and build.reason == (
        "left out on request (synth export --without); would be: native build step "
        "(local / VCS install), replayed in order"), build
