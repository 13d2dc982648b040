"""``synth export`` never destroys what it did not make, and refuses runs it cannot vouch for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from distill_runs import NO_ENGINE
from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.errors import ExportError
from synth.export.artifact import ExportOptions, export_run


def _export(run_dir: Path, out: Path | None, **kw: object) -> Path:
    return export_run(ExportOptions(
        run_dir, out_dir=out, locker=fake_locker, ask_live=False, **kw),
        Settings.load(artifacts_dir=run_dir.parents[2]), NO_ENGINE).artifact_dir


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_refuses_a_non_empty_folder_it_did_not_make(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for force in (False, True):
        with pytest.raises(ExportError, match="not an artifact synth exported"):
            _export(run_dir, mine, force=force)
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_refuses_a_file_a_symlink_the_run_dir_and_its_parents(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    file = tmp_path / "notes.txt"
    file.write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    cases = {file: "not a folder", link: "symlink", run_dir: "would replace",
             run_dir.parent: "would replace", tmp_path: "would replace"}
    for dest, message in cases.items():
        with pytest.raises(ExportError, match=message):
            _export(run_dir, dest, force=True)
    assert file.read_text() == "keep"
    assert (run_dir / "run.json").is_file()


def test_refuses_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = _run(tmp_path)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.raises(ExportError, match="would replace"):
        _export(run_dir, Path("."), force=True)


def test_replaces_its_own_artifact_only_with_force(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    out = _export(run_dir, tmp_path / "art")
    before = _tree(out)
    with pytest.raises(ExportError, match="already holds an artifact"):
        _export(run_dir, tmp_path / "art")
    assert _tree(out) == before
    _export(run_dir, tmp_path / "art", force=True)
    assert _tree(out) == before
    # The run's own export/ folder is synth's: re-exporting there needs no --force.
    default = _export(run_dir, None)
    _export(run_dir, None)
    assert default == run_dir / "export"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".art.")]


def test_an_empty_folder_is_fine(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    (tmp_path / "empty").mkdir()
    assert (_export(run_dir, tmp_path / "empty") / "Dockerfile").is_file()


@pytest.mark.parametrize(("change", "why"), [
    ({"status": "interrupted"}, "ended `interrupted`"),
    ({"status": "timeout"}, "ended `timeout`"),
    ({"status": "incomplete", "error": "docker diff: boom"}, "docker diff: boom"),
    ({"status": "running", "owner": {"pid": 2**22 + 7, "host": "elsewhere"}},
     None),
    ({"audit": {"verified": False, "findings": ["events.jsonl was truncated"]}},
     "audit log is unverified: events.jsonl was truncated"),
])
def test_untrustworthy_runs_need_allow_incomplete(
    tmp_path: Path, change: dict[str, object], why: str | None
) -> None:
    run_dir = _run(tmp_path)
    record = json.loads((run_dir / "run.json").read_text())
    record.update(change)
    (run_dir / "run.json").write_text(json.dumps(record))
    if change.get("status") == "running":
        # A running run whose lease lapsed is abandoned.
        lease = run_dir / "logs" / "lease"
        lease.mkdir(parents=True)
        (lease / "lease").write_text("")
        import os
        os.utime(lease / "lease", (1, 1))
        why = "ended `abandoned`"
    assert why is not None
    with pytest.raises(ExportError, match="not a run synth can vouch for") as err:
        _export(run_dir, tmp_path / "out")
    assert why in err.value.message
    assert "--allow-incomplete" in (err.value.hint or "")
    assert not (tmp_path / "out").exists()
    out = _export(run_dir, tmp_path / "out", allow_incomplete=True)
    report = (out / "export-report.md").read_text()
    assert report.index("NOT A TRUSTWORTHY RUN") < report.index("commands kept")
    assert why in report
    assert json.loads((out / "export-report.json").read_text())["incomplete"]


def test_locks_never_carry_index_credentials() -> None:
    from synth.distill.plan import PythonEnvPlan
    from synth.export.lock import lock_options

    env = PythonEnvPlan(
        python="/opt/venv/bin/python", kind="venv", version="3.11.2", prefix="/opt/venv",
        create=(), pip=(), lock_file="x.lock", pins=(), break_system_packages=False,
        index_url="https://user:***@pypi.example.org/simple",
        extra_index_urls=("https://user:${MY_TOKEN}@extra.example.org/simple",),
        find_links=("https://tok@files.example.org/links",),
    )
    text = "\n".join(lock_options(env, ()))
    assert "@" not in text and "user" not in text and "MY_TOKEN" not in text
    assert "--index-url https://pypi.example.org/simple" in text
    assert "--extra-index-url https://extra.example.org/simple" in text
    assert "--find-links https://files.example.org/links" in text


def test_a_forged_distribution_name_cannot_add_rows_to_the_report(tmp_path: Path) -> None:
    # A decision's reason can quote a distribution's name from state/python.json, which the
    # agent's environment wrote: a pipe or a newline in it must not break the table.
    from distill_runs import cmd, dist, make_run_dir, system_python, venv

    forged = "evil|x\n| 9.9 | `rm -rf /` | kept |"
    run_dir = make_run_dir(tmp_path, [
        cmd("python3 -m venv /opt/venv"),
        cmd("cd /workspace && /opt/venv/bin/pip install .",
            hooks=[("cd /workspace", 0), ("/opt/venv/bin/pip install .", 0)]),
    ], python=[system_python(), venv(dists=[dist(forged, "1.0", installer=None)])])
    report = (_export(run_dir, tmp_path / "out") / "export-report.md").read_text()
    assert "evil\\|x \\| 9.9 \\| `rm -rf /` \\| kept \\|" in report
    assert not any(line.startswith("| 9.9 |") for line in report.splitlines())
