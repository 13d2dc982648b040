"""ResearchEnvBench interop: a REB-shaped folder of our own (a manifest naming two
repositories, mirrored to local git repos made here; a categories file; benchmark scripts
that do what REB's do) imports into tasks that pass `synth task check`, with REB's
applicability; a partial mirror is named with what it lacks; REB-format stage results are
written from a verify document and read back."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synth.errors import SynthError, TaskError, UsageError
from synth.formats.task import load_task
from synth.formats.verify import VerifyDocument
from synth.plugins.reb import categories
from synth.plugins.reb.importer import import_reb, read_manifest, report_import
from synth.plugins.reb.mirror import check_mirror
from synth.plugins.reb.results import read_results, stage_results, write_results
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
    manifest = [  # REB's hardware_bucket is `auto` for every repository: it decides nothing
        {"repo_id": "Acme_Alpha", "repo_url": "https://github.com/acme/alpha.git",
         "commit_sha": alpha, "hardware_bucket": "auto"},
        {"repo_id": "acme-beta", "repo_url": "https://github.com/acme/beta",
         "commit_sha": beta, "hardware_bucket": "auto"},
    ]
    (root / "m1_repo_manifest_module" / "manifests").mkdir(parents=True)
    (root / "m1_repo_manifest_module" / "manifests" / "manifest.json").write_text(
        json.dumps({"schema_version": 1, "repos": manifest}))
    (root / "scripts_repos_test_categories.csv").write_text(
        "repo_slug,repo,git_link,commit,supports_cpu,supports_single_gpu,supports_multi_gpu,"
        "cpu_skip_reason,single_gpu_skip_reason,multi_gpu_skip_reason,category\n"
        f"acme@alpha,acme/alpha,https://github.com/acme/alpha,{alpha},yes,no,no,"
        "unknown,,not_applicable,2_cpu+single_gpu\n"
        f"acme@beta,acme/beta,https://github.com/acme/beta,{beta},no,yes,yes,"
        "repo_not_supported,unknown,unknown,3_single_gpu+multi_gpu\n")
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
    assert (alpha.repo.url, alpha.repo.commit) == ((reb["git"] / "alpha").as_uri(),
                                                   reb["alpha"])
    assert alpha.base_image == "synth/research:bookworm"
    # the categories file decides: C3 and C4 unsupported (a blank reason is REB's default),
    # C2 applies even without a GPU level
    assert set(alpha.not_applicable) == {"C3", "C4"}
    assert alpha.not_applicable["C3"].startswith("REB: repo_not_supported (supports_single_gpu")
    assert alpha.not_applicable["C4"].startswith("REB: not_applicable (supports_multi_gpu")
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
    assert beta.probes.cpu is None and list(beta.not_applicable) == ["C1"]
    # REB scores C4 for beta but has no script for it: its stage fails, as REB's run_all
    # finds no results.json
    assert beta.probes.ddp is not None
    res = subprocess.run(["bash", "-c", beta.probes.ddp.command], capture_output=True,
                         text=True, check=False)
    assert res.returncode == 1 and "REB has no run_multi_gpu_entrypoint.sh" in res.stderr
    applicability = json.loads((out / "acme-beta" / "reb" / "applicability.json").read_text())
    assert applicability["levels"]["C1"] == {"supported": False,
                                             "reason": "repo_not_supported"}
    assert applicability["row"]["repo_slug"] == "acme@beta"


def test_import_reb_selects_and_refuses(reb: dict[str, Any], tmp_path: Path) -> None:
    written = import_reb(reb["root"], tmp_path / "t", ["acme-beta"]).tasks
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
    with pytest.raises(TaskError, match="repo_url, commit_sha missing"):
        read_manifest(reb["root"])
    (reb["root"] / "scripts_repos_test_categories.csv").write_text("repo,supports_cpu\n")
    with pytest.raises(TaskError, match="not REB's categories file"):
        categories.read_rows(reb["root"] / "scripts_repos_test_categories.csv")


#: A categories file shaped like REB's (our own rows): yes/no cells, reasons blank or given,
#: reasons on supported levels (meaningless), a row found only by its git link.
CATEGORIES_CSV = """\
repo_slug,repo,git_link,commit,supports_cpu,supports_single_gpu,supports_multi_gpu,\
cpu_skip_reason,single_gpu_skip_reason,multi_gpu_skip_reason,category
o@all,o/all,https://github.com/o/all,c1,yes,yes,yes,not_applicable,not_applicable,unknown,3_x
o@gpu-only,o/gpu-only,https://github.com/o/gpu-only,c2,no,yes,yes,,unknown,unknown,3_x
o@no-ddp,o/no-ddp,https://github.com/o/no-ddp,c3,yes,yes,no,unknown,unknown,not_applicable,2_x
o@nothing,o/nothing,https://github.com/o/nothing,c4,no,no,no,repo_not_supported,,,NA_x
old@slug,o/renamed,https://github.com/o/linked,c5,Yes,YES,No,,,,1_x
"""
#: REB's table for those rows, by REB's rules (m5's `_is_supported`, m2's default reason,
#: C0/C2/C5 everywhere), and for a repository missing from the file (counted everywhere).
REB_TABLE = {
    "o/all": {}, "o/missing": {},
    "o/gpu-only": {"C1": "repo_not_supported"},
    "o/no-ddp": {"C4": "not_applicable"},
    "o/nothing": {"C1": "repo_not_supported", "C3": "repo_not_supported",
                  "C4": "repo_not_supported"},
    "o/linked": {"C4": "repo_not_supported"},
}


def test_applicability_matches_rebs_table(tmp_path: Path) -> None:
    path = tmp_path / "scripts_repos_test_categories.csv"
    path.write_text(CATEGORIES_CSV)
    rows = categories.read_rows(path)
    got = {}
    for full in REB_TABLE:
        owner, name = full.split("/")
        support = categories.supports(categories.find_row(
            rows, f"{owner}@{name}", f"https://github.com/{full}.git"))
        assert [lv for lv in ("C0", "C2", "C5") if not support[lv].supported] == []
        got[full] = {lv: s.reason for lv, s in support.items() if not s.supported}
    assert got == REB_TABLE
    denominators = {lv: sum(lv not in t for t in got.values()) for lv in ("C1", "C3", "C4")}
    assert denominators == {"C1": 4, "C3": 5, "C4": 3}
    assert categories.find_row(rows, "x@y", "https://github.com/x/y") is None
    assert categories.read_rows(tmp_path / "absent.csv") == []


def test_a_partial_mirror_is_named_with_what_it_lacks(reb: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """A mirror missing blobs (a blob-less clone, a snapshot without its largest files)
    gets no task; the error lists each missing file and says REB ships no archives."""
    mirror = reb["git"] / "alpha"
    assert check_mirror(mirror, reb["alpha"]).complete
    blob = subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD:train.py"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (mirror / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    check = check_mirror(mirror, reb["alpha"])
    assert (check.missing, check.files, check.problem) == (("train.py",), 1, None)
    assert check_mirror(mirror, "0" * 40).problem == f"has no commit {'0' * 40}"
    assert check_mirror(tmp_path, reb["alpha"]).problem.startswith("not a git repository")
    outcome = import_reb(reb["root"], tmp_path / "t", None,
                         {"https://github.com/acme/alpha.git": str(mirror)})
    assert [p.name for p in outcome.tasks] == ["acme-beta"]
    assert not (tmp_path / "t" / "acme_alpha").exists()
    with pytest.raises(TaskError, match=r"lacks 1 of the 1 files of commit .*: train.py") as e:
        report_import(outcome)
    assert "REB ships no repository archives" in str(e.value.hint)


def _level(level: str, status: str, reason: str | None = None) -> dict[str, Any]:
    return {"level": level, "status": status, "reason": reason, "metrics": {}}


#: REB's common stage fields and their types (REB study: results_schema.json, the fields
#: about 97% of REB's 1,180 stage files carry); every file synth writes carries them.
COMMON = {"status": str, "exit_code": int, "stage": str, "task": str, "command": str,
          "timeout_sec": int, "framework": str, "assets": dict, "meta": dict,
          "failure_category": str, "error_excerpt": str, "skip_reason": str}
STAGE_ORDER = ["pyright", "prepare", "cpu", "cuda", "single_gpu", "multi_gpu", "env_size",
               "hallucination", "summary"]


def test_reb_results_written_and_aggregated(tmp_path: Path) -> None:
    doc = full_verify({"decides": "rebuilt", "reports": {"rebuilt": {
        "target": {"kind": "rebuilt", "image": "synth-rebuilt/x:1"},
        "levels": [{**_level("C0", "pass"), "metrics": {
                       "researchenvbench_top_modules": 7,
                       "researchenvbench_missing_top_modules": 1}},
                   _level("C1", "fail", "exit 1"),
                   _level("C2", "not_applicable", "no GPU code"),
                   _level("C3", "not_reached", "C1 failed"),
                   _level("C4", "skipped", "no GPU runtime"), _level("C5", "pass")]}}})
    typed = VerifyDocument.from_json(doc)
    paths = write_results(typed, "acme-beta", tmp_path, when=1767225600.0, git_commit="abc")
    assert [p.parent.name for p in paths] == STAGE_ORDER
    table = read_results(tmp_path)
    assert {s: r["status"] for s, r in table.items()} == {
        "pyright": "success", "prepare": "skipped", "cpu": "failure", "cuda": "skipped",
        "single_gpu": "failure", "multi_gpu": "skipped", "env_size": "skipped",
        "hallucination": "success", "summary": "failure"}
    assert table["cpu"] == {"repo_id": "acme-beta", "status": "failure", "exit_code": 1,
                            "reason": "exit 1", "failure_category": "runtime",
                            "skip_reason": "not_applicable"}
    assert table["multi_gpu"]["skip_reason"] == "insufficient_hardware"
    for stage in STAGE_ORDER:
        data = json.loads((tmp_path / "build_output" / stage / "results.json").read_text())
        assert {k: type(data[k]) for k in COMMON} == COMMON, stage
        assert data["exit_code"] == (1 if data["status"] == "failure" else 0)
        assert data["meta"]["timestamp_utc"] == "2026-01-01T00:00:00Z"
        assert set(data["assets"]) == {"dataset", "model"}
    pyright = json.loads((tmp_path / "build_output" / "pyright" / "results.json").read_text())
    assert (pyright["missing_packages_count"], pyright["total_imported_packages_count"],
            pyright["missing_package_ratio"]) == (1, 7, "1/7")
    # REB's post-run override: a level the categories file marks unsupported is skipped
    # whatever the stage said, with REB's reason; the summary is recomputed after it
    app = {"levels": {"C1": {"supported": False, "reason": "repo_not_supported"}}}
    stages = stage_results(typed, "acme-beta", applicability=app)
    assert (stages["cpu"]["status"], stages["cpu"]["skip_reason"],
            stages["cpu"]["failure_category"], stages["cpu"]["meta"]["decision_reason"]) == \
        ("skipped", "repo_not_supported", "not_applicable",
         "categories skip override (post-run)")
    assert stages["summary"]["failed_stages"] == ["single_gpu"]
    assert stages["summary"]["skipped_stages"] == ["prepare", "cpu", "cuda", "multi_gpu",
                                                   "env_size"]
    (tmp_path / "build_output" / "cpu" / "results.json").write_text("{")
    with pytest.raises(UsageError, match="not valid JSON"):
        read_results(tmp_path)


# ------------------------------------------------------------------ a hostile REB tree
def _manifest(reb: dict[str, Any]) -> Path:
    return reb["root"] / "m1_repo_manifest_module" / "manifests" / "manifest.json"


def _scripts(reb: dict[str, Any]) -> Path:
    return reb["root"] / "scripts" / "acme@alpha" / "benchmark_scripts"


def _no_host_text(out: Path, text: str) -> None:
    for p in out.rglob("*") if out.exists() else ():
        if p.is_file() and not p.is_symlink():
            assert text not in p.read_text(errors="replace"), p


@pytest.mark.timeout(30)
@pytest.mark.parametrize("plant", [
    "script links to a host file", "scripts folder links out", "manifest links out",
    "c0 totals link out", "script links to /dev/zero", "script is a FIFO",
    "manifest is a FIFO", "script over its cap", "manifest over its cap"])
def test_a_hostile_tree_is_refused_and_nothing_is_written(
        reb: dict[str, Any], tmp_path: Path, plant: str) -> None:
    """Every read of the REB folder takes regular files only, never through a link that
    leaves it, under a size cap: a host file's content never reaches a task, a FIFO or
    /dev/zero never blocks or fills memory, and the error names the file."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("HOST-SECRET-CONTENT\n")
    target = {
        "script links to a host file": _scripts(reb) / "run_cpu_entrypoint.sh",
        "scripts folder links out": _scripts(reb),
        "manifest links out": _manifest(reb),
        "c0 totals link out": reb["root"] / "m5" / "c0_repo_baseline_totals.json",
        "script links to /dev/zero": _scripts(reb) / "run_cpu_entrypoint.sh",
        "script is a FIFO": _scripts(reb) / "run_all.sh",
        "manifest is a FIFO": _manifest(reb),
        "script over its cap": _scripts(reb) / "run_all.sh",
        "manifest over its cap": _manifest(reb),
    }[plant]
    if target.is_dir():
        shutil.rmtree(target)
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "run_cpu_entrypoint.sh").write_text(secret.read_text())
        target.symlink_to(tmp_path / "elsewhere")
    else:
        target.unlink()
        if "FIFO" in plant:
            os.mkfifo(target)
        elif "cap" in plant:
            with target.open("wb") as fh:
                fh.truncate(1 << 30)  # sparse: 1 GiB that costs no disk
        else:
            target.symlink_to("/dev/zero" if "zero" in plant else secret)
    out = tmp_path / "tasks"
    with pytest.raises(SynthError) as info:
        import_reb(reb["root"], out)
    assert str(target) in info.value.message or str(target.parent) in info.value.message
    assert not out.exists()
    _no_host_text(out, "HOST-SECRET-CONTENT")


def test_a_link_inside_the_tree_is_followed(reb: dict[str, Any], tmp_path: Path) -> None:
    shared = reb["root"] / "scripts" / "common.sh"
    shared.write_text("echo shared\n")
    (_scripts(reb) / "run_all.sh").unlink()
    (_scripts(reb) / "run_all.sh").symlink_to("../../common.sh")
    (task,) = import_reb(reb["root"], tmp_path / "t", ["Acme_Alpha"]).tasks
    copy = task / "reb" / "benchmark_scripts" / "run_all.sh"
    assert not copy.is_symlink() and copy.read_text() == "echo shared\n"


@pytest.mark.parametrize(("entry", "match"), [
    ({"repo_url": 7}, "repo_url"),
    ({"repo_url": "-oProxyCommand=touch /tmp/x"}, "repo_url"),
    ({"repo_url": "ext::sh -c id"}, "repo_url"),
    ({"repo_url": "https://tok@github.com/acme/alpha"}, "credentials"),
    ({"commit_sha": "ABCDEF1"}, "commit_sha"),
    ({"repo_id": "x\x1b[2J"}, "control"),
    ({"hardware_bucket": ["cpu"]}, "hardware_bucket"),
    ({"repo_id": "acme-beta"}, "both make the task name"),
])
def test_odd_manifest_fields_are_located_errors(
        reb: dict[str, Any], tmp_path: Path, entry: dict[str, Any], match: str) -> None:
    path = _manifest(reb)
    doc = json.loads(path.read_text())
    doc["repos"][0].update(entry)
    path.write_text(json.dumps(doc))
    with pytest.raises(TaskError, match=match) as info:
        import_reb(reb["root"], tmp_path / "t")
    assert str(path) in info.value.message and "entry 0" in info.value.message
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("damage", [
    "manifest is a folder", "manifest not UTF-8", "manifest not JSON",
    "totals is a folder", "level script not UTF-8", "level script is a folder",
    "scripts folder is a file"])
def test_odd_trees_are_located_errors(reb: dict[str, Any], tmp_path: Path,
                                      damage: str) -> None:
    path = {"manifest": _manifest(reb),
            "totals": reb["root"] / "m5" / "c0_repo_baseline_totals.json",
            "level script": _scripts(reb) / "run_cpu_entrypoint.sh",
            "scripts folder": _scripts(reb)}[damage.rsplit(" is ", 1)[0].rsplit(" not ", 1)[0]]
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    if damage.endswith("a folder"):
        path.mkdir()
    elif damage.endswith("a file"):
        path.write_text("x")
    elif "UTF-8" in damage:
        path.write_bytes(b"\xff\xfe[\n")
    else:
        path.write_text("{not json")
    with pytest.raises(SynthError) as info:
        import_reb(reb["root"], tmp_path / "t")
    assert str(path) in info.value.message, info.value.message
    assert not (tmp_path / "t").exists()


def test_out_never_replaces_what_synth_did_not_write(reb: dict[str, Any],
                                                    tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes\n")
    with pytest.raises(UsageError, match="not empty"):
        import_reb(reb["root"], mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(UsageError, match="symbolic link"):
        import_reb(reb["root"], link)
    assert not (tmp_path / "elsewhere").exists()

    out = tmp_path / "tasks"
    import_reb(reb["root"], out)
    import_reb(reb["root"], out)  # synth's own import: replaced
    (out / "mine").mkdir()  # the user's own folder beside the tasks stays
    (out / "mine" / "keep.txt").write_text("keep\n")
    import_reb(reb["root"], out)
    assert (out / "mine" / "keep.txt").read_text() == "keep\n"

    (out / "acme_alpha" / "NOTES.md").write_text("the user's\n")
    with pytest.raises(UsageError, match=r"NOTES\.md"):
        import_reb(reb["root"], out)
    assert (out / "acme_alpha" / "NOTES.md").read_text() == "the user's\n"
    (out / "acme_alpha" / "NOTES.md").unlink()
    task_file = out / "acme_alpha" / "task.toml"
    host = tmp_path / "host-file"
    host.write_text("host\n")
    task_file.unlink()
    task_file.symlink_to(host)  # a planted link: never written through
    with pytest.raises(UsageError, match=r"task\.toml"):
        import_reb(reb["root"], out)
    assert host.read_text() == "host\n"
