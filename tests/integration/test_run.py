"""`synth run` against a real engine: audit records, state snapshot, secrets, timeout, cleanup.

Three runs are shared by the tests of this module: a replay run (apt + pip installs, a
failing command, a compound command, a claims file, an edit of the source), an exec run
of a small agent program holding a secret, and a CLI run killed by its timeout.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from image_layers import layers_containing

from synth.config import Settings
from synth.engine import Mount
from synth.engine.docker import DockerEngine
from synth.errors import EXIT_AGENT_FAILED, EXIT_AGENT_TIMEOUT
from synth.formats.task import Task, load_task
from synth.record.agents import ExecAgent, ReplayAgent
from synth.record.audit import load_audit
from synth.record.rundir import find_run, list_runs
from synth.record.runner import RunOptions, RunResult, run_session

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SECRET = "sk-synth-test-9f8e7d6c5b4a"

REPLAY_SCRIPT = """\
# a setup with apt and pip installs, a failure, and a compound command
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends jq
python3 -m venv /opt/venv
ls /does-not-exist
cd /workspace/src && export SYNTH_TEST_X=1 && /opt/venv/bin/pip install -q six packaging
echo 'export SYNTH_TEST_PERSIST=yes' >> /root/.bashrc
echo '# edited' >> /workspace/setup.py
cat > /synth/claims.json <<'JSON'
{"python_path": "/opt/venv/bin/python", "gpu_count": 0, "cuda_available": false}
JSON
"""

AGENT_PROGRAM = """\
import os, subprocess
key = os.environ["SYNTH_TEST_SECRET"]
subprocess.run(["bash", "-c", "echo token=$SYNTH_TEST_SECRET"], check=False)
subprocess.run(["bash", "-c", f"cd /workspace && echo 'using {key}' > /dev/null && pwd"],
               check=False)
subprocess.run(["bash", "-c", "ls /nope; exit 4"], check=False)
print("agent done with", key)
"""


def make_task(root: Path) -> Task:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(name='demo')\n")
    (repo / "src" / "demo.py").write_text("print('demo')\n")
    (root / "task.toml").write_text(
        'name = "run-test"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[not_applicable]\nC1 = "test"\nC3 = "test"\nC4 = "test"\n'
    )
    return load_task(root)


@pytest.fixture(scope="module")
def env(
    engine: DockerEngine, base_image: str, ca_bundle: Path | None, wheelhouse: Path | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("run-test")
    settings = Settings.load(artifacts_dir=root / "artifacts", ca_bundle=ca_bundle,
                             wheelhouse=wheelhouse)
    state: dict[str, Any] = {"root": root, "settings": settings, "task": make_task(root / "task"),
                             "results": []}
    yield state
    for result in state["results"]:
        if result.live_image:
            engine.remove_image(result.live_image)


def _run(engine: DockerEngine, env: dict[str, Any], opts: RunOptions) -> RunResult:
    result = run_session(opts, env["settings"], engine, say=lambda _m: None)
    env["results"].append(result)
    return result


@pytest.fixture(scope="module")
def replay(engine: DockerEngine, env: dict[str, Any]) -> RunResult:
    script = env["root"] / "setup.sh"
    script.write_text(REPLAY_SCRIPT)
    return _run(engine, env, RunOptions(task=env["task"], agent=ReplayAgent(script),
                                        timeout=900))


@pytest.fixture(scope="module")
def exec_run(
    engine: DockerEngine, env: dict[str, Any], monkeypatch_module: pytest.MonkeyPatch
) -> RunResult:
    agent_dir = env["root"] / "agent"
    agent_dir.mkdir()
    (agent_dir / "agent.py").write_text(AGENT_PROGRAM)
    monkeypatch_module.setenv("SYNTH_TEST_SECRET", SECRET)
    agent = ExecAgent(["python3", "/agent/agent.py"], [Mount(agent_dir, "/agent")],
                      ["SYNTH_TEST_SECRET"])
    return _run(engine, env, RunOptions(task=env["task"], agent=agent, timeout=300))


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def commands(run_dir: Path, source: str) -> list[dict[str, Any]]:
    _header, records = load_audit(run_dir / "audit.jsonl")
    return [r for r in records if r.get("source") == source]


def no_container_left(engine: DockerEngine, run_id: str) -> bool:
    return not engine.managed_containers(f"synth.run={run_id}")


# ------------------------------------------------------------------ replay
def test_replay_audits_each_simple_command_with_cwd_and_exit(replay: RunResult) -> None:
    assert replay.status == "succeeded"
    hooks = commands(replay.run_dir, "bash-hook")
    by_cmd = {r["command"]: r for r in hooks}
    assert by_cmd["ls /does-not-exist"]["exit"] == 2
    assert by_cmd["cd /workspace/src"]["cwd"] == "/workspace"
    assert by_cmd["export SYNTH_TEST_X=1"]["cwd"] == "/workspace/src"
    pip = by_cmd["/opt/venv/bin/pip install -q six packaging"]
    assert pip["cwd"] == "/workspace/src" and pip["exit"] == 0
    assert by_cmd["python3 -m venv /opt/venv"]["exit"] == 0
    bash_c = {r["command"]: r for r in commands(replay.run_dir, "bash-c")}
    compound = ("cd /workspace/src && export SYNTH_TEST_X=1 && "
                "/opt/venv/bin/pip install -q six packaging")
    assert bash_c[compound]["exit"] == 0
    assert pip["parent_seq"] == bash_c[compound]["seq"]
    synth = commands(replay.run_dir, "synth")
    assert [r["exit"] for r in synth if r["command"] == "ls /does-not-exist"] == [2]
    seqs = [r["seq"] for r in load_audit(replay.run_dir / "audit.jsonl")[1]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert (replay.run_dir / "logs" / "events.jsonl").is_file()
    assert not (replay.run_dir / "logs" / "hook").exists()  # drained, then removed
    audit = json.loads((replay.run_dir / "run.json").read_text())["audit"]
    assert (audit["verified"], audit["findings"], audit["unconfirmed"]) == (True, [], []), audit
    assert audit["cut"] == {"bytes": 0, "records": 0, "unread": 0}
    assert audit["processes"]["sampled"] and audit["processes"]["seen"] > 0, audit


def test_synths_own_commands_are_audited_as_phase_synth(replay: RunResult) -> None:
    from synth.distill.load import load_run

    synth = commands(replay.run_dir, "synth")
    agent = [r for r in synth if r["phase"] == "agent"]
    own = [r for r in synth if r["phase"] == "synth"]
    assert {r["phase"] for r in synth} == {"agent", "synth"}
    assert all(r["argv"][:2] == ["bash", "-c"] for r in agent)
    # setup (the repository copied in) before the agent; the capture (dpkg) after it
    first_agent = min(r["seq"] for r in agent)
    assert any(r["argv"] == ["rm", "-rf", "/workspace"] and r["seq"] < first_agent
               for r in own)
    assert any(r["argv"][:2] == ["dpkg-query", "-W"] and r["seq"] > first_agent for r in own)
    assert {r.phase for r in load_run(replay.run_dir).records} <= {None, "agent"}


def test_replay_state_lists_apt_and_python_packages(replay: RunResult) -> None:
    state = replay.run_dir / "state"
    apt = json.loads((state / "apt.json").read_text())
    assert "jq" in apt["added"] and apt["added"]["jq"]
    assert "jq" in apt["manual"]
    py = json.loads((state / "python.json").read_text())
    assert py["primary"] == "/opt/venv/bin/python"
    venv = next(i for i in py["interpreters"] if i["path"] == "/opt/venv/bin/python")
    assert venv["kind"] == "venv" and venv["created_by_agent"] is True
    dists = {d["name"]: d for d in venv["distributions"]}
    assert dists["six"]["version"] and dists["six"]["installer"] == "pip"
    assert dists["six"]["requested"] is True and dists["packaging"]["version"]
    assert any(i["kind"] == "system" for i in py["interpreters"])
    diff = json.loads((state / "diff.json").read_text())
    assert {"kind": "A", "path": "/opt/venv"} in diff["changes"]
    assert all(not c["path"].startswith("/var/lib/apt/lists/") for c in diff["changes"])
    env_state = json.loads((state / "env.json").read_text())
    assert env_state["persisted"] == {"SYNTH_TEST_PERSIST": "yes"}


def test_replay_run_json_claims_and_source_violation(replay: RunResult) -> None:
    run = json.loads((replay.run_dir / "run.json").read_text())
    assert run["status"] == "succeeded" and run["agent_exit_code"] == 0
    assert run["claims"] == {"status": "valid", "errors": []}
    assert json.loads((replay.run_dir / "claims.json").read_text())["gpu_count"] == 0
    assert run["source_tree"]["before"] != run["source_tree"]["after"]
    assert run["violations"] == [{
        "kind": "source_changed", "path": "setup.py", "change": "modified",
        "detail": "/workspace/setup.py was modified by the agent"}]
    assert run["live_image"]["ref"] == f"synth-live/run-test:{replay.run_id}"
    assert run["ca_bundle"] in (True, False) and run["error"] is None


def test_live_image_is_labelled_and_no_container_is_left(
    engine: DockerEngine, replay: RunResult
) -> None:
    assert replay.live_image is not None
    labels = engine.image_inspect(replay.live_image)["Config"]["Labels"]
    assert labels["synth.run"] == replay.run_id and labels["synth.kind"] == "live"
    env = engine.image_inspect(replay.live_image)["Config"]["Env"] or []
    assert not any(e.startswith(("BASH_ENV=", "PIP_CERT=", "SYNTH_")) for e in env)
    assert no_container_left(engine, replay.run_id)


# -------------------------------------------------------------------- exec
def test_exec_agent_is_audited(engine: DockerEngine, exec_run: RunResult) -> None:
    assert exec_run.status == "succeeded"
    bash_c = {r["command"]: r for r in commands(exec_run.run_dir, "bash-c")}
    assert bash_c["echo token=$SYNTH_TEST_SECRET"]["exit"] == 0
    assert bash_c["ls /nope; exit 4"]["exit"] == 4
    hooks = {r["command"]: r for r in commands(exec_run.run_dir, "bash-hook")}
    assert hooks["pwd"]["cwd"] == "/workspace" and hooks["ls /nope"]["exit"] == 2
    assert no_container_left(engine, exec_run.run_id)


def test_exec_secret_appears_nowhere(
    engine: DockerEngine, exec_run: RunResult, tmp_path: Path
) -> None:
    seen_masked = False
    for path in exec_run.run_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET.encode() not in data, path
            seen_masked |= b"using ***" in data
    assert seen_masked
    log = (exec_run.run_dir / "logs" / "agent.log").read_text()
    assert "token=***" in log and "agent done with ***" in log
    assert exec_run.live_image is not None
    assert layers_containing(engine, exec_run.live_image, SECRET.encode(), tmp_path) == []
    run = json.loads((exec_run.run_dir / "run.json").read_text())
    assert run["secret_env"] == ["SYNTH_TEST_SECRET"]
    assert run["agent"]["mounts"][0]["target"] == "/agent"


def test_exec_output_streams_masked_and_a_failed_agent_has_its_exit_code(
    engine: DockerEngine, env: dict[str, Any]
) -> None:
    settings: Settings = env["settings"]
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "run", str(env["task"].task_dir), "--agent", "exec",
         "--agent-env", "SYNTH_TEST_SECRET", "--json", "--artifacts",
         str(settings.artifacts_dir), "--",
         "bash", "-c", "printf 'streamed \\033[31m[/]%s\\n' $SYNTH_TEST_SECRET; exit 5"],
        capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
             "SYNTH_TEST_SECRET": SECRET},
    )
    assert proc.returncode == EXIT_AGENT_FAILED, proc.stderr
    assert "streamed [/]***" in proc.stderr  # on the terminal, masked, no escape codes
    assert SECRET not in proc.stderr + proc.stdout
    out = json.loads(proc.stdout)["result"]
    assert out["status"] == "failed"
    assert out["live_image"]
    listed = subprocess.run(
        [sys.executable, "-m", "synth", "runs", "list", "--json", "--artifacts",
         str(settings.artifacts_dir)], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    row = next(r for r in json.loads(listed.stdout)["result"]["runs"]
               if r["run_id"] == out["run_id"])
    assert row["agent"] == "exec:bash" and row["status"] == "failed"
    assert row["images"]["live"]["size"] > 10_000_000  # the engine answered
    engine.remove_image(out["live_image"])
    log = (Path(out["run_dir"]) / "logs" / "agent.log").read_text()
    assert "streamed \x1b[31m[/]***" in log  # the log keeps the bytes, masked


# ----------------------------------------------------------------- timeout
def test_timeout_keeps_records_and_says_timeout(
    engine: DockerEngine, env: dict[str, Any]
) -> None:
    script = env["root"] / "slow.sh"
    script.write_text("echo before-the-kill\nsleep 120\necho never\n")
    settings: Settings = env["settings"]
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "run", str(env["task"].task_dir), "--agent", "replay",
         "--script", str(script), "--timeout", "4", "--json",
         "--artifacts", str(settings.artifacts_dir)],
        capture_output=True, text=True, check=False, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.returncode == EXIT_AGENT_TIMEOUT, proc.stderr
    out = json.loads(proc.stdout)["result"]
    assert out["status"] == "timeout"
    run_dir = Path(out["run_dir"])
    if out.get("live_image"):
        engine.remove_image(out["live_image"])
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "timeout"
    hooks = {r["command"]: r for r in commands(run_dir, "bash-hook")}
    assert hooks["echo before-the-kill"]["exit"] == 0
    assert hooks["sleep 120"].get("incomplete") is True
    assert "echo never" not in hooks
    assert no_container_left(engine, run["run_id"])
    assert find_run(settings, "latest") == run_dir
    assert run_dir in list_runs(settings, "run-test")
    shown = subprocess.run(
        [sys.executable, "-m", "synth", "runs", "show", run["run_id"], "--json",
         "--artifacts", str(settings.artifacts_dir)],
        capture_output=True, text=True, check=True,
    )
    assert json.loads(shown.stdout)["result"]["run"]["status"] == "timeout"


# ------------------------------------------------------------- trace-exec
def test_trace_exec_records_execs_the_hook_cannot_see(
    engine: DockerEngine, env: dict[str, Any]
) -> None:
    if not shutil.which("strace"):
        pytest.skip("no strace on this host")
    script = env["root"] / "traced.sh"
    script.write_text('sh -c "echo from-dash >/dev/null"\n')
    result = _run(engine, env, RunOptions(task=env["task"], agent=ReplayAgent(script),
                                          timeout=300, trace_exec=True))
    assert result.status == "succeeded"
    traced = [r["argv"] for r in commands(result.run_dir, "exec-trace")]
    assert ["sh", "-c", "echo from-dash >/dev/null"] in traced
    assert no_container_left(engine, result.run_id)


# --------------------------------------------------------------- interrupt
def test_sigterm_interrupts_captures_and_cleans_up(
    engine: DockerEngine, env: dict[str, Any]
) -> None:
    script = env["root"] / "interrupted.sh"
    script.write_text("echo started >/dev/null\nsleep 120\n")
    settings: Settings = env["settings"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "synth", "run", str(env["task"].task_dir), "--script",
         str(script), "--json", "--artifacts", str(settings.artifacts_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "sleep 120" in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    out = json.loads(stdout)["result"]
    assert out["status"] == "interrupted"
    if out.get("live_image"):
        engine.remove_image(out["live_image"])
    run_dir = Path(out["run_dir"])
    run = json.loads((run_dir / "run.json").read_text())
    assert run["status"] == "interrupted"
    hooks = {r["command"]: r for r in commands(run_dir, "bash-hook")}
    assert hooks["echo started > /dev/null"]["exit"] == 0
    said = f"capture errors {run.get('capture_errors')}, synth said after the signal:\n{stderr}"
    assert (run_dir / "state" / "apt.json").is_file(), said
    assert no_container_left(engine, out["run_id"])


# ------------------------------------------------------------ engine error
def test_engine_error_mid_run_is_recorded_and_cleaned_up(
    engine: DockerEngine, env: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from synth.engine.docker import Container
    from synth.errors import EngineError

    real_exec = Container.exec

    def flaky_exec(self: Container, argv: Any, **kwargs: Any) -> Any:
        if "lost-connection" in " ".join(argv):
            raise EngineError("exec in container failed: connection reset by peer")
        return real_exec(self, argv, **kwargs)

    monkeypatch.setattr(Container, "exec", flaky_exec)
    script = env["root"] / "flaky.sh"
    script.write_text("echo ok >/dev/null\necho lost-connection\n")
    result = _run(engine, env, RunOptions(task=env["task"], agent=ReplayAgent(script),
                                          timeout=300))
    assert result.status == "error"
    run = json.loads((result.run_dir / "run.json").read_text())
    assert "connection reset" in run["error"]
    assert (result.run_dir / "state" / "python.json").is_file()
    assert [r["command"] for r in commands(result.run_dir, "bash-hook")] == ["echo ok > /dev/null"]
    assert no_container_left(engine, result.run_id)


# ----------------------------------------------------------- git URL repository
def test_git_repo_is_cloned_at_the_pinned_commit(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    """A task naming a git URL + commit runs on that commit's tree, not the branch head."""
    origin = tmp_path / "origin"
    origin.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            capture_output=True, text=True, check=True,
        ).stdout.strip()

    git("init", "-q")
    (origin / "model.py").write_text("VERSION = 'pinned'\n")
    git("add", "model.py")
    git("commit", "-q", "-m", "pinned")
    pinned = git("rev-parse", "HEAD")
    (origin / "model.py").write_text("VERSION = 'later'\n")
    git("commit", "-q", "-am", "later")

    task_dir = tmp_path / "task"
    task_dir.mkdir()
    (task_dir / "task.toml").write_text(
        'name = "git-test"\nbase_image = "synth/python:bookworm"\n'
        f'[repo]\nurl = "file://{origin}"\ncommit = "{pinned}"\n'
        '[not_applicable]\nC1 = "test"\nC3 = "test"\nC4 = "test"\n'
    )
    script = tmp_path / "look.sh"
    script.write_text("cat /workspace/model.py\n")
    settings = Settings.load(artifacts_dir=tmp_path / "artifacts")
    result = run_session(
        RunOptions(task=load_task(task_dir), agent=ReplayAgent(script), timeout=300),
        settings, engine, say=lambda _m: None)
    try:
        assert result.status == "succeeded"
        log = (result.run_dir / "logs" / "agent.log").read_text()
        assert "VERSION = 'pinned'" in log and "later" not in log
        run = json.loads((result.run_dir / "run.json").read_text())
        assert run["violations"] == []
    finally:
        if result.live_image:
            engine.remove_image(result.live_image)
    assert engine.managed_containers(f"synth.run={result.run_id}") == []
