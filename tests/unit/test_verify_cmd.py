"""`synth verify` without Docker: the host runtime end to end, targets, usage errors, output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from synth.config import Settings
from synth.errors import UsageError
from synth.formats.verify import VerifyDocument
from synth.ui.verify_view import render_markdown
from synth.verify.command import VerifyOptions, parse_levels, resolve_target, verify
from tests.distill_runs import NO_ENGINE, manifest
from tests.verify_outcomes import full_verify

SYNTH = [sys.executable, "-m", "synth"]


def make_task(tmp: Path, cpu_command: str = "python main.py") -> Path:
    task_dir = tmp / "hosttask"
    repo = task_dir / "repo"
    repo.mkdir(parents=True)
    (repo / "main.py").write_text("import json, sys\nfrom lib import helper\nprint('ok')\n")
    (repo / "lib.py").write_text("def helper():\n    return 1\n")
    (task_dir / "task.toml").write_text(textwrap.dedent(f"""\
        name = "hosttask"
        base_image = "synth/python:bookworm"
        [repo]
        path = "repo"
        [probes.cpu]
        command = "{cpu_command}"
        timeout = 60
        [not_applicable]
        C3 = "CPU only"
        C4 = "CPU only"
        """))
    return task_dir


def test_cli_host_runtime_verifies_this_interpreter(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path)
    out = tmp_path / "out"
    proc = subprocess.run(
        [*SYNTH, "verify", str(task_dir), "--runtime", "host", "--python", sys.executable,
         "-o", str(out), "--json"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "SYNTH_ARTIFACTS": str(tmp_path / "art")},
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["result"]
    assert doc["decides"] == "host"
    lv = {r["level"]: r for r in doc["reports"]["host"]["levels"]}
    assert lv["C0"]["status"] == lv["C1"]["status"] == "pass"
    assert lv["C0"]["metrics"]["import_statements"] == 2  # json, sys; lib is the repo's own
    assert lv["C2"]["status"] in ("skipped", "pass", "fail")
    assert lv["C5"]["reason"].startswith("no claims")
    assert json.loads((out / "verify.json").read_text()) == {
        k: v for k, v in doc.items() if k != "out_dir"}
    assert "| C1 | runs on CPU | pass |" in (out / "verify.md").read_text()


def test_failing_entrypoint_exits_1(tmp_path: Path) -> None:
    task_dir = make_task(tmp_path, cpu_command="echo bad config: lr >&2; exit 3")
    outcome = verify(
        VerifyOptions(target=str(task_dir), runtime="host", python=Path(sys.executable),
                      out_dir=tmp_path / "o", levels=parse_levels("C0,C1")),
        Settings.load(artifacts_dir=tmp_path / "art"), None, say=lambda _m: None)
    assert outcome.exit_code == 1
    c1 = outcome.reports["host"].get("C1")
    # What the entrypoint said about its failure is in the reason, as for C3 and C4.
    assert c1 is not None and c1.summary == "fail: CPU entrypoint failed (exit 3): bad config: lr"
    c2 = outcome.reports["host"].get("C2")
    assert c2 is not None and c2.summary == "skipped: not selected (--levels)"
    # --require C0 only looks at C0.
    ok = verify(
        VerifyOptions(target=str(task_dir), runtime="host", python=Path(sys.executable),
                      out_dir=tmp_path / "o2", levels=parse_levels("C0,C1"), require="C0"),
        Settings.load(artifacts_dir=tmp_path / "art"), None, say=lambda _m: None)
    assert ok.exit_code == 0


def test_a_checkout_hiding_the_installed_package_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the repository's root, ``import op`` finds the checkout's op/, which has no
    compiled ``_C``: the installed copy, which has it, is hidden. C0i and C1 say so."""
    task_dir = make_task(tmp_path, cpu_command="python main.py")
    repo = task_dir / "repo"
    (repo / "op").mkdir()
    (repo / "op" / "__init__.py").write_text("from . import _C\n")
    (repo / "main.py").write_text("import op\n")
    toml = task_dir / "task.toml"
    toml.write_text(toml.read_text().replace(
        "[probes.cpu]", '[probes]\nnative_modules = ["op._C"]\n\n[probes.cpu]'))
    site = tmp_path / "site" / "op"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("from . import _C\n")
    (site / "_C.py").write_text("")  # stands in for the compiled module
    monkeypatch.setenv("PYTHONPATH", str(site.parent))
    outcome = verify(
        VerifyOptions(target=str(task_dir), runtime="host", python=Path(sys.executable),
                      out_dir=tmp_path / "o", levels=parse_levels("C0i,C1")),
        Settings.load(artifacts_dir=tmp_path / "art"), None, say=lambda _m: None)
    report = outcome.reports["host"]
    hidden = (f"(imported from {repo / 'op' / '__init__.py'}, which hides another copy at "
              f"{site / '__init__.py'}: a checkout run from its root")
    for level in ("C0i", "C1"):
        got = report.get(level)  # type: ignore[arg-type]
        assert got is not None and got.status == "fail", level
        assert hidden in (got.reason or ""), (level, got.reason)
    c1 = report.get("C1")
    assert c1 is not None and (c1.reason or "").startswith(
        "native module(s) do not import: op._C (ImportError: cannot import name '_C'")


def test_usage_errors(tmp_path: Path) -> None:
    settings = Settings.load(artifacts_dir=tmp_path / "art")
    art = tmp_path / "export"
    art.mkdir()
    (art / "manifest.json").write_text(json.dumps(manifest(task="t",
                                                           python="/opt/venv/bin/python")))
    target = resolve_target(str(art), settings, "docker")
    assert target.kind == "artifact"
    with pytest.raises(UsageError, match="--rebuild"):
        verify(VerifyOptions(target=str(art)), settings, NO_ENGINE, say=lambda _m: None)
    with pytest.raises(UsageError, match="--python"):
        verify(VerifyOptions(target=str(art), runtime="host"), settings, None,
               say=lambda _m: None)
    with pytest.raises(UsageError, match="unknown level"):
        parse_levels("C0,C9")


def test_the_fingerprint_line_tells_debug_info_from_other_native_differences() -> None:
    def line(native_equal: bool, code_equal: bool) -> str:
        doc = full_verify({"reports": {"rebuilt": {"target": {"image": "i", "python": "/p"},
                                                   "levels": [{"level": "C0",
                                                               "status": "pass"}]}},
                           "fingerprint": {"status": "compared", "equal": native_equal,
                                           "packages_equal": True, "content_equal": True,
                                           "native_equal": native_equal,
                                           "native_code_equal": code_equal,
                                           "unexplained": [], "explained": []}})
        md = render_markdown(VerifyDocument.from_json(doc))
        return next(x for x in md.splitlines() if x.startswith("fingerprint"))

    assert "native .so equal, contents equal" in line(True, True)
    assert "native .so the same code (debug info differs)," in line(False, True)
    assert "native .so DIFFER," in line(False, False)


def test_markdown_side_by_side_with_gap() -> None:
    def report(c0: dict[str, object], c1: dict[str, object]) -> dict[str, object]:
        return {"target": {"image": "img", "python": "/p"}, "highest": None,
                "levels": [{"level": "C0", **c0}, {"level": "C1", **c1}]}

    doc = {
        "target": {"task": "t", "kind": "run", "path": "/r"}, "require": "C1",
        "decides": "rebuilt", "passed": False, "build": None, "fingerprint": None,
        "reports": {
            "rebuilt": report({"status": "fail", "reason": "1/3 imports unresolved: yaml "
                               "(pyyaml)", "metrics": {}, "details": {"missing": [
                                   {"module": "yaml", "distribution": "pyyaml",
                                    "distribution_source": "mapping",
                                    "locations": ["a.py:1"]},
                                   {"module": "cv2", "distribution": "opencv-python",
                                    "distribution_source": "mapping", "status": "errored",
                                    "error": "ImportError: libGL.so.1: cannot open shared "
                                    "object file", "locations": ["a.py:2"]},
                                   {"module": "lib.io", "distribution": "lib",
                                    "status": "missing", "error": "ModuleNotFoundError: No "
                                    "module named 'h5py'", "locations": ["a.py:3"]},
                                   {"module": "pkg.sub", "distribution": "pkg",
                                    "status": "missing", "error": "ModuleNotFoundError: No "
                                    "module named 'pkg'", "locations": ["a.py:4"]}]}},
                              {"status": "pass", "reason": None}),
            "live": report({"status": "pass", "reason": None},
                           {"status": "pass", "reason": None}),
        },
        "fidelity": {"live_highest": "C1", "rebuilt_highest": None,
                     "reaches_live_level": False,
                     "gaps": [{"level": "C0", "live": "pass", "rebuilt": "fail: …"}]},
    }
    md = render_markdown(VerifyDocument.from_json(full_verify(doc)))
    assert "| C0 | static imports | FAIL: 1/3 imports unresolved: yaml (pyyaml) | pass |" in md
    assert "| C1 | runs on CPU | pass | pass |" in md  # levels are independent
    assert "missing yaml -> install pyyaml (mapping) (at a.py:1)" in md
    assert "missing cv2 -> present, but importing its package raised ImportError: " \
        "libGL.so.1: cannot open shared object file" in md
    assert "missing lib.io -> its package is present, but importing it needs h5py " \
        "(ModuleNotFoundError: No module named 'h5py')" in md
    assert ("missing pkg.sub -> no distribution on record provides it (perhaps `pkg`: the "
            "import's own name, a guess)") in md
    assert "fidelity: the rebuilt image does NOT match the live image" in md
    assert md.count("FAILED") == 1
    assert "FAILED: the rebuilt target fails C0 (required up to C1)" in md


def test_fidelity_fails_on_an_unexplained_difference_and_says_so() -> None:
    from synth.pyramid.result import LevelResult, Report
    from synth.verify.command import judge_fidelity
    from synth.verify.outcome import FingerprintOutcome

    def report(c1: str) -> Report:
        return Report({"kind": "x"}, (LevelResult("C0", "pass"), LevelResult("C1", c1)))  # type: ignore[arg-type]

    ok = judge_fidelity(report("pass"), report("pass"), FingerprintOutcome("compared"))
    assert ok.reaches_live_level is True and ok.failures == ()
    assert ok.to_json()["live_highest"] == "C1"
    bad = judge_fidelity(report("pass"), report("pass"), FingerprintOutcome(
        "compared", unexplained=("patched: patched pkg: pkg/x.py (1 -> as RECORD)",)))
    assert bad.reaches_live_level is False
    assert bad.failures == ("differs: patched: patched pkg: pkg/x.py (1 -> as RECORD)",)
    err = judge_fidelity(report("pass"), report("pass"),
                         FingerprintOutcome("error", "probe timed out"))
    assert err.reaches_live_level is False
    assert err.failures == ("fingerprint error: probe timed out",)
    assert judge_fidelity(report("pass"), report("pass"), None).reaches_live_level is False
    gap = judge_fidelity(report("fail"), report("pass"), FingerprintOutcome("compared"))
    assert gap.failures == ("gap C1",) and gap.to_json()["reaches_live_level"] is False


def _artifact(tmp_path: Path) -> Path:
    import hashlib

    art = tmp_path / "export"
    (art / "source").mkdir(parents=True)
    (art / "Dockerfile").write_text("FROM x\n")
    (art / "source" / "train.py").write_text("print(1)\n")
    files = {rel: hashlib.sha256((art / rel).read_bytes()).hexdigest()
             for rel in ("Dockerfile", "source/train.py")}
    from distill_runs import manifest

    (art / "manifest.json").write_text(json.dumps(manifest(files=files, python="/p")))
    return art


def test_a_modified_artifact_is_refused_naming_the_files(tmp_path: Path) -> None:
    from synth.errors import VerifyError
    from synth.verify.rebuild import check_artifact, checked_artifact, rebuilt_tag

    art = _artifact(tmp_path)
    manifest = json.loads((art / "manifest.json").read_text())
    files, problems = check_artifact(art, manifest)
    assert problems == []
    (art / "verification.json").write_text("{}")  # added by verify after export: ignored
    assert check_artifact(art, manifest)[1] == []
    tag = rebuilt_tag("t", files, b"m")
    (art / "source" / "train.py").write_text("print(2)\n")
    (art / "Dockerfile").unlink()
    (art / "source" / "extra.py").write_text("")
    files2, problems = check_artifact(art, manifest)
    assert problems == ["Dockerfile: missing", "source/extra.py: added (not in the manifest)",
                        "source/train.py: modified"]
    assert rebuilt_tag("t", files2, b"m") != tag  # the tag follows every file
    with pytest.raises(VerifyError, match=r"source/train\.py: modified") as err:
        checked_artifact(art, False, lambda _m: None)
    assert err.value.hint is not None and "--allow-modified" in err.value.hint
    said: list[str] = []
    check = checked_artifact(art, True, said.append)
    assert check.to_json()["allow_modified"] is True
    assert check.to_json()["problems"] == problems
    assert "MODIFIED" in said[0]


def test_a_tls_failure_in_the_build_log_says_so(tmp_path: Path) -> None:
    from synth.errors import BuildError
    from synth.verify.rebuild import tls_hint

    log = tmp_path / "build.log"
    log.write_text("pip._vendor...SSLError(SSLCertVerificationError(1, '[SSL: "
                   "CERTIFICATE_VERIFY_FAILED] certificate verify failed'))\n")
    err = tls_hint(BuildError("the build failed (exit 1)"), log)
    assert "failed on TLS" in err.message
    assert err.hint is not None and "--ca-bundle" in err.hint
    log.write_text("E: Unable to locate package nope\n")
    plain = BuildError("the build failed (exit 100)")
    assert tls_hint(plain, log) is plain


def _exported_run(tmp_path: Path) -> Path:
    """A run with an export/ as `synth export` would leave it (manifest matching the run)."""
    import hashlib

    from synth import __version__
    from synth.formats.store import RunDir
    from tests.distill_runs import make_run_dir

    run_dir = make_run_dir(tmp_path, claims={"python_path": "/opt/venv/bin/python"})
    art = run_dir / "export"
    art.mkdir()
    (art / "Dockerfile").write_text("FROM x\n")
    (art / "claims.json").write_bytes((run_dir / "claims.json").read_bytes())
    files = {rel: hashlib.sha256((art / rel).read_bytes()).hexdigest()
             for rel in ("Dockerfile", "claims.json")}
    (art / "manifest.json").write_text(json.dumps(manifest(
        files=files, python="/opt/venv/bin/python", synth_version=__version__,
        inputs=RunDir(run_dir).input_hashes(), incomplete=[])))
    from synth import source_digest
    from synth.export.artifact import EXPORT_STAMP

    (run_dir / EXPORT_STAMP).write_text(source_digest() + "\n")
    return run_dir


def test_an_identical_export_is_reused_not_redone(tmp_path: Path) -> None:
    from synth.verify.rebuild import artifact_for_run, reusable_export

    run_dir = _exported_run(tmp_path)
    found, why = reusable_export(run_dir)
    assert found == run_dir / "export", why
    said: list[str] = []
    use = artifact_for_run(run_dir, Settings.load(artifacts_dir=tmp_path), NO_ENGINE,
                           said.append)
    assert use.reused is True and use.artifact_dir == run_dir / "export"
    assert use.to_json()["reused"] is True
    assert said == [f"Reusing the existing export {run_dir / 'export'} ({why})"]


@pytest.mark.parametrize(("change", "why"), [
    ("version", "made by synth 0.0.1"),
    ("build", "made by a different build of synth"),
    ("run", "the run's files changed"),
    ("artifact", "the earlier export was modified (Dockerfile: modified)"),
    ("claims", "the run's claims.json changed"),
    ("incomplete", "--allow-incomplete"),
    ("none", "no earlier export"),
])
def test_an_export_that_differs_is_not_reused(tmp_path: Path, change: str, why: str) -> None:
    from synth.verify.rebuild import reusable_export

    run_dir = _exported_run(tmp_path)
    art = run_dir / "export"
    doc = json.loads((art / "manifest.json").read_text())
    if change == "version":
        doc["synth_version"] = "0.0.1"
    elif change == "incomplete":
        doc["incomplete"] = ["the run did not succeed"]
    (art / "manifest.json").write_text(json.dumps(doc))
    if change == "run":
        (run_dir / "state" / "env.json").write_text(
            json.dumps({"format": 1, "persisted": {"X": "1"}, "sources": {"X": "/etc/x"}}))
    elif change == "artifact":
        (art / "Dockerfile").write_text("FROM y\n")
    elif change == "claims":
        (run_dir / "claims.json").write_text('{"python_path": "/usr/bin/python3"}')
    elif change == "none":
        (art / "manifest.json").unlink()
    elif change == "build":  # same version string, other code: a development checkout
        (run_dir / "export.source-digest").write_text("0" * 64 + "\n")
    found, said = reusable_export(run_dir)
    assert found is None
    assert why in said


def test_the_typed_outcome_is_the_document(tmp_path: Path) -> None:
    from synth.pyramid.result import LevelResult, Report
    from synth.ui.verify_view import extra_lines
    from synth.verify.outcome import (
        BuildInfo,
        ExportUse,
        FidelityVerdict,
        FingerprintOutcome,
        TargetInfo,
        VerifyOutcome,
    )

    c5 = LevelResult("C5", "pass", None, {
        "hallucinations": 0, "path_hallucinations": 0, "version_hallucinations": 0,
        "capability_hallucinations": 0, "unverifiable": 0, "unknown": 0},
        {"checks": [], "not_checked": [{"field": "notes", "claimed": "x", "why": "free text"},
                                       {"field": "we ird\x1b", "claimed": 1, "why": "?"}]})
    rep = Report({"kind": "rebuilt", "image": "i"}, (LevelResult("C1", "pass"), c5))
    live = Report({"kind": "live", "image": "l"}, (LevelResult("C1", "pass"),))
    outcome = VerifyOutcome(
        VerifyOptions(target="r", rebuild=True), TargetInfo("run", tmp_path, "t"), tmp_path,
        {"rebuilt": rep, "live": live}, "rebuilt",
        export=ExportUse(tmp_path / "export", True, "its manifest matches the run"),
        build=BuildInfo("synth-rebuilt/t:1", "sha256:1", 1.0, tmp_path / "export"),
        fingerprint=FingerprintOutcome("error", "probe timed out"),
        fidelity=FidelityVerdict("C1", "C1", (), "error", ("fingerprint error: x",)),
        scores={"other": {"score": 1}})
    doc = outcome.document
    assert doc["passed"] is False and outcome.exit_code == 1  # fidelity fails it
    assert doc["fidelity_failed"] == "fingerprint error: x"
    assert doc["target"]["artifact_dir"] == str(tmp_path / "export")
    assert doc["export"] == {"artifact_dir": str(tmp_path / "export"), "reused": True,
                             "why": "its manifest matches the run"}
    assert doc["fingerprint"] == {"status": "error", "reason": "probe timed out"}
    assert doc["scores"] == {"other": {"score": 1}}
    from synth.formats.schemas import validate

    assert validate(json.loads(json.dumps(doc)), "verify") == []
    lines = extra_lines(outcome.verify_document)
    assert '  not checked: notes, "we ird\\u001b"' in lines
    assert any(line.startswith("reused the existing export") for line in lines)


def test_the_live_image_s_probes_get_the_persisted_variables(tmp_path: Path) -> None:
    """As the artifact's ENV carries them (secrets and the CA path left out), with $VAR
    expanded against the image's own environment (seen on cocoapi: a PYTHONPATH written
    to ~/.bashrc made the live C1 fail while the rebuilt image, with ENV PYTHONPATH,
    passed, and fidelity called the rebuilt image's variable a difference)."""
    from synth.verify.command import persisted_env
    from tests.distill_runs import make_run_dir

    run_dir = make_run_dir(tmp_path, env={
        "PYTHONPATH": "/workspace/PythonAPI", "PATH": "/opt/x/bin:$PATH",
        "HF_TOKEN": "***", "PIP_CERT": "/synth/ca/ca-bundle.crt", "N": "${UNSET}1"})
    image_env = ["PATH=/usr/local/bin:/usr/bin", "LANG=C.UTF-8", "EMPTY="]
    assert persisted_env(run_dir, image_env) == {
        "PYTHONPATH": "/workspace/PythonAPI", "PATH": "/opt/x/bin:/usr/local/bin:/usr/bin",
        "N": "1"}
    (run_dir / "state" / "env.json").unlink()  # a run made before env.json existed
    assert persisted_env(run_dir, image_env) == {}


@pytest.mark.parametrize(("levels_explicit", "require", "require_explicit", "code"), [
    (True, "C1", False, 1),   # --levels C2,C3 alone: the failed C3 it asked for fails it
    (True, "C2", True, 0),    # ... unless --require says how far to look
    (False, "C1", False, 0),  # the default selection: --require C1 decides
    (False, "C3", True, 1),
])
def test_a_level_asked_for_with_levels_that_fails_fails_the_exit_code(
        tmp_path: Path, levels_explicit: bool, require: str, require_explicit: bool,
        code: int) -> None:
    """Seen on the GPU host: `verify --levels C2,C3` exited 0 with C3 failing, since the
    default --require C1 looked no further."""
    from synth.pyramid.result import LevelResult, Report
    from synth.verify.outcome import TargetInfo, VerifyOutcome

    rep = Report({"kind": "host"}, (LevelResult("C1", "skipped", "not selected (--levels)"),
                                    LevelResult("C2", "pass"),
                                    LevelResult("C3", "fail", "GPU entrypoint failed")))
    opts = VerifyOptions(target="t", levels=parse_levels("C2,C3"), require=require,  # type: ignore[arg-type]
                         levels_explicit=levels_explicit, require_explicit=require_explicit)
    outcome = VerifyOutcome(opts, TargetInfo("task", tmp_path, "t"), tmp_path, {"host": rep},
                            "host")
    assert outcome.exit_code == code


def test_a_failing_gpu_level_says_what_the_entrypoint_said() -> None:
    from synth.pyramid.runner import why

    info = {"stderr_tail": "Traceback (most recent call last):\n  File x\n"
                           "\x1b[31mRuntimeError: torchop was built without its CUDA "
                           "kernels\x1b[0m\n", "stdout_tail": "step 1\n"}
    assert why(info) == ("Traceback (most recent call last): | File x | RuntimeError: "
                         "torchop was built without its CUDA kernels")
    assert why({"stderr_tail": "token=s3cr3t failed\n"}, ("s3cr3t",)) == "token=*** failed"
    assert why({"stdout_tail": "only stdout\n"}) == "only stdout"
    assert why({}) == ""


def test_the_report_says_when_the_live_environment_itself_fails() -> None:
    from synth.ui.verify_view import extra_lines

    def report(c1: str) -> dict[str, object]:
        return {"target": {"image": "img"}, "highest": None,
                "levels": [{"level": "C1", "status": c1, "reason": "CPU entrypoint failed"}]}

    doc = {"target": {"task": "t", "kind": "run", "path": "/r"}, "require": "C1",
           "decides": "rebuilt", "passed": False, "build": None, "fingerprint": None,
           "reports": {"rebuilt": report("fail"), "live": report("fail")},
           "fidelity": {"live_highest": None, "rebuilt_highest": None,
                        "reaches_live_level": True, "gaps": []}}
    lines = extra_lines(VerifyDocument.from_json(full_verify(doc)))
    assert any(line.startswith("the live environment itself fails C1") for line in lines)


def test_verify_names_the_code_loading_risks_the_artifact_carries(tmp_path: Path) -> None:
    """A .pth with code or a patched installed module is a risk the export report names;
    verify's output and verify.json repeat it beside the verdict (docs/security.md)."""
    import json
    import shutil

    from synth.ui.verify_view import extra_lines
    from synth.verify.command import _artifact_risks

    art = tmp_path / "art"
    shutil.copytree(Path(__file__).resolve().parent.parent / "golden" / "export-basic", art)
    report = json.loads((art / "export-report.json").read_text())
    risk = "/opt/venv/lib/python3.11/site-packages/evil.pth runs code at every start"
    report["risks"] = [risk]
    (art / "export-report.json").write_text(json.dumps(report))
    assert _artifact_risks(art) == (risk,)
    doc = VerifyDocument.from_json(full_verify({"risks": [risk], "reports": {"rebuilt": {
        "passed_levels": ["C0"], "levels": [{"level": "C0", "status": "pass"}]}}}))
    assert f"risk: {risk}" in extra_lines(doc)
    assert doc.to_json()["risks"] == [risk]
