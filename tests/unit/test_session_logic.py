"""Pure logic of sessions: tree hash, noise, dpkg/env/python state, claims, run dirs, agents."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from synth.config import Settings
from synth.errors import NotFoundError, UsageError
from synth.record.agent_choice import make_agent
from synth.record.agents import (
    ExecAgent,
    ReplayAgent,
    ShellAgent,
    parse_mount,
    secret_values,
)
from synth.record.claims import validate_claims
from synth.record.lease import lease_command
from synth.record.rundir import RUN_ID_RE, find_run, list_runs, new_run_id
from synth.record.snapshot import (
    apt_state,
    choose_primary,
    classify_diff,
    env_state,
    interpreter_kind,
    noise_reason,
    parse_dpkg,
    parse_env_assignments,
)
from synth.record.tree import (
    compare_trees,
    entries_from_tar,
    is_build_output,
    tree_hash,
    violations,
)


def make_tar(files: dict[str, bytes], mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("workspace")
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(f"workspace/{name}")
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# ---------------------------------------------------------------- tree hash
@pytest.mark.parametrize(("path", "is_dir", "ignored"), [
    ("build", True, True),
    ("build/lib/x.py", False, True),
    ("src/pkg.egg-info/PKG-INFO", False, True),
    ("src/pkg/__pycache__/m.cpython-311.pyc", False, True),
    ("src/pkg/_ext.cpython-311-x86_64-linux-gnu.so", False, True),
    ("src/pkg/_ext.c", False, False),
    ("src/build.py", False, False),
    ("setup.py", False, False),
    (".git/index", False, True),
])
def test_build_output_rules(path: str, is_dir: bool, ignored: bool) -> None:
    assert is_build_output(path, is_dir=is_dir) is ignored


def test_tree_hash_ignores_build_output_and_reports_changes() -> None:
    before = entries_from_tar(make_tar({"setup.py": b"a", "src/m.py": b"b", "old.txt": b"o"}))
    same = entries_from_tar(make_tar({"setup.py": b"a", "src/m.py": b"b", "old.txt": b"o",
                                      "build/x.o": b"junk", "src/m.so": b"elf"}))
    assert tree_hash(before) == tree_hash(same)
    after = entries_from_tar(make_tar({"setup.py": b"CHANGED", "src/m.py": b"b",
                                       "data.csv": b"new"}))
    changes = compare_trees(before, after)
    assert [(c.path, c.change) for c in changes] == [
        ("data.csv", "added"), ("old.txt", "deleted"), ("setup.py", "modified")]
    assert [v["path"] for v in violations(changes)] == ["old.txt", "setup.py"]
    assert tree_hash(before) != tree_hash(after)


def test_tree_hash_sees_the_executable_bit() -> None:
    a = entries_from_tar(make_tar({"run.sh": b"x"}, mode=0o644))
    b = entries_from_tar(make_tar({"run.sh": b"x"}, mode=0o755))
    assert tree_hash(a) != tree_hash(b)


# -------------------------------------------------------------------- noise
@pytest.mark.parametrize(("path", "reason"), [
    ("/root/.cache/pip/http/x", "cache"),
    ("/home/u/.cache", "cache"),
    ("/opt/venv/lib/python3.11/site-packages/six/__pycache__", "__pycache__"),
    ("/usr/lib/python3/x.pyc", "__pycache__"),
    ("/var/lib/apt/lists/deb.debian.org_dists", "apt lists"),
    ("/var/log/dpkg.log", "log"),
    ("/synth/claims.json", "synth's own mounts and claims file"),
    ("/tmp/pip-build", "temporary files"),
    ("/opt/venv/bin/python", None),
    ("/usr/bin/jq", None),
    ("/synthetic", None),
])
def test_noise_reason(path: str, reason: str | None) -> None:
    assert noise_reason(path) == reason


def test_classify_diff_keeps_noise_apart_and_sorted() -> None:
    out = classify_diff([("A", "/usr/bin/jq"), ("C", "/root/.cache"), ("A", "/opt/venv")])
    assert out["changes"] == [{"kind": "A", "path": "/opt/venv"},
                              {"kind": "A", "path": "/usr/bin/jq"}]
    assert out["noise"] == [{"kind": "C", "path": "/root/.cache", "reason": "cache"}]


# --------------------------------------------------------------------- apt
def test_parse_dpkg_keeps_installed_only() -> None:
    text = "installed\tjq\t1.6-2.1\nconfig-files\told\t1\ninstalled\tlibc6\t2.36\n"
    assert parse_dpkg(text) == {"jq": "1.6-2.1", "libc6": "2.36"}


def test_apt_state() -> None:
    st = apt_state({"a": "1", "b": "1", "c": "1"}, {"a": "1", "b": "2", "jq": "1.6"},
                   ["a"], ["a", "jq"])
    assert st["added"] == {"jq": "1.6"} and st["changed"] == {"b": ["1", "2"]}
    assert st["removed"] == {"c": "1"} and st["manual"] == ["jq"]


# --------------------------------------------------------------------- env
def test_env_assignments_and_persisted_state() -> None:
    bashrc = 'export A=1\nexport TORCH_CUDA_ARCH_LIST="8.0;9.0"\nB=2\nexport P="/x:$PATH"\n'
    assert parse_env_assignments("/root/.bashrc", bashrc) == {
        "A": "1", "TORCH_CUDA_ARCH_LIST": "8.0;9.0", "P": "/x:$PATH"}
    assert parse_env_assignments("/etc/environment", 'LANG="C.UTF-8"\n') == {"LANG": "C.UTF-8"}
    st = env_state({"/root/.bashrc": "export A=1\n"}, {"/root/.bashrc": bashrc})
    assert st["persisted"] == {"P": "/x:$PATH", "TORCH_CUDA_ARCH_LIST": "8.0;9.0"}
    assert st["sources"]["TORCH_CUDA_ARCH_LIST"] == "/root/.bashrc"


# ------------------------------------------------------------------ python
SYSTEM = {"path": "/usr/bin/python3", "kind": "system", "prefix": "/usr",
          "created_by_agent": False, "distributions": [{"name": "pip"}] * 5}
VENV_SMALL = {"path": "/opt/a/bin/python", "kind": "venv", "prefix": "/opt/a",
              "created_by_agent": True, "distributions": [{"name": "x"}]}
VENV_BIG = {"path": "/opt/b/bin/python", "kind": "venv", "prefix": "/opt/b",
            "created_by_agent": True, "distributions": [{"name": "x"}] * 3}


def test_primary_interpreter_choice() -> None:
    interps = [SYSTEM, VENV_SMALL, VENV_BIG]
    assert choose_primary(interps, None) == "/opt/b/bin/python"
    assert choose_primary(interps, "/opt/a/bin/python") == "/opt/a/bin/python"
    assert choose_primary(interps, "/opt/a") == "/opt/a/bin/python"
    assert choose_primary(interps, "/nowhere/python") == "/opt/b/bin/python"
    assert choose_primary([SYSTEM], None) == "/usr/bin/python3"
    # A tool's environment (uvx's cache: pdm and its 37 packages) is never the project's.
    uvx = {"path": "/root/.cache/uv/archive-v0/x/bin/python", "kind": "venv",
           "prefix": "/root/.cache/uv/archive-v0/x", "created_by_agent": True,
           "distributions": [{"name": "y"}] * 37}
    assert choose_primary([SYSTEM, VENV_SMALL, uvx], None) == "/opt/a/bin/python"
    assert choose_primary([SYSTEM, uvx], None) == uvx["path"]  # nothing else: still it
    assert choose_primary([], None) is None


def test_the_environment_the_repository_is_installed_into_is_the_primary_one() -> None:
    """poetry's own venv (its installer's /opt/poetry: 53 packages) beside the project's
    (25, the repository installed editable): the project's, even in poetry's cache."""
    project = {"name": "lamatrix", "direct_url": {"url": "file:///workspace",
                                                  "dir_info": {"editable": True}}}
    poetry = {"path": "/opt/poetry/bin/python", "kind": "venv", "prefix": "/opt/poetry",
              "created_by_agent": True, "distributions": [{"name": "x"}] * 53}
    for prefix in ("/workspace/.venv", "/root/.cache/pypoetry/virtualenvs/lamatrix-x-py3.11"):
        venv = {"path": f"{prefix}/bin/python", "kind": "venv", "prefix": prefix,
                "created_by_agent": True, "distributions": [{"name": "x"}] * 24 + [project]}
        assert choose_primary([SYSTEM, poetry, venv], None) == venv["path"]
    elsewhere = {**project, "direct_url": {"url": "file:///workspacex", "dir_info": {}}}
    venv = {**VENV_SMALL, "distributions": [elsewhere]}
    assert choose_primary([SYSTEM, poetry, venv], None) == poetry["path"]


def test_interpreter_kind() -> None:
    sysinfo = {"prefix": "/usr", "base_prefix": "/usr"}
    venv = {"prefix": "/opt/v", "base_prefix": "/usr"}
    assert interpreter_kind("venvless", sysinfo, "/usr/bin/python3") == "system"
    assert interpreter_kind("venv", venv, "/opt/v/bin/python") == "venv"
    assert interpreter_kind("conda", {"prefix": "/opt/conda", "base_prefix": "/opt/conda"},
                            "/opt/conda/bin/python") == "conda"
    uv = {"prefix": "/root/.local/share/uv/python/cpython-3.12/",
          "base_prefix": "/root/.local/share/uv/python/cpython-3.12/"}
    assert interpreter_kind("uv", uv, "/root/.local/share/uv/python/cpython-3.12/bin/python3") \
        == "uv"


# ------------------------------------------------------------------ claims
def test_claims_validation() -> None:
    assert validate_claims(None).status == "missing"
    ok = validate_claims(json.dumps({"python_path": "/opt/venv/bin/python", "gpu_count": 0,
                                     "cuda_available": None, "extra": [1]}).encode())
    assert ok.status == "valid" and ok.claims is not None and ok.claims["extra"] == [1]
    bad = validate_claims(json.dumps({"gpu_count": True, "cuda_available": "yes",
                                      "notes": ["a", 2]}).encode())
    assert bad.status == "invalid" and len(bad.errors) == 3
    assert validate_claims(b"{nope").status == "invalid"
    assert validate_claims(b"[1]").errors == ["top level must be an object, not list"]


# ---------------------------------------------------------------- run dirs
def test_run_ids_sort_by_time_and_find_run(tmp_path: Path) -> None:
    rid = new_run_id()
    assert RUN_ID_RE.match(rid)
    settings = Settings.load(artifacts_dir=tmp_path)
    with pytest.raises(NotFoundError):
        find_run(settings)
    for task, run_id in (("a", "20260101-000000-aaaaaa"), ("b", "20260102-000000-bbbbbb"),
                         ("a", "20260103-000000-cccccc")):
        d = settings.runs_dir / task / run_id
        d.mkdir(parents=True)
        (d / "run.json").write_text(json.dumps({"format": 1, "run_id": run_id}))
    assert [p.name for p in list_runs(settings)] == [
        "20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260103-000000-cccccc"]
    assert [p.name for p in list_runs(settings, "a")] == [
        "20260101-000000-aaaaaa", "20260103-000000-cccccc"]
    latest = settings.runs_dir / "a" / "20260103-000000-cccccc"
    assert find_run(settings) == latest
    assert find_run(settings, "latest") == latest
    assert find_run(settings, "20260102-000000-bbbbbb").parent.name == "b"
    assert find_run(settings, "b/20260102-000000-bbbbbb").parent.name == "b"
    assert find_run(settings, "b/latest").name == "20260102-000000-bbbbbb"
    assert find_run(settings, "a/latest") == latest
    with pytest.raises(NotFoundError, match="No runs of task c under"):
        find_run(settings, "c/latest")
    with pytest.raises(NotFoundError, match=r"No runs of task \* under"):
        find_run(settings, "*/latest")  # a task name, never a pattern
    assert find_run(settings, "20260101").name == "20260101-000000-aaaaaa"
    assert find_run(settings, str(latest)) == latest
    with pytest.raises(NotFoundError, match="ambiguous"):
        find_run(settings, "2026")
    with pytest.raises(NotFoundError):
        find_run(settings, "nope")


# ------------------------------------------------------------------ agents
def test_make_agent(tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("echo hi\n")
    agent = make_agent("replay", script=script, stop_on_error=True)
    assert isinstance(agent, ReplayAgent) and agent.stop_on_error
    assert isinstance(make_agent("shell"), ShellAgent)
    ex = make_agent("exec", command=["python3", "a.py"], mounts=[f"{tmp_path}:/agent"],
                    env_names=["HOME"])
    assert isinstance(ex, ExecAgent) and ex.mounts[0].read_only and ex.mounts[0].target == "/agent"
    for kwargs in ({"kind": "replay"}, {"kind": "exec"}, {"kind": "nope"},
                   {"kind": "shell", "command": ["x"]}, {"kind": "exec", "script": script,
                                                         "command": ["x"]}):
        with pytest.raises(UsageError):
            make_agent(**kwargs)  # type: ignore[arg-type]


def test_parse_mount_and_secret_values(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        parse_mount("relative-without-colon")
    with pytest.raises(UsageError):
        parse_mount(f"{tmp_path}/missing:/x")
    assert secret_values(["K"], {"K": "v"}) == {"K": "v"}
    with pytest.raises(UsageError, match="not set"):
        secret_values(["K"], {})
    with pytest.raises(UsageError):
        secret_values(["not-a-name"], {"not-a-name": "v"})


# ------------------------------------------------------------------ the lease
def _lease_loop(tmp_path: Path, stat_shim: str, seconds: int) -> subprocess.Popen[bytes]:
    """The container's lease loop, run by the host's /bin/sh with ``stat`` replaced."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "stat").write_text("#!/bin/sh\n" + stat_shim)
    (bin_dir / "stat").chmod(0o755)
    argv = lease_command(seconds, str(tmp_path / "lease"))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "REAL_STAT": shutil.which("stat") or "stat",
           "MARK": str(tmp_path / "mark")}
    return subprocess.Popen(["/bin/sh", *argv[1:]], env=env)


def _wait_for(path: Path, proc: subprocess.Popen[bytes], limit: float = 60.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline and proc.poll() is None:
        if path.exists():
            return True
        time.sleep(0.05)
    return path.exists()


def test_a_killed_lease_reading_does_not_end_the_lease(tmp_path: Path) -> None:
    """``kill -KILL -1`` (how synth stops an agent) may kill the loop's ``$(stat …)``
    subshell; an empty reading once stopped the container before its capture."""
    (tmp_path / "lease").mkdir()
    (tmp_path / "lease" / "lease").touch()
    # The first reading dies with its subshell, as under kill -1; the second is real.
    shim = ('if [ ! -e "$MARK.1" ]; then : >"$MARK.1"; kill -KILL "$PPID"; exit 1; fi\n'
            ': >"$MARK"; exec "$REAL_STAT" "$@"\n')
    proc = _lease_loop(tmp_path, shim, seconds=600)
    try:
        assert _wait_for(tmp_path / "mark", proc), "the loop ended at the killed reading"
        assert proc.poll() is None
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0  # TERM is how the container is stopped


def test_a_lease_file_that_is_gone_ends_the_loop(tmp_path: Path) -> None:
    proc = _lease_loop(tmp_path, 'exec "$REAL_STAT" "$@"\n', seconds=600)
    assert proc.wait(timeout=60) == 0


def test_the_watchdog_tells_a_release_from_synth_going_away() -> None:
    """synth's end of the pipe closing without its release (any death, kill -9 too) is what
    makes the watchdog stop the container; a release is not."""
    import os

    from synth.record.watchdog import RELEASED, wait_for_synth

    r, w = os.pipe()
    os.write(w, RELEASED)
    os.close(w)
    assert wait_for_synth(r) == RELEASED
    os.close(r)
    r, w = os.pipe()
    os.close(w)  # synth died before releasing
    assert wait_for_synth(r) != RELEASED
    os.close(r)
    r, w = os.pipe()
    os.write(w, b"released\nand more")  # anything else is not a release
    os.close(w)
    assert wait_for_synth(r) != RELEASED
    os.close(r)


def test_the_watchdog_stops_the_container_only_without_a_release(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from synth.record import watchdog

    stopped: list[str] = []
    monkeypatch.setattr(watchdog, "stop_container", stopped.append)
    for payload in (watchdog.RELEASED, b""):
        r, w = os.pipe()
        os.write(w, payload)
        os.close(w)
        assert watchdog.main(["synth-run-x", str(r)]) == 0
    assert stopped == ["synth-run-x"]


def test_a_container_removed_from_outside_leaves_the_tree_unknown_not_deleted() -> None:
    """get_archive answers None both where the agent removed /workspace and where the
    container itself is gone (removed by someone else): only the first is an empty tree;
    the second raises, so the run records a capture error instead of every file of the
    repository as deleted by the agent (seen on aics-cytoparam)."""
    from synth.errors import EngineError
    from synth.record.runner import _Session

    class Box:
        def __init__(self, alive: bool) -> None:
            self.alive = alive

        def get_archive(self, src: str) -> bytes | None:
            return None

        def labels(self) -> dict[str, str]:
            if not self.alive:
                raise EngineError("Cannot inspect the session container: 404 No such container")
            return {}

    assert _Session.workspace_entries(Box(alive=True)) == {}  # type: ignore[arg-type]
    with pytest.raises(EngineError):
        _Session.workspace_entries(Box(alive=False))  # type: ignore[arg-type]


def test_export_s_miss_mentions_formats_only_for_a_format_s_name(tmp_path: Path) -> None:
    from synth.export.artifact import find_export_run

    settings = Settings.load(artifacts_dir=tmp_path)
    (settings.runs_dir / "t").mkdir(parents=True)
    with pytest.raises(NotFoundError) as err:
        find_export_run(settings, "Dockerfile")
    assert "--format" in (err.value.hint or "")
    for ref in ("t/2026", "t/latest", "2026"):
        with pytest.raises(NotFoundError) as err:
            find_export_run(settings, ref)
        assert "--format" not in (err.value.hint or ""), ref
