"""synth diff on synthetic runs and artifacts (docs/formats.md), no Docker."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from synth.compare.diff import (
    DIFF_FORMAT,
    DiffResult,
    dockerfile_steps,
    render_markdown,
    render_terminal,
)
from synth.compare.load import (
    DiffOptions,
    SideLoader,
    diff_command,
    parse_apt_lock,
    parse_requirements_lock,
)
from synth.config import Settings
from synth.engine.fingerprint import ImageProbe
from synth.errors import InputFileError
from synth.formats import artifact_files
from synth.formats.plan import (
    PLAN_FORMAT,
    AptPlan,
    BuildPlan,
    DistillReport,
    NativeStep,
    PythonEnvPlan,
    SourcePlan,
    plan_document,
)
from tests.distill_runs import NO_ENGINE
from tests.verify_outcomes import full_verify

SECTION_ORDER = ["pyramid", "claims", "provenance", "interpreter", "python", "conda",
                 "native_builds", "native_files", "python_files", "apt", "locks", "env",
                 "dockerfile", "files", "image_size"]


def pydist(name: str, version: str, *, direct_url: Mapping[str, Any] | None = None,
           installer: str | None = "pip") -> dict[str, Any]:
    return {"name": name, "version": version, "installer": installer, "requested": True,
            "direct_url": direct_url, "location": "/opt/venv/lib/python3.11/site-packages"}


GOOD_DISTS = [pydist("numpy", "2.1.0"), pydist("setuptools", "75.0.0"),
              pydist("fastops", "0.1.0", direct_url={"url": "file:///workspace",
                                                     "dir_info": {}})]
GOOD_AUDIT = [
    "apt-get update",
    "DEBIAN_FRONTEND=noninteractive apt-get install -y gcc python3-dev",
    "python3 -m venv /opt/venv",
    "/opt/venv/bin/pip install -r requirements.txt setuptools",
    "export CFLAGS='-O2 -g0' && /opt/venv/bin/pip install --no-build-isolation /workspace",
]


def make_run(
    root: Path,
    run_id: str,
    *,
    task: str = "demo",
    dists: Sequence[Mapping[str, Any]] = GOOD_DISTS,
    audit: Sequence[str] = GOOD_AUDIT,
    apt_added: Mapping[str, str] | None = None,
    apt_changed: Mapping[str, tuple[str, str]] | None = None,
    env: Mapping[str, str] | None = None,
    verify: Mapping[str, Any] | None = None,
    wheelhouse: str | None = None,
) -> Path:
    """A run directory on the real schema: run.json, audit.jsonl, state/*.json."""
    run_dir = root / "runs" / task / run_id
    (run_dir / "state").mkdir(parents=True)

    def dump(rel: str, data: Any) -> None:
        (run_dir / rel).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    dump("run.json", {
        "format": 1, "run_id": run_id, "synth_version": "0.1.0",
        "task": {"name": task, "task_file": f"/nonexistent/{task}/task.toml"},
        "agent": {"kind": "replay", "script": "/x/good.sh", "argv": None},
        "base_image": {"ref": "synth/python:bookworm", "id": "sha256:" + "ab" * 32,
                       "labels": {}},
        "started": "2026-11-29T10:15:00Z", "ended": "2026-11-29T10:16:40Z",
        "status": "succeeded", "agent_exit_code": 0,
        "source_tree": {"before": "0" * 64, "after": "0" * 64, "changed": []},
        "violations": [], "claims": {"status": "missing", "errors": []},
        "live_image": {"ref": f"synth-live/{task}:{run_id}", "id": "sha256:" + "cd" * 32},
        "wheelhouse": wheelhouse, "ca_bundle": True, "error": None, "timeout": None,
        "container": None, "kept": False, "secret_env": [], "capture_errors": [],
    })
    lines = [{"type": "header", "format": 1, "session": run_id,
              "started": "2026-11-29T10:15:00Z", "raw_events": 0, "unparsed": 0}]
    for seq, text in enumerate(audit, start=1):
        lines.append({"type": "command", "source": "bash-c", "session": run_id, "seq": seq,
                      "pid": 100 + seq, "ppid": 1, "command": text, "cwd": "/workspace",
                      "start": 1764410100.0 + seq, "end": 1764410100.5 + seq, "exit": 0,
                      "pipestatus": [0], "cwd_end": "/workspace", "depth": 0,
                      "parent_seq": None})
    (run_dir / "audit.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    base = {"libc6": "2.36-9+deb12u10", "python3": "3.11.2-1+b1"}
    added = dict(apt_added if apt_added is not None else {"gcc": "4:12.2.0-3",
                                                          "python3-dev": "3.11.2-1+b1"})
    changed = {k: list(v) for k, v in (apt_changed or {}).items()}
    final = {**base, **added, **{k: v[1] for k, v in changed.items()}}
    dump("state/apt.json", {"format": 1, "base": base, "final": final, "added": added,
                            "changed": changed, "removed": {}, "manual": sorted(added)})
    dump("state/python.json", {
        "format": 1, "primary": "/opt/venv/bin/python",
        "interpreters": [{
            "path": "/opt/venv/bin/python", "kind": "venv", "version": "3.11.2",
            "prefix": "/opt/venv", "base_prefix": "/usr", "created_by_agent": True,
            "distributions": sorted(dists, key=lambda d: d["name"]),
        }], "errors": [],
    })
    dump("state/env.json", {"format": 1, "persisted": dict(env or {}), "sources": {}})
    dump("state/diff.json", {"format": 1, "changes": [], "noise": []})
    if verify is not None:
        dump("verify.json", full_verify(verify))
    return run_dir


def plan_json(env: Sequence[tuple[str, str]], native: Sequence[NativeStep] = ()) -> str:
    """An artifact's plan.json, as export writes it."""
    venv = PythonEnvPlan(
        python="/opt/venv/bin/python", kind="venv", version="3.11.2", prefix="/opt/venv",
        create=("python3", "-m", "venv", "/opt/venv"), pip=("/opt/venv/bin/python", "-m", "pip"),
        lock_file="requirements.lock", pins=(), index_url="https://pypi.org/simple",
        extra_index_urls=(), find_links=(), break_system_packages=False)
    plan = BuildPlan(
        format=PLAN_FORMAT, task="demo", run_id="20261129-101500-aaaaaa",
        base_ref="synth/python:bookworm", base_id=None, base_digest=None, apt=AptPlan(),
        envs=(venv,),
        source=SourcePlan("path", "/workspace"), native=tuple(native), env=tuple(env),
        includes=(), python="/opt/venv/bin/python")
    return json.dumps(plan_document(plan, DistillReport(format=PLAN_FORMAT)))


def make_artifact(root: Path, name: str, dockerfile: str, *, lock: str = "",
                  apt: str = "", report: Mapping[str, Any] | None = None,
                  plan: str | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    if plan is not None:
        (d / "plan.json").write_text(plan)
    (d / "Dockerfile").write_text(dockerfile)
    (d / "requirements.lock").write_text(lock)
    (d / "apt.lock").write_text(apt)
    if report is not None:
        (d / "export-report.json").write_text(json.dumps({
            "format": 1, "command": "synth export", "commands": [],
            "counts": {"dropped": 0, "folded": 0, "kept": 0},
            "not_reproducible": [], "run_id": "20261129-101500-aaaaaa", "task": "demo",
            "unexplained": [], "warnings": [], **report}))
    (d / "manifest.json").write_text(json.dumps({
        "format": 1, "synth_version": "0.1.0",
        "base_image": {"ref": "synth/python:bookworm", "id": None, "digest": None},
        "claims": None, "command": "synth export", "export_format": "Dockerfile",
        "files": artifact_files.digests(d),
        "locks": {}, "probes": None, "python": None, "run_id": "20261129-101500-aaaaaa",
        "source": {"kind": "path", "dir": "source", "dest": "/workspace", "url": None,
                   "commit": None}, "task": "demo", "warnings": [], "wheel_files": [],
        "wheelhouse_required": False}))
    return d


def loader(tmp_path: Path) -> SideLoader:
    return SideLoader(Settings.load(artifacts_dir=tmp_path), images=ImageProbe(NO_ENGINE))


def diff(tmp_path: Path, a: str | Path, b: str | Path) -> DiffResult:
    from synth.compare.diff import diff_sides

    ld = loader(tmp_path)
    return diff_sides(ld.load(str(a)), ld.load(str(b)))


def items(result: DiffResult, section: str) -> list[tuple[str, str, str | None, str | None]]:
    return [(i.kind, i.key, i.a, i.b) for i in result.section(section).items]


# ----------------------------------------------------------------------------- runs
def test_run_against_itself_is_equal(tmp_path: Path) -> None:
    run = make_run(tmp_path, "20261129-101500-aaaaaa", env={"MAX_JOBS": "2"})
    result = diff(tmp_path, run, run)
    assert result.equal
    assert result.exit_code == 0
    assert [s.name for s in result.sections] == SECTION_ORDER
    statuses = {s.name: s.status for s in result.sections}
    for name in ("claims", "provenance", "interpreter", "python", "native_builds", "apt",
                 "env", "files"):
        assert statuses[name] == "equal", name
    for name in ("pyramid", "native_files", "python_files", "locks", "dockerfile",
                 "image_size"):
        assert statuses[name] == "unavailable", name


def test_exported_runs_compare_the_locks_of_their_exports(tmp_path: Path) -> None:
    """A run's locks are those of its export/, as its Dockerfile is (``synth diff RUN RUN``
    said "no lock files" beside two exports holding them: seen on nikdon/pyEntropy)."""
    a = make_run(tmp_path, "20261129-101500-aaaaaa")
    b = make_run(tmp_path, "20261129-101600-bbbbbb")
    for run, lock in ((a, LOCK), (b, LOCK.replace("2.1.0", "2.1.1"))):
        (run / "export").mkdir()
        (run / "export" / "manifest.json").write_text("{}")
        (run / "export" / "requirements.lock").write_text(lock)
    locks = diff(tmp_path, a, b).section("locks")
    assert locks.status == "differ"
    assert [(i.kind, i.key) for i in locks.items] == [
        ("changed", "requirements.lock: numpy")]
    for run in (a, b):  # not exports: nothing to compare
        (run / "export" / "manifest.json").unlink()
    assert diff(tmp_path, a, b).section("locks").status == "unavailable"


def test_versions_added_removed_and_source(tmp_path: Path) -> None:
    a = make_run(tmp_path, "20261129-101500-aaaaaa", dists=[
        pydist("numpy", "1.26.4"), pydist("requests", "2.31.0"), pydist("fastops", "0.1.0")])
    b = make_run(tmp_path, "20261129-101600-bbbbbb", dists=[
        pydist("numpy", "2.1.0"), pydist("wandb", "0.17.0"),
        pydist("fastops", "0.1.0", direct_url={"url": "file:///workspace", "dir_info": {}})])
    result = diff(tmp_path, a, b)
    assert not result.equal
    assert result.exit_code == 1
    py = result.section("python")
    assert [(i.kind, i.key, i.a, i.b, i.detail) for i in py.items] == [
        ("changed", "fastops", "0.1.0", "0.1.0", "index -> local build"),
        ("changed", "numpy", "1.26.4", "2.1.0", "index"),
        ("removed", "requests", "2.31.0", None, "index"),
        ("added", "wandb", None, "0.17.0", "index"),
    ]
    assert py.counts() == {"added": 1, "removed": 1, "changed": 2}


def test_run_ids_task_run_and_latest_resolve(tmp_path: Path) -> None:
    a = make_run(tmp_path, "20261129-101500-aaaaaa")
    b = make_run(tmp_path, "20261129-101600-bbbbbb", dists=[pydist("numpy", "2.1.0")])
    ld = loader(tmp_path)
    assert ld.load("20261129-101500-aaaaaa").identity["run_dir"] == str(a)
    assert ld.load("demo/20261129-101600-bbbbbb").identity["run_dir"] == str(b)
    assert ld.load("latest").identity["run_dir"] == str(b)
    assert ld.load(f"run:{a}").kind == "run"


def test_env_and_apt_changes(tmp_path: Path) -> None:
    a = make_run(tmp_path, "20261129-101500-aaaaaa",
                 env={"TORCH_CUDA_ARCH_LIST": "8.0", "KEEP": "1"})
    b = make_run(tmp_path, "20261129-101600-bbbbbb",
                 env={"TORCH_CUDA_ARCH_LIST": "8.0;9.0", "KEEP": "1", "MAX_JOBS": "4"},
                 apt_added={"gcc": "4:12.2.0-3", "build-essential": "12.9"},
                 apt_changed={"openssl": ("3.0.15-1~deb12u1", "3.0.17-1~deb12u2")})
    result = diff(tmp_path, a, b)
    assert items(result, "env") == [("added", "MAX_JOBS", None, "4"),
                                    ("changed", "TORCH_CUDA_ARCH_LIST", "8.0", "8.0;9.0")]
    assert items(result, "apt") == [
        ("added", "build-essential", None, "12.9"),
        ("added", "openssl", None, "3.0.17-1~deb12u2"),
        ("removed", "python3-dev", "3.11.2-1+b1", None),
    ]


def test_native_build_env_and_against(tmp_path: Path) -> None:
    a = make_run(tmp_path, "20261129-101500-aaaaaa")
    b_audit = [*GOOD_AUDIT[:-1], "/opt/venv/bin/pip install --no-build-isolation /workspace"]
    b_dists = [pydist("numpy", "1.26.4"), *GOOD_DISTS[1:]]
    b = make_run(tmp_path, "20261129-101600-bbbbbb", audit=b_audit, dists=b_dists)
    result = diff(tmp_path, a, b)
    native = result.section("native_builds")
    assert [(i.kind, i.key) for i in native.items] == [("changed", "fastops")]
    detail = native.items[0].detail
    assert "env CFLAGS: -O2 -g0 -> (unset)" in detail
    assert "against numpy: 2.1.0 -> 1.26.4" in detail


def test_pyramid_from_verify_json(tmp_path: Path) -> None:
    def verify(c1: str, reason: str | None = None) -> dict[str, Any]:
        return {"format": 1, "reports": {
            "live": {"target": {"kind": "live"}, "levels": [
                {"level": "C0", "status": "pass"}, {"level": "C1", "status": "pass"}]},
            "rebuilt": {"target": {"kind": "rebuilt"}, "levels": [
                {"level": "C0", "status": "pass"},
                {"level": "C1", "status": c1, "reason": reason}]},
        }}
    a = make_run(tmp_path, "20261129-101500-aaaaaa", verify=verify("pass"))
    b = make_run(tmp_path, "20261129-101600-bbbbbb", verify=verify("fail", "exit 1"))
    result = diff(tmp_path, a, b)
    assert items(result, "pyramid") == [("changed", "rebuilt C1", "pass", "fail: exit 1")]
    # One run verified, the other not: a difference (a missing input is never "equal").
    only_a = diff(tmp_path, a, make_run(tmp_path, "20261129-101700-cccccc"))
    assert only_a.section("pyramid").status == "differ"
    assert items(only_a, "pyramid") == [("removed", "verify.json", "present", None)]


def test_pyramid_refuses_newer_format(tmp_path: Path) -> None:
    """A verify.json of a newer synth is refused by the store, with its clear error."""
    from synth.errors import InputFileError

    report = {"target": {"kind": "live"}, "levels": [{"level": "C1", "status": "pass"}]}
    run = make_run(tmp_path, "20261129-101500-aaaaaa",
                   verify={"format": 99, "reports": {"live": report}})
    with pytest.raises(InputFileError, match="format 99 is newer"):
        loader(tmp_path).load(str(run))


def test_wheelhouse_source(tmp_path: Path) -> None:
    wh = tmp_path / "wheels"
    wh.mkdir()
    (wh / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    a = make_run(tmp_path, "20261129-101500-aaaaaa", wheelhouse=str(wh),
                 dists=[pydist("torch", "2.13.0+cpu"), pydist("numpy", "2.1.0")])
    side = loader(tmp_path).load(str(a))
    assert side.distributions is not None
    assert side.distributions["torch"].source == "wheelhouse"
    assert side.distributions["numpy"].source == "index"


# ------------------------------------------------------------------------ artifacts
DOCKERFILE_A = """\
# synth export Dockerfile --run demo/20261129-101500-aaaaaa
FROM synth/python:bookworm
RUN apt-get update && \\
    apt-get install -y gcc=4:12.2.0-3
COPY requirements.lock /tmp/
RUN /opt/venv/bin/pip install --require-hashes -r /tmp/requirements.lock
ENV PATH="/opt/venv/bin:$PATH" MAX_JOBS=2
"""
DOCKERFILE_B = DOCKERFILE_A.replace("MAX_JOBS=2", "MAX_JOBS=4").replace(
    "COPY requirements.lock /tmp/\n",
    "COPY requirements.lock /tmp/\nRUN python3 -m venv /opt/venv\n")
LOCK = """\
# synth export Dockerfile --run demo/20261129-101500-aaaaaa
--find-links /synth/wheelhouse
numpy==2.1.0 \\
    --hash=sha256:aaaa \\
    --hash=sha256:bbbb
torch==2.13.0+cpu \\
    --hash=sha256:cccc
"""


ENV_A = (("PATH", "/opt/venv/bin:$PATH"), ("MAX_JOBS", "2"))
ENV_B = (("PATH", "/opt/venv/bin:$PATH"), ("MAX_JOBS", "4"))


def test_artifact_dockerfile_step_diff(tmp_path: Path) -> None:
    native = [NativeStep(ref="7.0", tool="pip", argv=("/opt/venv/bin/pip", "install",
                                                      "--no-build-isolation", "/workspace"),
                         cwd="/workspace", env=(("CFLAGS", "-O2"),),
                         distribution="fastops==0.1.0")]
    a = make_artifact(tmp_path, "a", DOCKERFILE_A, lock=LOCK, apt="# apt\ngcc=4:12.2.0-3\n",
                      plan=plan_json(ENV_A, native))
    b = make_artifact(tmp_path, "b", DOCKERFILE_B, lock=LOCK.replace("2.1.0", "2.1.1"),
                      apt="# apt\ngcc=4:12.2.0-3\n", plan=plan_json(ENV_B, native))
    same = diff(tmp_path, a, a)
    assert same.equal, [s.to_json() for s in same.sections if s.status == "differ"]
    result = diff(tmp_path, a, b)
    assert items(result, "dockerfile") == [
        ("added", "step 4", None, "RUN python3 -m venv /opt/venv"),
        ("changed", "step 5", 'ENV PATH="/opt/venv/bin:$PATH" MAX_JOBS=2',
         'ENV PATH="/opt/venv/bin:$PATH" MAX_JOBS=4'),
    ]
    unified = result.section("dockerfile").unified
    assert unified[0] == "--- A/Dockerfile"
    assert "+RUN python3 -m venv /opt/venv" in unified
    assert items(result, "env") == [("changed", "MAX_JOBS", "2", "4")]
    assert items(result, "python") == [("changed", "numpy", "2.1.0", "2.1.1")]
    side = loader(tmp_path).load(str(a))
    assert side.distributions is not None
    assert side.distributions["fastops"].source == "local build"
    assert side.native_builds and side.native_builds[0].against == (("torch", "2.13.0+cpu"),
                                                                    ("numpy", "2.1.0"))


def test_run_against_artifact_compares_common_sections(tmp_path: Path) -> None:
    run = make_run(tmp_path, "20261129-101500-aaaaaa")
    art = make_artifact(tmp_path, "art", DOCKERFILE_A, lock="numpy==2.1.0 \\\n  --hash=sha256:a\n",
                        apt="gcc=4:12.2.0-3\n")
    result = diff(tmp_path, run, art)
    assert result.section("dockerfile").status == "unavailable"
    assert items(result, "apt") == [("removed", "python3-dev", "3.11.2-1+b1", None)]


def test_parsers() -> None:
    assert parse_apt_lock("# header\n\nb=2\na=1:1.0-1\n") == {"a": "1:1.0-1", "b": "2"}
    pins, find_links = parse_requirements_lock(LOCK + "Foo_Bar[x]==1.0 ; python_version>'3'\n")
    assert pins == {"numpy": "2.1.0", "torch": "2.13.0+cpu", "foo-bar": "1.0"}
    assert find_links
    steps = dockerfile_steps(DOCKERFILE_A)
    assert steps[1] == "RUN apt-get update && apt-get install -y gcc=4:12.2.0-3"
    assert len(steps) == 5


# ----------------------------------------------------------------- output and CLI
def test_json_shape(tmp_path: Path) -> None:
    a = make_run(tmp_path, "20261129-101500-aaaaaa")
    b = make_run(tmp_path, "20261129-101600-bbbbbb", env={"X": "1"})
    data = diff(tmp_path, a, b).to_json()
    assert data["format"] == DIFF_FORMAT
    assert set(data) == {"format", "equal", "a", "b", "sections", "warnings"}
    assert data["equal"] is False
    assert set(data["a"]) == {"kind", "label", "identity"}
    assert data["a"]["label"] == "demo/20261129-101500-aaaaaa"
    assert [s["name"] for s in data["sections"]] == SECTION_ORDER
    env = next(s for s in data["sections"] if s["name"] == "env")
    assert set(env) == {"name", "title", "status", "note", "counts", "items", "unified"}
    assert env["items"] == [{"kind": "added", "key": "X", "a": None, "b": "1", "detail": ""}]
    assert env["counts"] == {"added": 1, "removed": 0, "changed": 0}
    json.dumps(data)  # serialisable as is


def test_renderings(tmp_path: Path) -> None:
    from rich.console import Console

    a = make_artifact(tmp_path, "a", DOCKERFILE_A, lock=LOCK, plan=plan_json(ENV_A))
    b = make_artifact(tmp_path, "b", DOCKERFILE_B, lock=LOCK, plan=plan_json(ENV_B))
    result = diff(tmp_path, a, b)
    md = render_markdown(result)
    assert md.startswith("# synth diff: differ")
    assert "```diff" in md and "+RUN python3 -m venv /opt/venv" in md
    assert "| ~ | MAX_JOBS | 2 | 4 |  |" in md
    con = Console(record=True, width=120)
    render_terminal(result, con)
    text = con.export_text()
    assert "Environment variables: 1 changed" in text
    assert "MAX_JOBS" in text
    assert text.rstrip().endswith("differ")


def test_diff_command_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    a = make_run(tmp_path, "20261129-101500-aaaaaa")
    b = make_run(tmp_path, "20261129-101600-bbbbbb", env={"X": "1"})
    opts = DiffOptions(a=str(a), b=str(a), json=True, artifacts_dir=tmp_path)
    assert diff_command(opts) == 0
    assert json.loads(capsys.readouterr().out)["result"]["equal"] is True
    assert diff_command(DiffOptions(a=str(a), b=str(b), artifacts_dir=tmp_path)) == 1
    assert diff_command(DiffOptions(a=str(a), b="no-such-run", artifacts_dir=tmp_path)) == 2
    err = capsys.readouterr().err
    assert "no-such-run is not a run" in err
    assert diff_command(DiffOptions(a=str(a), b=str(tmp_path), artifacts_dir=tmp_path)) == 2


def test_cli_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from synth.cli import app

    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    a = make_run(tmp_path, "20261129-101500-aaaaaa")
    runner = CliRunner()
    res = runner.invoke(app, ["diff", str(a), str(a), "--md"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("# synth diff: equal")
    res = runner.invoke(app, ["diff", str(a), "nothing-here"])
    assert res.exit_code == 2


def test_native_builds_from_plan_json(tmp_path: Path) -> None:
    """An artifact's native builds come from its plan.json, never from its Dockerfile."""
    native = [
        NativeStep(ref="14.0", tool="pip-local",
                   argv=("/opt/venv/bin/python", "-m", "pip", "install", "--no-deps",
                         "--no-build-isolation", "/workspace"), cwd="/workspace",
                   env=(("CFLAGS", "-O2 -g0"), ("MAX_JOBS", "2")),
                   distribution="fastops==0.1.0"),
        NativeStep(ref="15.0", tool="make", argv=("make", "-j2"), cwd="/workspace/tools",
                   env=()),
    ]
    art = make_artifact(tmp_path, "a", "FROM scratch\n",
                        lock="numpy==2.1.0 \\\n  --hash=sha256:a\n",
                        plan=plan_json((("VIRTUAL_ENV", "/opt/venv"),), native))
    side = loader(tmp_path).load(f"artifact:{art}")
    assert side.native_builds is not None
    assert [n.key for n in side.native_builds] == ["fastops", "make -j2"]
    assert side.native_builds[0].env == (("CFLAGS", "-O2 -g0"), ("MAX_JOBS", "2"))
    assert side.distributions is not None
    assert side.distributions["fastops"].source == "local build"
    assert side.env == {"VIRTUAL_ENV": "/opt/venv"}
    assert side.interpreter == {"base_image": "synth/python:bookworm",
                                "path": "/opt/venv/bin/python", "python": "3.11.2"}


def test_artifact_without_plan_json_says_what_is_unknown(tmp_path: Path) -> None:
    """An artifact exported before plan.json: native builds and ENV unknown, not guessed."""
    art = make_artifact(tmp_path, "old", DOCKERFILE_A, lock=LOCK)
    side = loader(tmp_path).load(f"artifact:{art}")
    assert side.native_builds is None and side.env is None
    assert any("no plan.json" in w for w in side.warnings)
    assert side.dockerfile is not None and side.distributions is not None


def test_newer_plan_json_is_refused(tmp_path: Path) -> None:
    doc = json.loads(plan_json(ENV_A))
    doc["format"] = 99
    art = make_artifact(tmp_path, "new", DOCKERFILE_A, plan=json.dumps(doc))
    with pytest.raises(InputFileError, match="newer"):
        loader(tmp_path).load(f"artifact:{art}")


def test_run_native_builds_match_its_artifact(tmp_path: Path) -> None:
    """A run and a Dockerfile rendered from it describe the same build the same way."""
    run = make_run(tmp_path, "20261129-101500-aaaaaa")
    run_side = loader(tmp_path).load(str(run))
    assert run_side.native_builds is not None
    (build,) = run_side.native_builds
    assert build.key == "fastops"
    assert ("CFLAGS", "-O2 -g0") in build.env
    assert build.against == (("numpy", "2.1.0"),)


class FakeEngine:
    """Just enough of DockerEngine for loading image sides."""

    def __init__(self, images: Mapping[str, Mapping[str, Any]]) -> None:
        self.images = images

    def ping(self) -> None:
        return None

    def image_exists(self, ref: str) -> bool:
        return ref in self.images

    def image_inspect(self, ref: str) -> dict[str, Any]:
        return dict(self.images[ref])


class FakeFingerprintLoader(SideLoader):
    def __init__(self, settings: Settings, engine: FakeEngine,
                 prints: Mapping[str, Mapping[str, Any]]) -> None:
        super().__init__(settings, images=engine)
        self.prints = prints
        self.asked: list[tuple[str, str]] = []

    def fingerprint_of(self, ref: str, python: str) -> Any:
        from synth.formats.fingerprint import Fingerprint

        self.asked.append((ref, python))
        return Fingerprint.from_json(self.prints[ref])


def image_print(numpy: str, so_hash: str) -> dict[str, Any]:
    return {
        "format": 1,
        "python": {"version": "3.11.2", "implementation": "CPython",
                   "executable": "/opt/venv/bin/python"},
        "platform": {"machine": "x86_64"}, "glibc": "2.36",
        "distributions": [{"name": "numpy", "version": numpy, "installer": "pip",
                           "location": "/opt/venv/lib/python3.11/site-packages",
                           "digest": "d" * 64, "files": 10}],
        "native": [{"path": "/workspace/_ext.so", "sha256": so_hash, "size": 1,
                    "owner": None, "where": "workdir"}],
        "unowned": [], "dpkg": {"libc6": "2.36-9+deb12u10"},
    }


def test_images_compare_through_fingerprints(tmp_path: Path) -> None:
    engine = FakeEngine({
        "live:1": {"Id": "sha256:1", "Size": 1000, "Config": {
            "Env": None, "Labels": {"synth.task": "demo",
                                    "synth.run": "20261129-101500-aaaaaa",
                                    "synth.kind": "live"}}},
        "rebuilt:1": {"Id": "sha256:2", "Size": 900, "Config": {
            "Env": ["VIRTUAL_ENV=/opt/venv"], "Labels": {}}},
    })
    make_run(tmp_path, "20261129-101500-aaaaaa")
    ld = FakeFingerprintLoader(Settings.load(artifacts_dir=tmp_path), engine, {
        "live:1": image_print("2.1.0", "a" * 64), "rebuilt:1": image_print("2.1.0", "b" * 64)})
    from synth.compare.diff import diff_sides

    result = diff_sides(ld.load("live:1"), ld.load("image:rebuilt:1"))
    # live: the run's primary interpreter (from the labels); rebuilt: its VIRTUAL_ENV.
    assert ld.asked == [("live:1", "/opt/venv/bin/python"),
                        ("rebuilt:1", "/opt/venv/bin/python")]
    assert result.section("python").status == "equal"
    assert result.section("apt").status == "equal"
    assert items(result, "native_files") == [
        ("changed", "/workspace/_ext.so", "a" * 12, "b" * 12)]
    assert items(result, "env") == [("added", "VIRTUAL_ENV", None, "/opt/venv")]
    size = result.section("image_size")
    assert size.status == "info" and size.items[0].detail == "-100 B"
    assert result.exit_code == 1


def test_malformed_run_is_an_error_not_a_difference(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")
    run = make_run(tmp_path, "20261129-101500-aaaaaa")
    (run / "state" / "python.json").write_text(json.dumps(
        {"format": 1, "primary": "/opt/venv/bin/python",
         "interpreters": [{"path": "/opt/venv/bin/python", "distributions": [{"v": 1}]}]}))
    assert diff_command(DiffOptions(a=str(run), b=str(run), artifacts_dir=tmp_path)) == 2


def test_pyramid_compares_only_targets_verified_on_both_sides(tmp_path: Path) -> None:
    def report(kind: str, c1: str) -> dict[str, Any]:
        return {"target": {"kind": kind}, "levels": [{"level": "C1", "status": c1}]}

    a = make_run(tmp_path, "20261129-101500-aaaaaa",
                 verify={"format": 1, "reports": {"live": report("live", "pass")}})
    b = make_run(tmp_path, "20261129-101600-bbbbbb", verify={"format": 1, "reports": {
        "live": report("live", "pass"), "rebuilt": report("rebuilt", "fail")}})
    section = diff(tmp_path, a, b).section("pyramid")
    assert section.status == "equal"
    assert section.note == "live: C1 pass; only B verified rebuilt"
    c = make_run(tmp_path, "20261129-101700-cccccc",
                 verify={"format": 1, "reports": {"rebuilt": report("rebuilt", "pass")}})
    section = diff(tmp_path, a, c).section("pyramid")
    assert section.status == "unavailable"
    assert section.note == ("no target verified on both sides (only A verified live; "
                            "only B verified rebuilt)")


def test_patched_and_workspace_files_are_named_in_python_files(tmp_path: Path) -> None:
    engine = FakeEngine({
        "live:1": {"Id": "sha256:1", "Size": 1000, "Config": {"Env": None, "Labels": {}}},
        "rebuilt:1": {"Id": "sha256:2", "Size": 1000, "Config": {"Env": None, "Labels": {}}},
    })
    live = image_print("2.1.0", "a" * 64)
    live["distributions"][0]["modified"] = [{"path": "numpy/__init__.py",
                                             "record_sha256": "x", "sha256": "e" * 64}]
    live["workspace"] = {"files": {".git/HEAD": "f" * 64, "train.py": "1" * 64,
                                   "_ext.so": "a" * 64}, "truncated": False}
    rebuilt = image_print("2.1.0", "a" * 64)
    rebuilt["workspace"] = {"files": {"train.py": "2" * 64, "_ext.so": "b" * 64},
                            "truncated": False}
    ld = FakeFingerprintLoader(Settings.load(artifacts_dir=tmp_path), engine,
                               {"live:1": live, "rebuilt:1": rebuilt})
    from synth.compare.diff import diff_sides

    result = diff_sides(ld.load("image:live:1"), ld.load("image:rebuilt:1"))
    assert items(result, "python_files") == [
        ("changed", "numpy: numpy/__init__.py", "e" * 12, "as RECORD"),
        ("removed", "/workspace/.git/HEAD", "f" * 12, None),
        ("changed", "/workspace/train.py", "1" * 12, "2" * 12),
    ]


def test_a_distributions_differing_files_are_items_of_python_files(tmp_path: Path) -> None:
    """Same numpy version, other content: where both sides listed numpy's files, each
    differing file is its own item; where they did not, the distribution is one item."""
    from dataclasses import replace

    from synth.compare.diff import diff_sides, render_markdown

    engine = FakeEngine({
        "live:1": {"Id": "sha256:1", "Size": 1000, "Config": {"Env": None, "Labels": {}}},
        "rebuilt:1": {"Id": "sha256:2", "Size": 1000, "Config": {"Env": None, "Labels": {}}},
    })
    live, rebuilt = image_print("2.1.0", "a" * 64), image_print("2.1.0", "a" * 64)
    rebuilt["distributions"][0]["digest"] = "e" * 64
    ld = FakeFingerprintLoader(Settings.load(artifacts_dir=tmp_path), engine,
                               {"live:1": live, "rebuilt:1": rebuilt})
    a, b = ld.load("image:live:1"), ld.load("image:rebuilt:1")
    assert items(diff_sides(a, b), "python_files") == [
        ("changed", "numpy", "d" * 12, "e" * 12)]
    assert a.fingerprint is not None and b.fingerprint is not None
    a = replace(a, fingerprint=replace(a.fingerprint, dist_files={
        "numpy": {"numpy/__init__.py": "1" * 64, "numpy/old.py": "3" * 64}}))
    b = replace(b, fingerprint=replace(b.fingerprint, dist_files={
        "numpy": {"numpy/__init__.py": "2" * 64}}))
    result = diff_sides(a, b)
    assert items(result, "python_files") == [
        ("changed", "numpy: numpy/__init__.py", "1" * 12, "2" * 12),
        ("removed", "numpy: numpy/old.py", "3" * 12, None)]
    assert result.section("python_files").items[0].detail == (
        f"same version, other content ({'d' * 12} -> {'e' * 12})")
    assert "numpy: numpy/old.py" in render_markdown(result)


@pytest.mark.parametrize(("installed", "source"), [
    ({"installer": "pip", "direct_url": {"url": "file:///workspace/PythonAPI",
                                         "dir_info": {"editable": True}}}, "editable"),
    ({"installer": "pip", "direct_url": {"url": "file:///workspace/PythonAPI",
                                         "dir_info": {}}}, "local build"),
    # pip's legacy `setup.py install`: no INSTALLER, no direct_url.json (as on cocoapi).
    ({"installer": None}, "setup.py install"),
])
def test_a_run_and_its_artifact_describe_a_local_build_alike(
        tmp_path: Path, installed: dict[str, Any], source: str) -> None:
    """A distribution the artifact replays with the run's own command is installed the way
    the run had it: both sides name the same source (on cocoapi the run said "os package"
    and the artifact "local build", a difference that was not there)."""
    from distill_runs import NO_ENGINE, cmd, dist, make_run_dir, system_python, venv
    from test_render_golden import fake_locker

    from synth.export.artifact import ExportOptions, export_run

    editable = bool((installed.get("direct_url") or {}).get("dir_info", {}).get("editable"))
    line = ("cd /workspace/PythonAPI && /opt/venv/bin/pip install --no-build-isolation "
            + ("-e ." if editable else "."))
    run_dir = make_run_dir(
        tmp_path, [cmd("python3 -m venv /opt/venv"), cmd("/opt/venv/bin/pip install numpy"),
                   cmd(line)],
        python=[system_python(), venv(dists=[dist("numpy", "2.3.5"),
                                             dist("pycocotools", "2.0", **installed)])],
        diff=[("A", "/workspace/PythonAPI/pycocotools.egg-info")])
    art = export_run(ExportOptions(
        run_dir, locker=fake_locker, ask_live=False),
        Settings.load(artifacts_dir=tmp_path), NO_ENGINE).artifact_dir
    ld = loader(tmp_path)
    run_side, art_side = ld.load(str(run_dir)), ld.load(f"artifact:{art}")
    assert run_side.distributions is not None and art_side.distributions is not None
    assert run_side.distributions["pycocotools"].source == source
    assert art_side.distributions["pycocotools"].source == source
    from synth.compare.diff import diff_sides

    assert diff_sides(run_side, art_side).section("python").status == "equal"
