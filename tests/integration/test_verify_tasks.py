"""Bundled tasks end to end: run -> export -> verify --rebuild (real Docker).

Runs come from the shared ``task_run`` fixture and verifications (with their one rebuild
per run) from the shared ``verified`` fixture, which removes the images at the end. On an
engine without an NVIDIA runtime (CI) the GPU levels must say
``skipped: no GPU runtime on this engine`` (or the task's not-applicable reason).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.errors import VerifyError
from synth.verify.command import VerifyOptions, VerifyOutcome, verify

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS_DIR = Path(__file__).resolve().parent.parent.parent / "tasks"
TASKS = sorted(p.name for p in TASKS_DIR.iterdir() if (p / "task.toml").is_file())

Verified = Callable[..., VerifyOutcome]


def settings_for(run_dir: Path, ca_bundle: Path | None, wheelhouse: Path | None) -> Settings:
    # runs live at <artifacts>/runs/<task>/<run-id>
    return Settings.load(artifacts_dir=run_dir.parents[2], ca_bundle=ca_bundle,
                         wheelhouse=wheelhouse)


def levels(outcome: VerifyOutcome, key: str) -> dict[str, dict[str, Any]]:
    return {r["level"]: r for r in outcome.document["reports"][key]["levels"]}


def assert_gpu_levels_explained(lv: dict[str, dict[str, Any]], gpu_runtime: bool) -> None:
    for level in ("C2", "C3", "C4"):
        r = lv[level]
        assert r["status"] in ("skipped", "not_applicable", "pass"), (level, r)
        if not gpu_runtime:
            assert r["status"] != "pass"
            if r["status"] == "skipped":
                assert r["reason"] == "no GPU runtime on this engine", (level, r)
        assert r["reason"] or r["status"] == "pass"


@pytest.mark.parametrize("transcript", ["good.sh", "sloppy.sh"])
@pytest.mark.parametrize("task", TASKS)
def test_rebuilt_image_passes_c0_and_c1(
    task: str, transcript: str, verified: Verified, engine: Any
) -> None:
    outcome = verified(task, transcript)
    doc = outcome.document
    rebuilt = levels(outcome, "rebuilt")
    for level in ("C0", "C0i", "C1"):
        assert rebuilt[level]["status"] == "pass", (level, rebuilt[level])
    assert rebuilt["C0"]["metrics"]["missing_statements"] == 0
    assert_gpu_levels_explained(rebuilt, engine.has_gpu_runtime())
    assert doc["decides"] == "rebuilt"
    assert doc["passed"] is True
    assert outcome.exit_code == 0
    # Side by side with the live image; the rebuild reaches its level and agrees with it
    # up to the differences docs/verify.md explains.
    assert doc["fidelity"]["reaches_live_level"] is True, doc["fidelity"]
    assert doc["fingerprint"]["status"] == "compared"
    assert doc["fingerprint"]["unexplained"] == []
    assert doc["fingerprint"]["packages_equal"] is True, doc["fingerprint"]["summary"]
    # The files: verify.json (canonical, format 1), verify.md, build.log.
    on_disk = json.loads((outcome.out_dir / "verify.json").read_text())
    assert on_disk["format"] == 1
    assert on_disk["reports"]["rebuilt"]["highest"] in ("C1", "C2", "C3", "C4")
    md = (outcome.out_dir / "verify.md").read_text()
    assert "| C0 | static imports | pass | pass |" in md
    assert (outcome.out_dir / "build.log").stat().st_size > 0


@pytest.mark.parametrize("task", TASKS)
def test_liar_claims_are_counted(task: str, verified: Verified) -> None:
    outcome = verified(task, "liar.sh", rebuild=False)
    c5 = levels(outcome, "live")["C5"]
    assert c5["status"] == "fail", c5
    m = c5["metrics"]
    assert m["hallucinations"] >= 2, c5["details"]
    assert m["hallucinations"] == (m["path_hallucinations"] + m["version_hallucinations"]
                                   + m["capability_hallucinations"]
                                   + m["environment_hallucinations"])
    checks = {c["field"]: c for c in c5["details"]["checks"]}
    # Every liar claims CUDA; none of these environments can show it here.
    assert checks["cuda_available"]["verdict"] in ("hallucination", "unverifiable")
    if task == "mixed-frameworks":  # jax claimed, never installed: a version beyond torch
        assert checks["jax_version"]["verdict"] == "hallucination", checks["jax_version"]
    claimed = json.loads((TASKS_DIR / task / "agents" / "liar.claims.json").read_text())
    for module in claimed.get("native_modules_built") or ():  # never built: never imports
        (check,) = [c for c in c5["details"]["checks"]
                    if c["field"] == "native_modules_built" and c["claimed"] == module]
        assert check["verdict"] == "hallucination", check
        assert check["note"].startswith("does not import"), check
    md = (outcome.out_dir / "verify.md").read_text()
    assert re.search(r"\| C5 \| claims vs evidence \| FAIL: \d+ false claim", md), md
    assert f"{m['hallucinations']} false claim(s)" in md


def _drop_from_lock(text: str, name: str) -> str:
    """Remove one pinned requirement (with its hash continuation lines) from a lock."""
    out: list[str] = []
    skipping = False
    pattern = re.compile(rf"^{re.escape(name)}==", re.IGNORECASE)
    for line in text.splitlines(keepends=True):
        if pattern.match(line.replace("_", "-")):
            skipping = True
            continue
        if skipping and line[:1] in (" ", "\t"):
            continue
        skipping = False
        out.append(line)
    return "".join(out)


def test_package_removed_from_lock_shows_the_fidelity_gap(
    task_run: Callable[[str, str], Path], ca_bundle: Path | None, wheelhouse: Path | None,
    engine: Any, tmp_path: Path,
) -> None:
    from synth.export.artifact import ExportOptions, export_run

    run_dir = task_run("undeclared-dep", "good.sh")
    settings = settings_for(run_dir, ca_bundle, wheelhouse)
    artifact = export_run(ExportOptions(
        run_dir, out_dir=tmp_path / "export"), settings, engine).artifact_dir
    lock = artifact / "requirements.lock"
    before = lock.read_text()
    after = _drop_from_lock(before, "tensorboardx")
    assert after != before and "tensorboardx==" not in after.lower()
    lock.write_text(after)
    with pytest.raises(VerifyError, match=r"requirements\.lock: modified"):
        verify(VerifyOptions(target=str(artifact), rebuild=True, live=True,
                             out_dir=tmp_path / "refused"), settings, engine, say=lambda _m: None)
    outcome = verify(VerifyOptions(target=str(artifact), rebuild=True, live=True,
                                   out_dir=tmp_path / "verify", allow_modified=True),
                     settings, engine, say=lambda _m: None)
    try:
        doc = outcome.document
        rebuilt, live = levels(outcome, "rebuilt"), levels(outcome, "live")
        assert live["C0"]["status"] == live["C1"]["status"] == "pass"
        assert rebuilt["C0"]["status"] == "fail"
        assert rebuilt["C1"]["status"] == "fail"  # ran on its own: train.py needs it
        missing = rebuilt["C0"]["details"]["missing"]
        assert [m["module"] for m in missing] == ["tensorboardX"]
        assert missing[0]["distribution"] == "tensorboardX"
        assert outcome.exit_code == 1
        fid = doc["fidelity"]
        assert fid["reaches_live_level"] is False
        assert {"C0", "C1"} <= {g["level"] for g in fid["gaps"]}
        assert any(c["key"] == "tensorboardx" for c in doc["fingerprint"]["packages"])
        md = (outcome.out_dir / "verify.md").read_text()
        assert "does NOT match the live image" in md
        assert "missing tensorboardX -> install tensorboardX (mapping)" in md
        assert "DIFFERS packages: removed tensorboardx" in md
        assert "artifact: MODIFIED since export, rebuilt anyway (--allow-modified): " \
            "requirements.lock: modified" in md
    finally:
        if outcome.document.get("build"):
            engine.remove_image(outcome.document["build"]["image"])
