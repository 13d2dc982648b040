"""ResearchEnvBench interop: a REB-shaped folder of our own (a manifest naming two
repositories, mirrored to local git repos made here; benchmark scripts that do what REB's
do) imports into tasks that pass `synth task check`; REB-format stage results are written
from a verify document and read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synth.errors import TaskError, UsageError
from synth.formats.task import load_task
from synth.formats.verify import VerifyDocument
from synth.plugins.reb.importer import import_reb, read_manifest
from synth.plugins.reb.results import read_results, write_results
from tests.verify_outcomes import full_verify

SYNTH = [sys.executable, "-m", "synth"]


def _git_repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for argv in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", "-C", str(path), *argv], check=True, env=env)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


@pytest.fixture
def reb(tmp_path: Path) -> dict[str, Any]:
    alpha = _git_repo(tmp_path / "git" / "alpha", {"train.py": "print('alpha ok')\n"})
    beta = _git_repo(tmp_path / "git" / "beta", {"gpu.py": "print('beta')\n"})
    root = tmp_path / "reb"
    manifest = [
        {"repo_id": "Acme_Alpha", "repo_url": "https://github.com/acme/alpha.git",
         "commit_sha": alpha, "hardware_bucket": "cpu"},
        {"repo_id": "acme-beta", "repo_url": "https://github.com/acme/beta",
         "commit_sha": beta, "hardware_bucket": "single_gpu"},
    ]
    (root / "m1_repo_manifest_module" / "manifests").mkdir(parents=True)
    (root / "m1_repo_manifest_module" / "manifests" / "manifest.json").write_text(
        json.dumps(manifest))
    a = root / "scripts" / "acme@alpha" / "benchmark_scripts"
    a.mkdir(parents=True)
    # as REB's scripts do, it finds the repository from its own path (benchmark_scripts/..)
    (a / "run_cpu_entrypoint.sh").write_text(
        '#!/usr/bin/env bash\nset -euo pipefail\n'
        'root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"\n'
        'echo "cpu stage: $(python3 "$root/train.py")"\n')
    (a / "prepare_assets.sh").write_text("#!/usr/bin/env bash\nmkdir -p assets\n")
    (a / "run_all.sh").write_text("#!/usr/bin/env bash\nbash run_cpu_entrypoint.sh\n")
    b = root / "scripts" / "acme@beta" / "benchmark_scripts"
    b.mkdir(parents=True)
    (b / "run_single_gpu_entrypoint.sh").write_text("#!/usr/bin/env bash\npython3 gpu.py\n")
    (root / "m5").mkdir()
    (root / "m5" / "c0_repo_baseline_totals.json").write_text(
        json.dumps({"repos": {"Acme/Alpha": 5, "other/repo": 9}}))
    mirrors = [f"https://github.com/acme/alpha.git={tmp_path / 'git' / 'alpha'}",
               f"https://github.com/acme/beta={tmp_path / 'git' / 'beta'}"]
    return {"root": root, "mirrors": mirrors, "alpha": alpha, "beta": beta,
            "git": tmp_path / "git"}


def test_import_reb_tasks_pass_task_check(reb: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "tasks"
    args = [*SYNTH, "task", "import-reb", str(reb["root"]), "-o", str(out), "--json"]
    for m in reb["mirrors"]:
        args += ["--mirror", m]
    proc = subprocess.run(args, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert sorted(Path(p).name for p in json.loads(proc.stdout)["result"]["tasks"]) == \
        ["acme-beta", "acme_alpha"]
    check = subprocess.run([*SYNTH, "task", "check", str(out / "acme_alpha"),
                            str(out / "acme-beta")], capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr

    alpha = load_task(out / "acme_alpha")
    assert (alpha.repo.url, alpha.repo.commit) == (str(reb["git"] / "alpha"), reb["alpha"])
    assert set(alpha.not_applicable) == {"C2", "C3", "C4"}
    assert "hardware_bucket cpu" in alpha.not_applicable["C2"]
    # REB's scripts sit beside the task file (never in the session, which gets the repo only)
    scripts = out / "acme_alpha" / "reb" / "benchmark_scripts"
    assert sorted(p.name for p in scripts.iterdir()) == \
        ["prepare_assets.sh", "run_all.sh", "run_cpu_entrypoint.sh"]
    # ... and the CPU stage's script is the C1 probe: run it as verify does (bash -c)
    assert alpha.probes.cpu is not None
    res = subprocess.run(["bash", "-c", alpha.probes.cpu.command], cwd=reb["git"] / "alpha",
                         capture_output=True, text=True, check=False)
    assert (res.returncode, res.stdout) == (0, "cpu stage: alpha ok\n"), res.stderr
    # REB's fixed C0 denominator, for verify --scoring reb
    assert json.loads((out / "acme_alpha" / "reb" / "c0_total.json").read_text()) == \
        {"repo_full_name": "acme/alpha", "total": 5}
    assert not (out / "acme-beta" / "reb" / "c0_total.json").exists()

    beta = load_task(out / "acme-beta")
    assert beta.probes.gpu is not None and "python3 gpu.py" in beta.probes.gpu.command
    assert beta.probes.cpu is None
    assert beta.not_applicable == {
        "C1": "REB has no run_cpu_entrypoint.sh for acme-beta",
        "C4": "REB hardware_bucket single_gpu: no multi-GPU stage"}


def test_import_reb_selects_and_refuses(reb: dict[str, Any], tmp_path: Path) -> None:
    written = import_reb(reb["root"], tmp_path / "t", ["acme-beta"])
    assert [p.name for p in written] == ["acme-beta"]
    with pytest.raises(UsageError, match="not in the manifest"):
        import_reb(reb["root"], tmp_path / "t", ["nope"])
    with pytest.raises(UsageError, match="no REB manifest"):
        read_manifest(tmp_path)
    manifest = reb["root"] / "m1_repo_manifest_module" / "manifests" / "manifest.json"
    manifest.write_text(json.dumps({"repos": [{"repo_id": "x", "repo_url": "u",
                                               "commit_sha": "zz", "hardware_bucket": "cpu"}]}))
    with pytest.raises(TaskError, match="commit_sha"):
        read_manifest(reb["root"])
    manifest.write_text(json.dumps([{"repo_id": "x"}]))
    with pytest.raises(TaskError, match="repo_url, commit_sha, hardware_bucket"):
        read_manifest(reb["root"])


def _level(level: str, status: str, reason: str | None = None) -> dict[str, Any]:
    return {"level": level, "status": status, "reason": reason, "metrics": {}}


def test_reb_results_written_and_aggregated(tmp_path: Path) -> None:
    doc = full_verify({"decides": "rebuilt", "reports": {"rebuilt": {
        "target": {"kind": "rebuilt", "image": "synth-rebuilt/x:1"},
        "levels": [_level("C0", "pass"), _level("C1", "fail", "exit 1"),
                   _level("C2", "not_applicable", "no GPU code"),
                   _level("C3", "not_reached", "C1 failed"),
                   _level("C4", "skipped", "no GPU runtime"), _level("C5", "pass")]}}})
    paths = write_results(VerifyDocument.from_json(doc), "acme-beta", tmp_path)
    assert sorted(p.parent.name for p in paths) == \
        ["cpu", "cuda", "hallucination", "multi_gpu", "pyright", "single_gpu"]
    table = read_results(tmp_path)
    assert {s: r["status"] for s, r in table.items()} == {
        "pyright": "success", "cpu": "failure", "cuda": "skipped", "single_gpu": "failure",
        "multi_gpu": "skipped", "hallucination": "success"}
    assert table["cpu"] == {"repo_id": "acme-beta", "status": "failure", "exit_code": 1,
                            "reason": "exit 1"}
    (tmp_path / "build_output" / "cpu" / "results.json").write_text("{")
    with pytest.raises(UsageError, match="not valid JSON"):
        read_results(tmp_path)
