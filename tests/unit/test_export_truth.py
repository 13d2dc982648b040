"""The export carries what the setup really changed (pure logic and host git):
source/ with the agent's edits and source.patch, carried distribution files, unreproduced
distributions, dpkg-owned paths, and the warnings (replaced framework, second interpreter,
pip check, overlapping files)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from distill_runs import NO_ENGINE, cmd, dist, make_run_dir, venv
from msgspec import structs

from synth.distill import carried
from synth.distill import warnings as warn
from synth.distill.load import load_run
from synth.distill.plan import distill
from synth.errors import ExportError
from synth.export import final_state
from synth.export.live_facts import LiveFacts
from synth.export.source_patch import (
    MAX_ADDED_BYTES,
    apply_workspace,
    git_patch,
    source_patch,
    tree_patch,
)
from synth.formats.fingerprint import DistributionPrint, Fingerprint

SITE = "/opt/venv/lib/python3.11/site-packages"


def _tar(tmp: Path, files: dict[str, bytes | None], name: str = "ws.tar") -> Path:
    """A ``docker cp``-style archive of /workspace: ``workspace/<rel>``; None: a folder."""
    path = tmp / name
    with tarfile.open(path, "w") as tar:
        top = tarfile.TarInfo("workspace")
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for rel, data in sorted(files.items()):
            info = tarfile.TarInfo(f"workspace/{rel}")
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
    return path


def _repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("x = 1\n")
    (root / "env.yml").write_text("numpy=1.26\n")
    (root / "old.txt").write_text("gone soon\n")
    return root


def test_source_is_the_original_with_the_agents_edits(tmp_path: Path) -> None:
    src = _repo(tmp_path / "src")
    ws = _tar(tmp_path, {
        "pkg": None, "pkg/__init__.py": b"x = 1\n", "env.yml": b"numpy=1.26.4\n",
        "notes.txt": b"added\n", "build": None, "build/lib/x.so": b"\x7fELF",
        "pkg/_ext.so": b"\x7fELF", ".venv": None, ".venv/pyvenv.cfg": b"home = /usr/bin\n",
        "data.bin": b"\0" * (MAX_ADDED_BYTES + 1), "pkg/__pycache__/x.pyc": b"junk",
    })
    edits = apply_workspace(ws, src, venvs=(".venv",))
    assert edits.modified == ("env.yml",)
    assert edits.added == ("notes.txt",)
    assert edits.deleted == ("old.txt",)
    assert [n.split(":")[0] for n in edits.not_carried] == [".venv", "build", "data.bin",
                                                           "pkg/_ext.so"]
    assert (src / "env.yml").read_text() == "numpy=1.26.4\n"
    assert (src / "notes.txt").read_text() == "added\n"
    assert not (src / "old.txt").exists() and not (src / "build").exists()
    assert not (src / ".venv").exists() and not (src / "pkg" / "__pycache__").exists()


def test_a_file_of_the_repository_is_kept_even_where_it_looks_like_build_output(
        tmp_path: Path) -> None:
    src = _repo(tmp_path / "src")
    (src / "build").mkdir()
    (src / "build" / "tool.py").write_text("print(1)\n")
    ws = _tar(tmp_path, {"pkg": None, "pkg/__init__.py": b"x = 1\n", "env.yml": b"numpy=1.26\n",
                         "old.txt": b"gone soon\n", "build": None,
                         "build/tool.py": b"print(2)\n"})
    edits = apply_workspace(ws, src, venvs=())
    assert edits.modified == ("build/tool.py",) and edits.deleted == ()
    assert (src / "build" / "tool.py").read_text() == "print(2)\n"


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": str(cwd),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout


def test_git_checkout_patch_names_the_commit_and_applies(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("*.log\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "c")
    head = _git(repo, "rev-parse", "HEAD").strip()
    clean = git_patch(repo, repo)
    assert (clean.commit, clean.dirty, clean.patch, clean.files) == (head, False, b"", ())
    (repo / "env.yml").write_text("numpy=1.26.4\n")
    (repo / "blob.bin").write_bytes(bytes(range(256)))
    (repo / "run.log").write_text("ignored by .gitignore, still in source/\n")
    (repo / "old.txt").unlink()
    git_before = {p.relative_to(repo): p.read_bytes()
                  for p in (repo / ".git").rglob("*") if p.is_file()}
    p = git_patch(repo, repo)
    # .git is left byte for byte as it was: the live image's /workspace/.git has no blob of
    # the edits, and the rebuilt image's is compared with it (found on cocoapi).
    assert {p.relative_to(repo): p.read_bytes()
            for p in (repo / ".git").rglob("*") if p.is_file()} == git_before
    assert p.commit == head and p.dirty
    assert p.files == ("A\tblob.bin", "A\trun.log", "D\told.txt", "M\tenv.yml")
    assert b"GIT binary patch" in p.patch
    assert git_patch(repo, repo).patch == p.patch  # deterministic
    # The repository's own index is untouched: nothing staged (the ignored file hidden).
    assert _git(repo, "status", "--porcelain").splitlines() == [" M env.yml", " D old.txt",
                                                               "?? blob.bin"]
    fresh = tmp_path / "fresh"
    _git(tmp_path, "clone", "-q", str(repo), str(fresh))
    (tmp_path / "x.patch").write_bytes(p.patch)
    _git(fresh, "apply", str(tmp_path / "x.patch"))
    for name in ("env.yml", "blob.bin", "run.log"):
        assert (fresh / name).read_bytes() == (repo / name).read_bytes()
    assert not (fresh / "old.txt").exists()


def test_a_submodule_never_checked_out_is_no_change(tmp_path: Path) -> None:
    """A commit's submodule left as an empty folder (a clone without --recursive, POT's
    deps/eigen) is what git sees as unchanged: not "deleted by the agent"."""
    repo = _repo(tmp_path / "repo")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "update-index", "--add", "--cacheinfo",
         f"160000,{'d7' * 20},deps/eigen")
    _git(repo, "commit", "-q", "-m", "c")
    (repo / "deps" / "eigen").mkdir(parents=True)
    assert git_patch(repo, repo).files == ()
    (repo / "deps" / "eigen" / "Core").write_text("copied in by hand\n")
    assert git_patch(repo, repo).files == ("A\tdeps/eigen/Core", "D\tdeps/eigen")
    (repo / "deps" / "eigen" / "Core").unlink()
    (repo / "deps" / "eigen").rmdir()
    assert git_patch(repo, repo).files == ("D\tdeps/eigen",)


def test_a_repository_without_git_is_diffed_against_its_original(tmp_path: Path) -> None:
    original = _repo(tmp_path / "original")
    source = _repo(tmp_path / "source")
    (source / "env.yml").write_text("numpy=1.26.4\n")
    p = tree_patch(original, source)
    assert (p.commit, p.dirty, p.files) == (None, True, ("M\tenv.yml",))
    assert b"-numpy=1.26\n+numpy=1.26.4\n" in p.patch
    assert source_patch(original, source, edited=False).patch == b""


def _dp(name: str, version: str = "1.0", *, modified: dict[str, str] | None = None,
        editable: bool = False, location: str = SITE, installer: str = "pip",
        **kw: Any) -> DistributionPrint:
    return DistributionPrint(name=name, version=version, installer=installer, direct_url=None,
                             direct_url_kind=None, editable=editable, location=location,
                             files=1, digest="d", modified=modified or {}, **kw)


def _fp(*dists: DistributionPrint) -> Fingerprint:
    return Fingerprint(format=1, python_version="3.11.2", implementation="cpython",
                       executable="/opt/venv/bin/python", glibc="2.36", machine="x86_64",
                       distributions=dists, native=(), unowned=(), dpkg={})


def test_modified_distribution_files_are_carried_after_the_lock_or_after_the_builds(
        tmp_path: Path) -> None:
    fp = _fp(_dp("attrs", modified={"attrs/__init__.py": "ab" * 32}),
             _dp("mypkg", modified={"mypkg/x.py": "cd" * 32}), _dp("numpy"),
             _dp("ed", editable=True, modified={"ed/x.py": "ef" * 32}))
    files = carried.modified_files(fp, rebuilt_by_step=["MyPkg"])
    assert files == (carried.CarriedFile(f"{SITE}/attrs/__init__.py", "ab" * 32, "attrs"),
                     carried.CarriedFile(f"{SITE}/mypkg/x.py", "cd" * 32, "mypkg",
                                         after_builds=True))
    assert files[0].artifact_path == f"carried{SITE}/attrs/__init__.py"
    assert carried.carried_sums(files[:1]) == f"{'ab' * 32}  {SITE}/attrs/__init__.py\n"
    run = load_run(make_run_dir(tmp_path, [cmd("/opt/venv/bin/pip install numpy==1.26.4")],
                                python=[venv(dists=[dist("numpy", "1.0")])]))
    plan, report = distill(run)
    plan = structs.replace(plan, carried=files)
    from synth.export.render import render_artifact

    out = render_artifact(plan, report, [])
    docker = out["Dockerfile"]
    early = docker.index(f'COPY ["carried{SITE}/attrs/__init__.py", "{SITE}/attrs/__init__.py"]')
    late = docker.index(f'COPY ["carried{SITE}/mypkg/x.py", "{SITE}/mypkg/x.py"]')
    assert early < docker.index("sha256sum -c /tmp/synth/carried.sha256") < late
    assert "sha256sum -c /tmp/synth/carried-after-builds.sha256" in docker[late:]
    assert out["carried.sha256"] == f"{'ab' * 32}  {SITE}/attrs/__init__.py\n"
    assert out["carried-after-builds.sha256"] == f"{'cd' * 32}  {SITE}/mypkg/x.py\n"


def test_every_distribution_is_locked_or_built_or_named() -> None:
    fp = _fp(_dp("numpy", "1.26.4"), _dp("Foo_Bar", "2.0"), _dp("legacy", "0.3",
             metadata_dir="legacy-0.3.egg-info", files_from="installed-files.txt"),
             _dp("mine", "0.1"), _dp("ed", editable=True), _dp("old", shadowed=True),
             _dp("apt", location="/usr/lib/python3/dist-packages"))
    out = carried.unreproduced(fp, {"numpy": "1.26.4", "foo-bar": "1.9"}, built=["mine"])
    # An editable install no step installs again is not reproduced by carrying its source
    # (seen on x-transformers: the rebuilt image had no x_transformers at all).
    assert out == ("Foo_Bar 2.0 is locked at 1.9",
                   f"ed 1.0 (editable, in {SITE}) is neither locked nor built by a step",
                   f"legacy 0.3 (setup.py install, in {SITE}) is neither locked nor built "
                   "by a step")
    assert "ed" not in " ".join(carried.unreproduced(
        fp, {"numpy": "1.26.4", "foo-bar": "2.0", "legacy": "0.3"}, built=["mine", "ed"]))


def test_conda_installed_distributions_come_with_their_recreated_prefix() -> None:
    env = "/opt/conda/envs/ml"
    site = f"{env}/lib/python3.11/site-packages"
    fp = _fp(_dp("tinylib", location=site, installer="conda"), _dp("six", location=site),
             _dp("other", location="/opt/conda/envs/ml2/lib/python3.11/site-packages",
                 installer="conda"))
    out = carried.unreproduced(fp, {"six": "1.0"}, built=[], conda_prefixes=[env])
    # tinylib is in the conda lock of the prefix; another prefix's conda package is not.
    assert out == ("other 1.0 (index, in /opt/conda/envs/ml2/lib/python3.11/site-packages) "
                   "is neither locked nor built by a step",)
    assert len(carried.unreproduced(fp, {"six": "1.0"}, built=[])) == 2


def test_dpkg_owned_paths_are_never_unexplained() -> None:
    lines = ("A /opt/tool", "C /etc/foo.conf", "A /usr/local/lib/x.so")
    assert carried.dpkg_explained(lines, frozenset({"/etc/foo.conf", "/usr/share"})) == (
        "A /opt/tool", "A /usr/local/lib/x.so")


def test_warnings_for_a_second_interpreter_pip_check_and_overlaps() -> None:
    assert warn.second_interpreters([("/opt/venv/bin/python", 3)]) == []
    assert warn.second_interpreters([("/opt/venv/bin/python", 3), ("/usr/bin/python3", 2)]) == [
        "packages went into a second interpreter: /usr/bin/python3 (2 pinned) besides the "
        "primary /opt/venv/bin/python; code run with /opt/venv/bin/python does not see them"]
    assert warn.pip_check(["a 1.0 has requirement b<2, but you have b 2.1."]) == [
        "pip check reports a conflict in the locked set: a 1.0 has requirement b<2, but you "
        "have b 2.1."]
    owners = {f"{SITE}/cv2/__init__.py": ["opencv-python", "opencv-python-headless"],
              f"{SITE}/cv2/data/x.xml": ["opencv-python", "opencv-python-headless"],
              f"{SITE}/x/__init__.py": ["x", "not-locked"]}
    assert warn.overlaps(owners, ["opencv_python", "opencv-python-headless", "x"]) == [
        "opencv-python and opencv-python-headless install the same 2 file(s) "
        "(cv2/__init__.py, cv2/data/x.xml): which one wins depends on install order"]


@pytest.mark.parametrize(("line", "final", "expect"), [
    ("/opt/venv/bin/pip install --index-url https://download.pytorch.org/whl/cpu torch",
     "2.4.0+cu121", True),
    ("/opt/venv/bin/pip install torch==2.3.0+cpu", "2.3.0+cpu", False),
    ("/opt/venv/bin/pip install torch==2.3.0+cpu", "2.4.0", True),
    ("/opt/venv/bin/pip install 'jax>=0.4,<0.5'", "0.5.1", True),
    ("/opt/venv/bin/pip install numpy==1.26.4", "2.0.0", False),  # not a framework
])
def test_a_replaced_framework_is_named(tmp_path: Path, line: str, final: str,
                                       expect: bool) -> None:
    run = load_run(make_run_dir(tmp_path, [cmd(line)],
                                python=[venv(dists=[dist("torch", final), dist("jax", final),
                                                    dist("numpy", final)])]))
    got = [w for w in distill(run)[1].warnings if w.startswith("a later install replaced")]
    assert bool(got) is expect, got
    if expect:
        assert got[0].startswith("a later install replaced the task's main framework: audit ")


PIP = "/opt/venv/bin/pip install "


@pytest.mark.parametrize(("lines", "final", "expect"), [
    # Installed and checked first, replaced by a later install naming it: the report says
    # both installs and the final version (tasks/mixed-frameworks/agents/replaced.sh).
    ([cmd(PIP + '"jax[cpu]==0.7.1"'), cmd(PIP + '"jax[cpu]==0.7.0"')], "0.7.0",
     "a later install replaced the task's main framework: audit 1.0 installed "
     "`jax[cpu]==0.7.1`, audit 2.0 installed `jax[cpu]==0.7.0`; the final state has jax "
     "0.7.0"),
    ([cmd(PIP + "--find-links /synth/wheelhouse torch==2.13.0+cpu"),
      cmd(PIP + "torch==2.13.0")], "2.13.0",
     "a later install replaced the task's main framework: audit 1.0 installed "
     "`torch==2.13.0+cpu` (a CPU build), audit 2.0 installed `torch==2.13.0`; the final "
     "state has torch 2.13.0"),
    # Put back as first installed, an unpinned first install, a first install that failed.
    ([cmd(PIP + "jax==0.7.1"), cmd(PIP + "jax==0.7.0"), cmd(PIP + "jax==0.7.1")], "0.7.1",
     None),
    ([cmd(PIP + "jax"), cmd(PIP + "jax==0.7.0")], "0.7.0", None),
    ([cmd(PIP + "jax==0.10.2", exit=1), cmd(PIP + "jax==0.7.1")], "0.7.1", None),
])
def test_a_framework_replaced_by_a_later_named_install(
        tmp_path: Path, lines: list[dict[str, Any]], final: str, expect: str | None) -> None:
    run = load_run(make_run_dir(tmp_path, lines, python=[venv(dists=[
        dist("torch", final), dist("jax", final)])]))
    got = [w for w in distill(run)[1].warnings if w.startswith("a later install replaced")]
    assert got == ([expect] if expect else [])


def test_missing_distributions_fail_the_export_unless_allowed(tmp_path: Path) -> None:
    run = load_run(make_run_dir(tmp_path, [cmd("/opt/venv/bin/pip install numpy==1.26.4")],
                                python=[venv(dists=[dist("numpy", "1.26.4")])]))
    plan, report = distill(run)
    fp = _fp(_dp("numpy", "1.26.4"), _dp("legacy", "0.3", metadata_dir="legacy-0.3.egg-info",
                                          files_from="installed-files.txt"))
    facts = LiveFacts(fingerprint=fp, dpkg_paths=frozenset())
    with pytest.raises(ExportError, match=r"would not reproduce 1 thing.*legacy 0\.3") as exc:
        final_state.complete_plan(run, plan, report, facts)
    assert exc.value.hint and "--allow-missing" in exc.value.hint
    done, _ = final_state.complete_plan(run, plan, report, facts, allow_missing=True)
    assert done.missing == (f"legacy 0.3 (setup.py install, in {SITE}) is neither locked nor "
                            "built by a step",)


def test_a_build_that_built_nothing_is_dropped_and_sigpipe_is_no_failure(
        tmp_path: Path) -> None:
    from synth.export.source_patch import SourceEdits

    run = load_run(make_run_dir(tmp_path, [
        cmd("cd /workspace/native && make"),
        cmd("cd /workspace/other && make"),
        cmd("cd /workspace && make install"),
        cmd("/opt/venv/bin/pip list | head -3", hooks=[("/opt/venv/bin/pip list", 141),
                                                       ("head -3", 0)]),
    ], python=[venv()]))
    plan, report = distill(run)
    assert [s.cwd for s in plan.native] == ["/workspace/native", "/workspace/other",
                                            "/workspace"]
    pip_list = next(o for o in report.outcomes if o.command == "/opt/venv/bin/pip list")
    assert pip_list.reason == "read-only"  # not "failed (exit 141)"
    edits = SourceEdits(not_carried=("native/build: build output (made again …)",))
    done, done_report = final_state.drop_idle_builds(plan, report, run, edits)
    assert [s.cwd for s in done.native] == ["/workspace/native", "/workspace"]
    other = next(o for o in done_report.outcomes if o.cwd == "/workspace/other" and o.step ==
                 "native-build")
    assert (other.decision, other.reason) == (
        "dropped", "built nothing: no file under /workspace/other changed in the final state")


def test_a_legacy_egg_info_install_named_by_pip_is_locked(tmp_path: Path) -> None:
    run = load_run(make_run_dir(tmp_path, [cmd("/opt/venv/bin/pip install numpy==1.26.4 "
                                               "Legacy_Pkg")],
                                python=[venv(dists=[dist("numpy", "1.26.4"),
                                                    dist("legacy-pkg", "0.3", installer=None)])]))
    plan, report = distill(run)
    assert any("legacy-pkg" in w and "not installed from an index" in w for w in report.warnings)
    fp = _fp(_dp("numpy", "1.26.4"), _dp("legacy_pkg", "0.3",
                                          metadata_dir="legacy_pkg-0.3.egg-info",
                                          files_from="installed-files.txt"))
    done, done_report = final_state.complete_plan(run, plan, report, LiveFacts(fingerprint=fp))
    assert done.envs[0].pins == (("legacy_pkg", "0.3"), ("numpy", "1.26.4"))
    assert done.missing == ()
    assert not any("not installed from an index" in w for w in done_report.warnings)
    assert "legacy_pkg 0.3 was installed by pip's legacy `setup.py install` (egg-info, no " \
           "INSTALLER); it is locked by name like the others" in done_report.warnings


def test_a_run_whose_live_image_is_gone_exports_and_says_so(tmp_path: Path) -> None:
    """hash_downloads=True asks the live image; it does not exist (or there is no engine):
    the export still succeeds, source/ is the host copy, and the report says what it could
    not check."""
    import json

    from test_render_golden import _run, fake_locker

    from synth.config import Settings
    from synth.export.artifact import ExportOptions, export_run

    run_dir = _run(tmp_path)
    art = export_run(ExportOptions(
        run_dir, out_dir=tmp_path / "art", locker=fake_locker),
        Settings.load(artifacts_dir=run_dir.parents[2]), NO_ENGINE).artifact_dir
    report = json.loads((art / "export-report.json").read_text())
    assert any(w.startswith("the final state could not be checked file by file")
               for w in report["warnings"])
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["source"]["from_final_workspace"] is False
    assert (art / "source").is_dir()


def test_a_host_repository_changed_since_the_run_is_noticed(tmp_path: Path) -> None:
    import json

    repo = _repo(tmp_path / "repo")
    run_dir = make_run_dir(tmp_path, [])
    assert not final_state.host_changed(load_run(run_dir), repo)  # no hash recorded
    ws = _tar(tmp_path, {"pkg": None, "pkg/__init__.py": b"x = 1\n",
                         "env.yml": b"numpy=1.26\n", "old.txt": b"gone soon\n"})
    from synth.record import tree

    doc = json.loads((run_dir / "run.json").read_text())
    doc["source_tree"]["before"] = tree.tree_hash(tree.entries_from_tar(ws.read_bytes()))
    (run_dir / "run.json").write_text(json.dumps(doc))
    assert not final_state.host_changed(load_run(run_dir), repo)
    (repo / "env.yml").write_text("numpy=2\n")
    assert final_state.host_changed(load_run(run_dir), repo)


def test_a_symlink_in_the_workspace_never_leads_writes_outside_source(tmp_path: Path) -> None:
    """The agent turns pkg/ into a symlink to a host folder and adds evil -> outside with a
    file below it: source/ gets the symlinks, nothing outside it is written or deleted."""
    src = _repo(tmp_path / "src")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "__init__.py").write_text("host file\n")
    (outside / "keep.txt").write_text("keep\n")
    path = tmp_path / "ws.tar"
    with tarfile.open(path, "w") as tar:
        for name, kind, target in (("workspace", tarfile.DIRTYPE, ""),
                                   ("workspace/pkg", tarfile.SYMTYPE, str(outside)),
                                   ("workspace/evil", tarfile.SYMTYPE, str(outside))):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, target
            tar.addfile(info)
        for name in ("workspace/evil/keep.txt", "workspace/pkg/__init__.py"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"bad"))
    edits = apply_workspace(path, src, venvs=())
    assert (outside / "__init__.py").read_text() == "host file\n"
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert (src / "pkg").is_symlink() and (src / "evil").is_symlink()
    assert "evil/keep.txt: below a symlink (not followed)" in edits.not_carried


def test_a_checkout_git_cannot_diff_is_patched_against_the_original_copy(
        tmp_path: Path) -> None:
    # A snapshot or partial clone whose commit names blobs it does not hold (seen on a
    # fetched real repository): source.patch is made against the copy, and the report says so.
    import shutil
    import subprocess

    from synth.export.source_patch import source_patch

    repo = tmp_path / "original"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")
    (repo / "big.bin").write_bytes(b"\0big\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    blob = subprocess.run([*git, "rev-parse", "HEAD:big.bin"], check=True, capture_output=True,
                          text=True).stdout.strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    (repo / "big.bin").unlink()  # the snapshot lists the large file but does not hold it
    source = tmp_path / "source"
    shutil.copytree(repo, source, symlinks=True)
    (source / "a.txt").write_text("b\n")
    sp = source_patch(repo, source)
    assert sp.note and "git could not diff" in sp.note
    assert sp.files == ("M\ta.txt",) and b"-a\n+b\n" in sp.patch
