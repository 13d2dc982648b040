"""``synth export`` never destroys what it did not make, and refuses runs it cannot vouch for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from distill_runs import NO_ENGINE
from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.errors import ExportError, TaskError
from synth.export.artifact import ExportOptions, ExportResult, export_run


def _export_result(run_dir: Path, out: Path | None, **kw: Any) -> ExportResult:
    return export_run(ExportOptions(
        run_dir, out_dir=out, locker=fake_locker, ask_live=False, **kw),
        Settings.load(artifacts_dir=run_dir.parents[2]), NO_ENGINE)


def _export(run_dir: Path, out: Path | None, **kw: Any) -> Path:
    return _export_result(run_dir, out, **kw).artifact_dir


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
    assert report.index("NOT A TRUSTWORTHY RUN") < report.index(" kept, ")
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


@pytest.mark.parametrize(("url", "commit"), [
    ("-oProxyCommand=touch /tmp/pwned", "abcdef1"), ("ext::sh -c id", "abcdef1"),
    ("https://example.org/r.git", "--upload-pack=touch /tmp/pwned")])
def test_a_run_s_repository_url_meets_the_task_rules_before_git(
        tmp_path: Path, url: str, commit: str) -> None:
    """run.json is input: the URL and commit export would clone are checked as a task
    file's are, and git is never started on one that fails."""
    from synth.export.artifact import _clone

    with pytest.raises(ExportError, match="does not clone"):
        _clone(url, commit, tmp_path / "src")
    assert not (tmp_path / "src").exists()


def test_force_replaces_only_an_artifact_as_synth_made_it(tmp_path: Path) -> None:
    """--force (and a re-export into the run's own export/) keeps every file the manifest
    does not list by refusing, with the files named; verify's verification.json is the one
    file that is not the export's and moves into the new folder."""
    run_dir = _run(tmp_path)
    out = _export(run_dir, tmp_path / "art")
    (out / "verification.json").write_text('{"verified": "before"}\n')
    _export(run_dir, out, force=True)
    assert (out / "verification.json").read_text() == '{"verified": "before"}\n'

    (out / "my-notes.md").write_text("mine\n")
    with pytest.raises(ExportError, match=r"my-notes\.md \(not in the manifest\)"):
        _export(run_dir, out, force=True)
    assert (out / "my-notes.md").read_text() == "mine\n"
    (out / "my-notes.md").unlink()
    dockerfile = (out / "Dockerfile").read_text()
    (out / "Dockerfile").write_text(dockerfile + "# my fix\n")
    with pytest.raises(ExportError, match=r"Dockerfile \(changed since the export\)"):
        _export(run_dir, out, force=True)
    assert (out / "Dockerfile").read_text().endswith("# my fix\n")

    own = _export(run_dir, None)
    (own / "verification.json").write_text("{}\n")
    _export(run_dir, None)
    assert (own / "verification.json").read_text() == "{}\n"
    (own / "source" / "data.csv").write_text("1,2\n")
    with pytest.raises(ExportError, match=r"source/data\.csv"):
        _export(run_dir, None)
    assert (own / "source" / "data.csv").read_text() == "1,2\n"


def test_the_archive_never_writes_through_a_planted_link(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    first = _export_result(run_dir, tmp_path / "a", archive=True)
    assert first.archive is not None
    victims = []
    for name in (first.archive.name, first.archive.name + ".sha256",
                 f".{first.archive.name}.tmp"):
        victim = tmp_path / f"victim-{len(victims)}"
        victim.write_text("the user's file\n")
        victims.append(victim)
        (tmp_path / name).unlink(missing_ok=True)
        (tmp_path / name).symlink_to(victim)
    again = _export_result(run_dir, tmp_path / "a", archive=True, force=True)
    assert again.archive is not None and again.archive_sha256 == first.archive_sha256
    for victim in victims:
        assert victim.read_text() == "the user's file\n"
    assert not again.archive.is_symlink() and again.archive.is_file()
    sums = again.archive.with_name(again.archive.name + ".sha256")
    assert not sums.is_symlink() and sums.read_text().startswith(str(again.archive_sha256))


def test_a_run_naming_a_host_file_as_its_task_file_never_carries_it(tmp_path: Path) -> None:
    """run.json names the task file, and run.json is input: a file that is not a task file
    (a key, a password file) is not copied into the artifact."""
    run_dir = _run(tmp_path)
    secret = tmp_path / "id_rsa"
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    record = json.loads((run_dir / "run.json").read_text())
    record["task"]["task_file"] = str(secret)
    (run_dir / "run.json").write_text(json.dumps(record))
    with pytest.raises(TaskError, match="id_rsa: not valid TOML"):  # refused, named
        _export(run_dir, tmp_path / "a")
    assert not (tmp_path / "a").exists()
    # ... and where nothing earlier loads it, the copy itself takes a task file only.
    from synth.export.artifact import _task_file_text

    assert _task_file_text(str(secret)) is None
    assert _task_file_text(str(tmp_path / "tasks" / "demo" / "task.toml")) is not None
