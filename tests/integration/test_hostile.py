"""A hostile agent on a real engine: it reaches nothing on the host, and what it does is named.

One replay run plays every trick a root agent in the container can play on synth itself:
symlinks planted where synth reads, a forged and a truncated audit stream, installs outside
any audited installer, an import-path hijack, a setuid file, a statement killed with its
children left behind. Killing every process leaves the session container up. An exec
agent writes its secret to disk. A synth killed with -9 and a run cut by its timeout show
that sessions die cleanly and runs stay exportable on request.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.engine import Mount
from synth.engine.base import Engine
from synth.engine.docker import DockerEngine
from synth.errors import ExportError
from synth.export.artifact import ExportOptions, export_run
from synth.formats.task import Task, load_task
from synth.record.agents import ExecAgent, ReplayAgent
from synth.record.runner import RunOptions, RunResult, run_session

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hostile-secret-5e4d3c2b1a"
HOST_VICTIM = "synth hostile test: this host file must never change\n"

SLEEPERS = ("test \"$(for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; "
            "done | grep -c '^sleep 321')\" = 0")

FORGE = ("""echo '{"ev":"begin","shell":"forged","n":1,"pid":1,"""
         """"cmd":"pip install requests==2.31.0","cwd":"/","t":1.0}' """
         ">> /synth/audit/events.jsonl")
# A well-formed record, nested in the statement's own shell, claiming that shell ran the
# pip install an unaudited subprocess really made (the probe's forgery).
FORGED = ("t0=${{EPOCHREALTIME/,/.}}; /opt/venv/bin/python -c \"import subprocess; "
          "subprocess.run(['/opt/venv/bin/pip', 'install', '-q', 'tomli'], check=True)\"; "
          "t1=${{EPOCHREALTIME/,/.}}; __synth_n=$((__synth_n + 1)); __synth_emit "
          "\"{{\\\"ev\\\":\\\"begin\\\",\\\"shell\\\":\\\"$__synth_shell\\\","
          "\\\"n\\\":$__synth_n,\\\"pid\\\":$$,\\\"cmd\\\":"
          "\\\"/opt/venv/bin/pip install tomli\\\",\\\"cwd\\\":\\\"/workspace\\\","
          "\\\"t\\\":$t0}}\"; __synth_emit \"{{\\\"ev\\\":\\\"end\\\","
          "\\\"shell\\\":\\\"$__synth_shell\\\",\\\"n\\\":$__synth_n,"
          "\\\"t\\\":$t1,\\\"rc\\\":0,\\\"ps\\\":[0]}}\"")
SUBPROCESS_INSTALL = ("/opt/venv/bin/python -c \"import subprocess; subprocess.run("
                      "['/opt/venv/bin/pip', 'install', '-q', 'six'], check=True)\"")

HOSTILE = """\
python3 -m venv /opt/venv
ln -s {victim} /synth/audit/trace-1.txt
ln -s {victim} /synth/audit/planted
ln -s {victim} /synth/claims.json
{forge}
sleep 1
: > /synth/audit/events.jsonl
{subprocess_install}
echo 'export PYTHONPATH=/tmp/evil' >> /root/.bashrc
echo 'import os' > /opt/venv/lib/python3.11/site-packages/sitecustomize.py
cd /opt/venv/lib/python3.11/site-packages && echo "import os; os.environ['H'] = '1'" >> \
distutils-precedence.pth
echo 'import os  # hostile' >> /opt/venv/lib/python3.11/site-packages/six.py
echo /lib/x86_64-linux-gnu/libc.so.6 > /etc/ld.so.preload
cp /bin/true /usr/local/bin/rootme && chmod u+s /usr/local/bin/rootme
(sleep 321 &) ; kill -9 $$
setsid sh -c 'while :; do date +%s.%N >> /opt/daemon.txt; sleep 0.1; done' </dev/null \
>/dev/null 2>&1 &
{forged}
head -c 600M /dev/zero
{sleepers}
"""
#: What the host may grow by while the agent prints 600 MB on one line (a bounded exec
#: result and a log written in pieces); kept whole, it would take over 1.8 GB.
FLOOD_HOST_GROWTH = 400 << 20


def _task(root: Path) -> Task:
    repo = root / "repo"
    repo.mkdir(parents=True)
    (repo / "main.py").write_text("print('ok')\n")
    (root / "task.toml").write_text(
        'name = "hostile"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[not_applicable]\nC1 = "test"\nC3 = "test"\nC4 = "test"\n')
    return load_task(root)


@pytest.fixture(scope="module")
def world(
    engine: DockerEngine, base_image: str, ca_bundle: Path | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hostile")
    victim = root / "host-victim.txt"
    victim.write_text(HOST_VICTIM)
    os.utime(victim, (1_000_000_000, 1_000_000_000))
    settings = Settings.load(artifacts_dir=root / "artifacts", ca_bundle=ca_bundle)
    state: dict[str, Any] = {"root": root, "victim": victim, "settings": settings,
                             "task": _task(root / "task"), "images": []}
    yield state
    for ref in state["images"]:
        engine.remove_image(ref)


def _run(engine: DockerEngine, world: dict[str, Any], opts: RunOptions) -> RunResult:
    result = run_session(opts, world["settings"], engine, say=lambda _m: None)
    if result.live_image:
        world["images"].append(result.live_image)
    return result


@pytest.fixture(scope="module")
def hostile(engine: DockerEngine, world: dict[str, Any]) -> RunResult:
    script = world["root"] / "hostile.sh"
    script.write_text(HOSTILE.format(victim=world["victim"], sleepers=SLEEPERS, forge=FORGE,
                                     subprocess_install=SUBPROCESS_INSTALL,
                                     forged=FORGED.format()))
    with _peak_rss() as peak:
        result = _run(engine, world, RunOptions(task=world["task"], agent=ReplayAgent(script),
                                                timeout=600))
    world["host_growth"] = peak[0]
    return result


@contextmanager
def _peak_rss() -> Iterator[list[int]]:
    """The most this process's resident memory grew over its size at the start, sampled
    every 20 ms while the body runs."""
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * page

    start, peak, done = rss(), [0], threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], rss() - start)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield peak
    finally:
        done.set()
        sampler.join()


def _synth_records(result: RunResult) -> list[dict[str, Any]]:
    from synth.record.audit import load_audit

    _h, records = load_audit(result.run_dir / "audit.jsonl")
    return [r for r in records if r.get("source") == "synth" and r.get("phase") == "agent"]


def _run_json(result: RunResult) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((result.run_dir / "run.json").read_text())
    return data


def test_the_host_is_untouched(hostile: RunResult, world: dict[str, Any]) -> None:
    victim: Path = world["victim"]
    assert victim.read_text() == HOST_VICTIM
    assert victim.stat().st_mtime == 1_000_000_000
    for path in hostile.run_dir.rglob("*"):
        assert not path.is_symlink(), path
        if path.is_file():
            assert HOST_VICTIM.encode() not in path.read_bytes(), path
    assert not (hostile.run_dir / "logs" / "hook").exists()
    assert oct(hostile.run_dir.stat().st_mode & 0o777) == "0o700"
    assert oct((hostile.run_dir / "logs" / "events.jsonl").stat().st_mode & 0o777) == "0o600"


def test_a_flood_of_output_leaves_host_memory_bounded_and_the_log_whole(
        hostile: RunResult, world: dict[str, Any]) -> None:
    assert world["host_growth"] < FLOOD_HOST_GROWTH, world["host_growth"]
    log = hostile.run_dir / "logs" / "agent.log"
    assert log.stat().st_size > 600 << 20  # the whole line, written in pieces
    with log.open("rb") as fh:
        fh.seek(-(2 << 20), os.SEEK_END)
        assert b"\0" * (1 << 20) in fh.read()


def test_tampering_is_found_and_marks_the_audit_unverified(hostile: RunResult) -> None:
    run = _run_json(hostile)
    assert run["audit"]["verified"] is False
    findings = "\n".join(run["audit"]["findings"])
    assert "left planted in the audit folder: a symlink to" in findings
    assert "left trace-1.txt in the audit folder: a symlink to" in findings
    assert "dated outside the session" in findings
    assert "events.jsonl was truncated" in findings
    assert "shell 'forged', which never announced itself" in findings
    notes = "\n".join(run["audit"]["unconfirmed_notes"])
    assert ("record of `/opt/venv/bin/pip install tomli`" in notes
            and "matches no pip process synth saw running under the shell" in notes), notes
    assert run["audit"]["unconfirmed"], run["audit"]
    assert run["claims"]["status"] == "missing"  # a symlinked claims file is not read
    shown = subprocess.run(
        [sys.executable, "-m", "synth", "runs", "show", str(hostile.run_dir)],
        capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert "UNVERIFIED" in shown.stdout
    assert "unconfirmed the hook's record of `/opt/venv/bin/pip install tomli`" in shown.stdout


def test_a_daemon_left_running_is_listed_and_stopped_before_the_capture(
        hostile: RunResult) -> None:
    """A daemon the agent left writing is named and killed before `docker diff`: nothing
    changes between the diff and the commit of the live image (the probe's daemon edited
    files there, unlisted)."""
    run = _run_json(hostile)
    left = [p["command"] for p in run["leftover_processes"]]
    assert any("date +%s.%N >> /opt/daemon.txt" in c for c in left), left
    assert run["capture_errors"] == [], run["capture_errors"]
    times = json.loads((hostile.run_dir / "state" / "provenance.json").read_text())
    last_write = times["file_times"]["/opt/daemon.txt"]
    last_statement = max(r["end"] for r in _synth_records(hostile))
    assert last_write < last_statement + 1.0  # stopped at once, not during the capture


def test_a_killed_statement_takes_its_children(hostile: RunResult) -> None:
    from synth.record.audit import load_audit

    _h, records = load_audit(hostile.run_dir / "audit.jsonl")
    by_cmd = {r["command"]: r for r in records if r.get("source") == "synth"}
    assert by_cmd["(sleep 321 &) ; kill -9 $$"]["exit"] == 137
    assert by_cmd[SLEEPERS]["exit"] == 0, "a child of the killed statement outlived it"


def test_export_refuses_then_names_risks_and_unaudited_changes(
    hostile: RunResult, world: dict[str, Any], tmp_path: Path, engine: Engine
) -> None:
    settings: Settings = world["settings"]
    with pytest.raises(ExportError, match="not a run synth can vouch for"):
        export_run(ExportOptions(hostile.run_dir, out_dir=tmp_path / "refused"), settings, engine)
    assert not (tmp_path / "refused").exists()
    art = export_run(ExportOptions(
        hostile.run_dir, out_dir=tmp_path / "art", allow_incomplete=True),
        settings, engine).artifact_dir
    report = json.loads((art / "export-report.json").read_text())
    assert any("audit log is unverified" in w for w in report["incomplete"])
    risks = "\n".join(report["risks"])
    assert "ENV PYTHONPATH=/tmp/evil" in risks
    assert "ENV PYTHONPATH points into /tmp/evil, which export does not carry" in risks
    assert "sitecustomize.py: runs at every Python start" in risks
    assert "/usr/local/bin/rootme: setuid/setgid file added by the agent" in risks
    # Code-loading changes by name: an installed .pth changed after install, a patched
    # module the artifact carries, the dynamic linker's preload list.
    assert "distutils-precedence.pth: a .pth file of setuptools changed after install" in risks
    assert "six.py: code of six changed after install" in risks
    assert "/etc/ld.so.preload: loads /lib/x86_64-linux-gnu/libc.so.6 into every process" \
        in risks
    unaudited = "\n".join(report["unaudited"])
    assert "distribution six" in unaudited and "no audited Python installer ran" in unaudited
    # The forged record explains nothing: tomli's install stays unaudited.
    assert "distribution tomli" in unaudited, unaudited
    assert "six==" in (art / "requirements.lock").read_text()  # the lock follows the state
    md = (art / "export-report.md").read_text()
    assert md.index("NOT A TRUSTWORTHY RUN") < md.index("## Risks") < md.index("## Unaudited")


AGENT = """\
import base64, gzip, os, subprocess
key = os.environ["HOSTILE_TOKEN"]
open("/root/token.txt", "w").write(key)
open("/root/token.b64", "w").write(base64.b64encode(key.encode()).decode())
open("/root/token.hex", "w").write(key.encode().hex().upper())
open("/root/token.gz", "wb").write(gzip.compress(key.encode()))
open("/root/app.log", "wb").write(b"started\\n" + gzip.compress(key.encode().hex().encode()))
print("leaking", base64.b64encode(key.encode()).decode())
subprocess.run(["bash", "-c", "true"], check=True)
"""


def test_secrets_written_by_the_agent_are_found_before_the_image_is_tagged(
    engine: DockerEngine, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = world["root"] / "agent"
    agent_dir.mkdir()
    (agent_dir / "agent.py").write_text(AGENT)
    monkeypatch.setenv("HOSTILE_TOKEN", SECRET)
    agent = ExecAgent(["python3", "/agent/agent.py"], [Mount(agent_dir, "/agent")],
                      ["HOSTILE_TOKEN"])
    result = _run(engine, world, RunOptions(task=world["task"], agent=agent, timeout=300))
    assert result.status == "succeeded"
    run = _run_json(result)
    assert run["secret_findings"] == ["/root/app.log", "/root/token.b64", "/root/token.gz",
                                      "/root/token.hex", "/root/token.txt"]
    assert run["live_image"]["shareable"] is False
    assert result.live_image is not None
    labels = engine.image_inspect(result.live_image)["Config"]["Labels"]
    assert labels["synth.shareable"] == "false"
    encoded = base64.b64encode(SECRET.encode())
    for path in result.run_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert SECRET.encode() not in data and encoded not in data, path
    assert "leaking ***" in (result.run_dir / "logs" / "agent.log").read_text()


def _synth(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "synth", *args], text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw)


def test_a_synth_killed_with_sigkill_leaves_no_running_container(
    engine: DockerEngine, world: dict[str, Any]
) -> None:
    """kill -9 of synth, after the agent replaced the tools the in-container lease loop
    calls: the watchdog (a host process of its own) stops the container at once."""
    settings: Settings = world["settings"]
    script = world["root"] / "long.sh"
    # The agent defeats the lease loop inside the container: every tool it calls, on PATH
    # and at its own path, now says the lease was renewed this second. Only the host-side
    # watchdog can stop this container once synth is gone.
    script.write_text(
        "printf '#!/bin/sh\\nexec /bin/date +%%s\\n' > /tmp/fresh && chmod +x /tmp/fresh\n"
        "for t in stat date; do cp /tmp/fresh /usr/local/bin/$t; done\n"
        "cp /tmp/fresh /usr/bin/stat\n"
        "echo started\nsleep 600\n")
    proc = _synth("run", str(world["task"].task_dir), "--script", str(script),
                  "--artifacts", str(settings.artifacts_dir), stdout=subprocess.DEVNULL,
                  stderr=subprocess.PIPE)
    assert proc.stderr is not None
    for line in proc.stderr:
        if "sleep 600" in line:
            break
    time.sleep(2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    from synth.record.rundir import list_runs, summarize

    run_dir = list_runs(settings, "hostile")[-1]
    run_id = run_dir.name
    assert summarize(run_dir)["status"] == "abandoned"
    deadline = time.time() + 90
    while time.time() < deadline:
        running = [c for c in engine.managed_containers(f"synth.run={run_id}")
                   if c.status == "running"]
        if not running:
            break
        time.sleep(2)
        for c in running:
            c.reload()
    assert not running, "the session container outlived synth's lease"
    removed = engine.gc(label=f"synth.run={run_id}",
                        scope=str(settings.artifacts_dir.resolve()))
    assert any(r.startswith("container synth-run-hostile-") for r in removed)


def test_killing_every_process_does_not_end_the_session_container(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    """``kill -KILL -1`` spares the container's main process (pid 1), not the readings of
    the lease it forks: an agent that kills every process for seconds, as synth's own
    stop does once, must leave the session container running while its lease is fresh."""
    from synth.engine.base import ContainerSpec
    from synth.record.lease import LEASE_DIR, lease_command

    folder = tmp_path / "lease"
    folder.mkdir()
    (folder / "lease").touch()
    spec = ContainerSpec(image=base_image, network=False, command=lease_command(),
                         mounts=[Mount(folder, LEASE_DIR)])
    killer = ("end=$((SECONDS + 6)); n=0; while [ $SECONDS -lt $end ]; do "
              "kill -KILL -1 2>/dev/null; n=$((n + 1)); done; echo $n")
    with engine.container(spec) as c:
        res = c.exec(["bash", "-c", killer])
        (folder / "lease").touch()
        time.sleep(1)
        c.raw.reload()
        assert c.raw.status == "running", f"the container stopped: {res.exit_code} {res.output}"
        assert res.exit_code == 0 and int(res.stdout) > 1000  # the barrage really ran


def test_a_timed_out_run_is_captured_and_exports_only_on_request(
    engine: DockerEngine, world: dict[str, Any], tmp_path: Path
) -> None:
    settings: Settings = world["settings"]
    script = world["root"] / "slow.sh"
    script.write_text("python3 -m venv /opt/venv\nsleep 300\n")
    result = _run(engine, world, RunOptions(task=world["task"], agent=ReplayAgent(script),
                                            timeout=8))
    assert result.status == "timeout"
    run = _run_json(result)
    assert run["capture_errors"] == []
    assert (result.run_dir / "state" / "python.json").is_file()
    with pytest.raises(ExportError, match="ended `timeout`"):
        export_run(ExportOptions(result.run_dir, out_dir=tmp_path / "a"), settings, engine)
    art = export_run(ExportOptions(
        result.run_dir, out_dir=tmp_path / "a", allow_incomplete=True),
        settings, engine).artifact_dir
    assert "the run ended `timeout`" in (art / "export-report.md").read_text()


def test_a_fork_bomb_and_a_memory_hog_end_their_own_statements(
    engine: DockerEngine, world: dict[str, Any], tmp_path: Path
) -> None:
    """The task's [limits] hold: the memory hog is OOM-killed and the fork bomb runs out of
    processes inside the container; the session goes on, and run.json and `runs show` name
    each statement the kernel stopped."""
    from synth.record.rundir import describe_run, format_run

    task_dir = tmp_path / "task"
    (task_dir / "repo").mkdir(parents=True)
    (task_dir / "repo" / "main.py").write_text("print('ok')\n")
    (task_dir / "task.toml").write_text(
        'name = "limited"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[limits]\nmemory = "256m"\npids = 200\n'
        '[not_applicable]\nC1 = "test"\nC3 = "test"\nC4 = "test"\n')
    script = tmp_path / "greedy.sh"
    script.write_text(
        "python3 -c 'x = bytearray(2 * 1024 ** 3); print(len(x))'\n"
        "for i in $(seq 1000); do sleep 3 & done; wait\n"
        "echo still-alive > /tmp/alive\n")
    result = _run(engine, world, RunOptions(task=load_task(task_dir), agent=ReplayAgent(script),
                                            timeout=300))
    run = _run_json(result)
    assert run["limits"]["memory"] == 256 << 20 and run["limits"]["pids"] == 200
    hits = {(h["kind"], h["command"].split()[0]) for h in run["limit_hits"]}
    assert ("memory", "python3") in hits, run["limit_hits"]
    assert ("pids", "for") in hits, run["limit_hits"]
    assert result.status == "succeeded"  # the last statement ran: the session went on
    shown = format_run(describe_run(result.run_dir))
    assert "LIMIT HIT  memory limit (OOM kill)" in shown
    assert "LIMIT HIT  process limit (fork refused)" in shown


def _filling(engine: DockerEngine, world: dict[str, Any], path: str
             ) -> tuple[RunResult, dict[str, Any]]:
    """A run whose agent appends 50 MB at a time to ``path``, up to 2 GB, then says
    ``after-the-fill``: stopped on the way, it ends ``error``."""
    script = world["root"] / f"fill-{path.replace('/', '-')}.sh"
    script.write_text(f"for i in $(seq 40); do head -c 50M /dev/zero >> {path}; "
                      "sleep 0.2; done\necho after-the-fill\n")
    result = _run(engine, world, RunOptions(task=world["task"], agent=ReplayAgent(script),
                                            timeout=600))
    run = _run_json(result)
    assert result.status == "error", run
    return result, run


def test_filling_the_audit_folder_on_the_host_stops_the_session(
    engine: DockerEngine, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's folder is the host's disk, under no quota: past its budget (cut to
    256 MiB here) the agent is stopped, the run says why and its audit is unverified."""
    monkeypatch.setattr("synth.record.collector.MAX_FOLDER_BYTES", 256 << 20)
    result, run = _filling(engine, world, "/synth/audit/fill")
    assert run["error"].startswith("the agent wrote ") and "MiB (at most 256.0 MiB is " \
        "allowed there) into the audit folder /synth/audit, which lies on the host's disk: " \
        "the session was stopped" in run["error"]
    assert run["audit"]["verified"] is False and run["error"] in run["audit"]["findings"]
    assert "after-the-fill" not in (result.run_dir / "logs" / "agent.log").read_text()
    assert not (result.run_dir / "logs" / "hook").exists()  # drained and removed


def test_filling_the_engine_s_disk_stops_the_session(
    engine: DockerEngine, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the storage driver cannot cap a container's layer, an agent writing into its
    container would fill the host's disk: synth watches the free space of the engine's
    data root and stops the agent at its reserve (set here to 300 MiB below what is free
    now, so that the test writes little)."""
    from synth.engine import disk_budget

    root = disk_budget.engine_data_root(engine)
    if root is None or not root.is_dir():
        pytest.skip("the engine's data root is not on this host")
    free = shutil.disk_usage(root).free
    monkeypatch.setattr("synth.engine.disk_budget.SESSION_RESERVE", free - (300 << 20))
    result, run = _filling(engine, world, "/var/tmp/fill")
    assert run["error"].startswith(f"the file system of the engine's data root {root} has ")
    assert ": the agent was stopped before that disk filled" in run["error"]
    # Nor is the live image committed: that would write the layer again, past the reserve.
    assert "Not enough disk space to commit the live image" in run["error"]
    assert run["live_image"] is None
    assert run["error"] not in run["audit"]["findings"]  # not the audit's tampering
    assert "after-the-fill" not in (result.run_dir / "logs" / "agent.log").read_text()


def test_a_live_image_that_would_fill_the_engine_s_disk_is_not_committed(
    engine: DockerEngine, world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit writes the container's layer again: one that would leave less than the
    reserve free is refused before it starts (the watch during the session is off here,
    the reserve set to 100 MiB below what is free, the agent writing 200 MiB)."""
    from synth.engine import disk_budget

    root = disk_budget.engine_data_root(engine)
    if root is None or not root.is_dir():
        pytest.skip("the engine's data root is not on this host")
    monkeypatch.setattr("synth.engine.disk_budget.below_reserve", lambda *_a, **_k: None)
    monkeypatch.setattr("synth.engine.disk_budget.SESSION_RESERVE",
                        shutil.disk_usage(root).free - (100 << 20))
    script = world["root"] / "big-layer.sh"
    script.write_text("head -c 200M /dev/zero > /var/tmp/big\n")
    result = _run(engine, world, RunOptions(task=world["task"], agent=ReplayAgent(script),
                                            timeout=600))
    run = _run_json(result)
    assert result.status == "error" and run["live_image"] is None, run
    assert run["error"].startswith("Not enough disk space to commit the live image: the "
                                   "container's layer holds 20"), run["error"]
    assert f"MiB and the file system of the engine's data root {root} has " in run["error"]
