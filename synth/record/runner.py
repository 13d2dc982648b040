"""The life of one session: container up, agent works, state captured, container gone.

Every way out — success, failure, timeout, Ctrl-C, an engine error — ends the same way:
the final state is captured as far as the container allows, raw hook events are merged
into ``audit.jsonl``, ``run.json`` says how the run ended, and the container is removed
(unless ``keep``). ``run.json`` is first written with status ``running`` so that even a
synth killed outright leaves a run directory that says so.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import subprocess
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from synth import __version__, profiles
from synth.config import CONTAINER_CA_PATH, CONTAINER_WHEELHOUSE, Settings, ca_env
from synth.engine import disk_budget
from synth.engine.base import ContainerSpec, Engine, Mount
from synth.engine.base_images import ensure_base_image
from synth.errors import DiskFullError, EngineError, RunError, SynthError
from synth.formats.claims import CONTAINER_CLAIMS
from synth.formats.limits import Limits
from synth.formats.store import RunDir
from synth.formats.task import Task
from synth.record import claims as claims_mod
from synth.record import secrets, snapshot, tool_edits, trace, tree
from synth.record.agents import (
    CONTAINER_AUDIT_DIR,
    CONTAINER_AUDIT_FILE,
    CONTAINER_DOWNLOAD_CACHE,
    CONTAINER_HOOK,
    CONTAINER_HOOK_DIR,
    WORKDIR,
    Agent,
    AgentContext,
    AgentLog,
    first_line,
    secret_values,
)
from synth.record.audit import (
    Masker,
    SynthCommand,
    audit_findings,
    merge_audit,
    parse_raw_events,
    read_raw_events,
    write_audit,
)
from synth.record.claims import ClaimsCheck
from synth.record.collector import (
    HookCollector,
    drain_folder,
    folder_usage,
)
from synth.record.lease import LEASE_DIR, Lease, lease_command
from synth.record.processes import ProcessSampler, unconfirmed_installers, write_processes
from synth.record.recorder import RecordingContainer
from synth.record.rundir import RUN_FORMAT, iso, new_run_id
from synth.record.watchdog import Watchdog
from synth.ui import console
from synth.util.atomic import write_json
from synth.util.disk import disk_full_as_error, disk_full_error, from_os_error, is_disk_full

Say = Callable[[str], None]
#: Bytes a run directory holds back so that its last run.json fits on a full disk.
RESERVE_BYTES = 64 * 1024
Container = RecordingContainer


@dataclass(frozen=True)
class RunOptions:
    """One ``synth run``: the task, the agent and how the session is run."""

    task: Task
    agent: Agent
    #: Seconds the agent may work before the container is killed (status ``timeout``).
    timeout: float = 3600
    #: Keep the session container after the run (for inspection); it is named in run.json.
    keep: bool = False
    #: Record the complete exec tree with the host's strace (see synth.record.trace).
    trace_exec: bool = False
    #: Resource limits from the command line; over the task's ``[limits]``, over the
    #: host's defaults (:mod:`synth.formats.limits`).
    limits: Limits = field(default_factory=Limits)
    #: A host folder of pip and uv download caches shared with other sessions (``synth
    #: bench``: the cells of one agent), mounted read-write at ``CONTAINER_DOWNLOAD_CACHE``; the
    #: agent's exec environment names it (``PIP_CACHE_DIR``, ``UV_CACHE_DIR``), never the
    #: container's, so nothing of it reaches the image or the artifact.
    download_cache: Path | None = None

    def effective_limits(self) -> Limits:
        return self.limits.over(self.task.limits.limits()).over(Limits.host_default())


@dataclass(frozen=True)
class RunResult:
    run_id: str
    run_dir: Path
    status: str
    agent_exit_code: int | None
    live_image: str | None
    violations: list[dict[str, Any]] = field(default_factory=list)
    #: A file system synth wrote to was full (run.json's ``error`` says which).
    disk_full: bool = False

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "run_dir": str(self.run_dir), "status": self.status,
                "agent_exit_code": self.agent_exit_code, "live_image": self.live_image,
                "violations": self.violations}


def hook_dir() -> Path:
    """The package folder holding the hook; mounted whole (a file mount keeps a stale inode)."""
    path = Path(str(resources.files("synth.record") / "hook"))
    if not (path / "audit_hook.sh").is_file():
        raise RunError(f"The audit hook is missing from {path}; synth is installed incompletely.")
    return path


def live_image_ref(task: str, run_id: str) -> str:
    return f"synth-live/{task}:{run_id}"


class _Session:
    """The state of one run while it happens; :func:`run_session` drives it."""

    def __init__(self, opts: RunOptions, settings: Settings, engine: Engine, say: Say) -> None:
        self.opts = opts
        self.settings = settings
        self.engine = engine
        self.say = say
        self.task = opts.task
        self.run_id = new_run_id()
        self.run_dir = settings.runs_dir / self.task.name / self.run_id
        self.secrets = secret_values(opts.agent.secret_names())
        self.masker = Masker(self.secrets.values())
        self.started_ts = time.time()
        self.commands: list[SynthCommand] = []
        self.cancelled = threading.Event()
        self.timed_out = threading.Event()
        #: Why the session was stopped for what the agent wrote: past the hook folder's
        #: budget, or into the engine's last free space.
        self.stopped_for: str | None = None
        #: The engine's data root, where its file system is this host's to watch.
        self.data_root: Path | None = None
        self.container: Container | None = None
        self.watchdog: Watchdog | None = None
        self.sampler = ProcessSampler(None)
        self.log: AgentLog | None = None
        self.exit_code: int | None = None
        self.strace_dir: Path | None = None
        self.tracer: trace.Tracer | None = None
        self.capture_errors: list[str] = []
        #: The first write that found a file system full; the run ends with it.
        self.disk_full: DiskFullError | None = None
        logs = self.run_dir / "logs"
        self.collector = HookCollector(logs / "hook" / "events.jsonl", logs / "events.jsonl",
                                       self.masker)
        self.lease = Lease(logs / "lease")
        self._stop_polling = threading.Event()
        self._poller: threading.Thread | None = None
        # What the container held before the agent started (read in the container).
        self.base_dpkg: snapshot.DpkgSnapshot | None = None
        self.base_env: dict[str, str] | None = None
        self.base_setuid: list[str] | None = None
        #: The final mtimes of the changed files (state/provenance.json), and the records
        #: of audit.jsonl: what tells a project tool's own edits from the agent's.
        self.file_times: dict[str, float] = {}
        self.audit_records: list[dict[str, Any]] = []
        self.record: dict[str, Any] = self._initial_record()

    def _initial_record(self) -> dict[str, Any]:
        """run.json as first written (status ``running``), before anything happens."""
        opts = self.opts
        return {
            "format": RUN_FORMAT,
            "run_id": self.run_id,
            "synth_version": __version__,
            "task": {"name": self.task.name, "task_file": str(self.task.task_file)},
            "agent": opts.agent.describe(),
            "base_image": {"ref": self.task.base_image, "id": None, "labels": {}},
            "started": iso(self.started_ts),
            "ended": None,
            "status": "running",
            "agent_exit_code": None,
            "timeout": opts.timeout,
            "source_tree": None,
            "violations": [],
            "claims": {"status": "missing", "errors": []},
            "live_image": None,
            "container": None,
            "kept": opts.keep,
            "wheelhouse": str(self.settings.wheelhouse) if self.settings.wheelhouse else None,
            "ca_bundle": self.settings.ca_bundle is not None,
            "secret_env": sorted(self.secrets),
            "trace_exec": opts.trace_exec,
            "limits": {**opts.effective_limits().to_json(), "disk_enforced": False},
            "limit_hits": [],
            "capture_errors": self.capture_errors,
            "error": None,
            "owner": {"pid": os.getpid(), "host": socket.gethostname()},
            "audit": {"verified": None, "findings": []},
            "secret_findings": [],
        }

    # ------------------------------------------------------------------ paths
    @property
    def raw_events_path(self) -> Path:
        """The container-writable stream: read only through the collector."""
        return self.collector.source

    def write_record(self) -> None:
        write_json(self.run_dir / "run.json", self.masker.mask_json(self.record))

    # ------------------------------------------------------------------ setup
    def mounts(self) -> list[Mount]:
        s = self.settings
        hook_host = self.run_dir / "logs" / "hook"
        mounts = [
            Mount(hook_dir(), CONTAINER_HOOK_DIR, read_only=True),
            Mount(hook_host, CONTAINER_AUDIT_DIR, read_only=False),
        ]
        if not self.opts.keep:
            mounts.append(Mount(self.lease.folder, LEASE_DIR, read_only=True))
        if s.ca_bundle is not None:
            mounts.append(Mount(s.ca_bundle, CONTAINER_CA_PATH, read_only=True))
        if s.wheelhouse is not None:
            mounts.append(Mount(s.wheelhouse, CONTAINER_WHEELHOUSE, read_only=True))
        if self.opts.download_cache is not None:
            mounts.append(Mount(self.opts.download_cache, CONTAINER_DOWNLOAD_CACHE,
                                read_only=False))
        if self.opts.trace_exec:
            self.strace_dir = Path(tempfile.mkdtemp(prefix="synth-strace-"))
            trace.bundle_strace(self.strace_dir)
            mounts.append(Mount(self.strace_dir, trace.CONTAINER_TRACE_DIR, read_only=True))
            self.tracer = trace.Tracer(CONTAINER_AUDIT_DIR)
        mounts += self.opts.agent.agent_mounts()
        for m in mounts:
            if not m.source.exists():
                raise RunError(f"Cannot mount {m.source} at {m.target}: it does not exist.",
                               run_dir=self.run_dir)
        return mounts

    def exec_env(self) -> dict[str, str]:
        """The agent's exec environment (never the container's, so never committed)."""
        env = {
            "BASH_ENV": CONTAINER_HOOK,
            "SYNTH_AUDIT_FILE": CONTAINER_AUDIT_FILE,
            "SYNTH_SESSION": self.run_id,
            "SYNTH_CLAIMS": CONTAINER_CLAIMS,
            "SYNTH_SECRET_NAMES": " ".join(sorted(self.secrets)),
        }
        if self.settings.ca_bundle is not None:
            env.update(ca_env())
        if self.settings.wheelhouse is not None:
            env["SYNTH_WHEELHOUSE"] = CONTAINER_WHEELHOUSE
        if self.opts.download_cache is not None:
            env.update(PIP_CACHE_DIR=f"{CONTAINER_DOWNLOAD_CACHE}/pip",
                       UV_CACHE_DIR=f"{CONTAINER_DOWNLOAD_CACHE}/uv")
        env.update(self.secrets)
        return env

    @property
    def reserve_path(self) -> Path:
        """Space held back for the last run.json: freed when a file system fills up."""
        return self.run_dir / "logs" / ".reserve"

    def make_run_dir(self) -> None:
        """The run directory with run.json saying ``running`` (no engine yet)."""
        # The run directory is synth's alone (0700); inside it only logs/hook/ is shared
        # with the container, world-writable so an agent that drops root can still append.
        with disk_full_as_error(self.run_dir):
            self.run_dir.mkdir(parents=True, mode=0o700)
            self.run_dir.chmod(0o700)
            (self.run_dir / "logs").mkdir(mode=0o700)
            self.reserve_path.write_bytes(bytes(RESERVE_BYTES))
            hook_host = self.collector.source.parent
            hook_host.mkdir()
            hook_host.chmod(0o777)
            self.collector.start()
            self.lease.start()
            (self.run_dir / "state").mkdir(mode=0o700)
        self.write_record()

    def start(self) -> Container:
        self.make_run_dir()
        ensure_base_image(self.engine, self.task.base_image, say=self.say)
        info = self.engine.image_inspect(self.task.base_image)
        self.record["base_image"] = {
            "ref": self.task.base_image, "id": info.get("Id"),
            "labels": dict((info.get("Config") or {}).get("Labels") or {}),
            # What the base is made of, for artifacts that must find or recreate it.
            "rootfs": list((info.get("RootFS") or {}).get("Layers") or []),
            "repo_digests": sorted(info.get("RepoDigests") or []),
        }
        spec = ContainerSpec(
            image=self.task.base_image,
            labels={"synth.run": self.run_id, "synth.kind": "session",
                    "synth.task": self.task.name,
                    "synth.artifacts": str(self.settings.artifacts_dir.resolve())},
            mounts=self.mounts(),
            workdir=WORKDIR,
            name=f"synth-run-{self.task.name}-{self.run_id}",
            limits=self.opts.effective_limits(),
            # Without --keep the container lives only while synth renews its lease.
            command=("sleep", "infinity") if self.opts.keep else lease_command(),
        )
        self.say(f"Run {self.task.name}/{self.run_id}: starting a session container "
                 f"from {self.task.base_image}")
        self.container = RecordingContainer(self.engine.create(spec), self.commands,
                                            default_cwd=WORKDIR)
        self.record["limits"]["disk_enforced"] = (
            spec.limits.disk is not None and self.engine.disk_limits_supported())
        if self.settings.disk_check:
            self.data_root = disk_budget.engine_data_root(self.engine)
        self.record["limit_hits"] = self.container.limit_hits
        # From here on a host process of its own stops the container if synth goes away,
        # and synth watches its processes from the host.
        self.watchdog = Watchdog(self.container.name)
        self.watchdog.start()
        self.sampler = ProcessSampler.for_pid(self.container.main_pid())
        self.sampler.start()
        self.record["container"] = self.container.name
        self.write_record()
        self._poller = threading.Thread(target=self.poll_stream, daemon=True)
        self._poller.start()
        return self.container

    def copy_repo(self, c: Container) -> None:
        with self._repo_source() as src:
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                tar.add(src, arcname="workspace", filter=_root_owned)
            c.exec(["rm", "-rf", WORKDIR])
            c.put_archive("/", buf.getvalue())

    @contextmanager
    def _repo_source(self) -> Iterator[Path]:
        path = self.task.repo_path
        if path is not None:
            yield path
            return
        url, commit = self.task.repo.url, self.task.repo.commit
        assert url is not None and commit is not None  # the task model guarantees it
        with tempfile.TemporaryDirectory(prefix="synth-repo-") as tmp:
            self.say(f"Cloning {url} at {commit[:12]}")
            for argv in (["git", "clone", "--quiet", "--", url, tmp],
                         ["git", "-C", tmp, "checkout", "--quiet", commit]):
                proc = subprocess.run(argv, capture_output=True, text=True, check=False)
                if proc.returncode != 0:
                    raise RunError(f"`{' '.join(argv)}` failed: {proc.stderr.strip()[-400:]}",
                                   hint="Is the URL reachable and the commit in it?",
                                   run_dir=self.run_dir)
            yield Path(tmp)

    @staticmethod
    def workspace_entries(c: Container) -> dict[str, tree.TreeEntry]:
        """The working tree's entries; none where the agent removed it. A container that is
        gone (removed from outside) raises: its files are unknown, not deleted."""
        data = c.get_archive(WORKDIR)
        if data is None:
            c.labels()  # an EngineError where the container itself is gone
            return {}
        return tree.entries_from_tar(data)

    # ---------------------------------------------------------------- capture
    def guarded(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run one capture step; its failure is recorded, the others still run."""
        try:
            return fn()
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # every capture step is best effort
            msg = f"{what}: {self.note_disk_full(exc).message if is_disk_full(exc) else exc}"
            self.capture_errors.append(self.masker.mask(msg))
            self.say(f"warning: could not capture {msg}")
            return None

    def note_disk_full(self, exc: BaseException) -> DiskFullError:
        """Remember the first full file system the run met; returns ``exc`` as that error."""
        err = as_disk_full(exc)
        if self.disk_full is None:
            self.disk_full = err
            self.say(f"error: {err.message}")
        return err

    def capture(self, c: Container, before: Any) -> None:
        """Capture the final state; each step's failure is recorded and the others run."""
        self.say("Capturing the final state")
        self.guarded("container restart", c.ensure_running)
        # Nothing of the agent's may still run while the state is read: what it left
        # running (a daemon) is listed, then stopped.
        self.record["leftover_processes"] = self.guarded(
            "leftover processes", lambda: stop_leftovers(c, self.masker)) or []
        changes = self.guarded("docker diff", c.diff) or []
        write_json(self.run_dir / "state" / "diff.json",
                   self.masker.mask_json(snapshot.classify_diff(changes)))
        hits = self.guarded("secret scan", lambda: self.scan_secrets(c, changes)) or []
        self.record["secret_findings"] = hits
        self.commit_live(c, hits)
        check = self.capture_claims(c)
        self.capture_tree(c, before)
        apt = self.capture_apt(c)
        interpreters = self.capture_python(c, {p for k, p in changes if k == "A"}, check)
        provenance = self.guarded("change times", lambda: snapshot.provenance_state(
            c, changes, apt, interpreters, self.base_setuid))
        if provenance is not None:
            write_json(self.run_dir / "state" / "provenance.json",
                       self.masker.mask_json(provenance))
            self.file_times = dict(provenance.get("file_times") or {})
        env_final = self.guarded("environment files", lambda: snapshot.read_env_files(c))
        if env_final is not None and self.base_env is not None:
            write_json(self.run_dir / "state" / "env.json",
                       self.masker.mask_json(snapshot.env_state(self.base_env, env_final)))

    def commit_live(self, c: Container, hits: list[str]) -> None:
        """Commit the container as the live image (not shareable if it holds a secret)."""
        ref = live_image_ref(self.task.name, self.run_id)
        # Recorded before it exists: an interrupted commit leaves a tag run.json names.
        self.record["live_image"] = {"ref": ref, "id": None, "shareable": not hits}
        self.write_record()
        labels = {"synth.run": self.run_id, "synth.kind": "live",
                  "synth.task": self.task.name,
                  "synth.artifacts": str(self.settings.artifacts_dir.resolve())}
        if hits:
            labels["synth.shareable"] = "false"
        def commit() -> str:
            if self.data_root is not None:
                disk_budget.check_commit_room(self.data_root, c.layer_size())
            return c.commit(ref, labels=labels)

        image_id = self.guarded("live image commit", commit)
        if image_id:
            self.record["live_image"]["id"] = image_id
        else:
            self.record["live_image"] = None

    def capture_claims(self, c: Container) -> ClaimsCheck:
        profile = profiles.for_task(self.task.task_dir)
        # Every installed plug-in's report path is read where synth's own is absent (an
        # agent used to ResearchEnvBench writes its report there, whatever the task).
        others = tuple(p for plugin in profiles.plugins() for p in plugin.claims_paths())
        raw_claims = self.guarded("claims", lambda: claims_mod.read_claims(
            c, (CONTAINER_CLAIMS, *others)))
        check = claims_mod.check_claims(raw_claims, profile.claims_errors)
        if raw_claims is not None and len(raw_claims) <= claims_mod.MAX_CLAIMS_BYTES:
            (self.run_dir / "claims.json").write_bytes(self.masker.mask_bytes(raw_claims))
        self.record["claims"] = check.to_json()
        return check

    def capture_tree(self, c: Container, before: Any) -> None:
        """Compare /workspace with the repository as copied in: changes are violations
        (said once the audit is written: a project tool's own edits are not,
        :meth:`settle_violations`)."""
        after = self.guarded("source tree", lambda: self.workspace_entries(c))
        if before is None or after is None:
            return
        changed = tree.compare_trees(before, after)
        self.record["source_tree"] = {
            "before": tree.tree_hash(before), "after": tree.tree_hash(after),
            "changed": [ch.to_json() for ch in changed],
        }
        self.record["violations"] = tree.violations(changed)

    def capture_apt(self, c: Container) -> dict[str, Any] | None:
        final = self.guarded("dpkg packages", lambda: snapshot.dpkg_snapshot(c))
        if final is None or self.base_dpkg is None:
            return None
        base_pkgs = self.base_dpkg.packages
        debs = self.guarded("apt .deb hashes", lambda: snapshot.deb_records(
            c, snapshot.apt_pins(base_pkgs, final.packages)))
        apt = snapshot.apt_state(
            base_pkgs, final.packages, self.base_dpkg.manual, final.manual, debs)
        write_json(self.run_dir / "state" / "apt.json", apt)
        return apt

    def capture_python(self, c: Container, added: set[str], check: ClaimsCheck
                       ) -> list[dict[str, Any]] | None:
        found: tuple[list[dict[str, Any]], list[str]] | None = self.guarded(
            "python interpreters", lambda: snapshot.python_interpreters(c, added))
        if found is None:
            return None
        interpreters, errors = found
        claimed = (check.claims or {}).get("python_path") if check.status == "valid" else None
        write_json(self.run_dir / "state" / "python.json", self.masker.mask_json(
            snapshot.python_state(interpreters, claimed, errors)))
        return interpreters

    # ------------------------------------------------------------ the session
    def run_agent(self, c: Container, log: AgentLog) -> int:
        ctx = AgentContext(
            container=c, env=self.exec_env(), log=log, say=self.say, cancelled=self.cancelled,
            docker_cli=self.settings.docker_cli,
            wrap=self.tracer.wrap if self.tracer is not None else None, task=self.task,
        )

        def on_timeout() -> None:
            self.timed_out.set()
            self.cancelled.set()
            stop_agent(c)

        timer = threading.Timer(self.opts.timeout, on_timeout)
        timer.daemon = True
        timer.start()
        try:
            return self.opts.agent.run(ctx)
        finally:
            timer.cancel()

    def poll_stream(self) -> None:
        """While the session lasts: renew the lease, take the hook's new lines host-side
        and, for an exec agent, show each top-level ``bash -c`` as it starts."""
        top: set[str] = set()
        show = self.opts.agent.kind == "exec"
        polls = 0
        while not self._stop_polling.wait(0.3):
            self.lease.renew()
            polls += 1
            if polls % 3 == 0 and self.stopped_for is None:
                self.check_audit_folder()
                self.check_engine_disk()
            try:
                new = self.collector.poll()
            except DiskFullError as exc:
                self.note_disk_full(exc)
                continue
            except OSError as exc:
                self.collector.findings.append(f"reading the hook stream failed: {exc}")
                continue
            if show and new:
                self._show(new, top)

    def check_audit_folder(self) -> None:
        """Stop the session when the agent has filled the hook's folder, which lies on the
        host's disk under no quota, past its budget (:class:`FolderUsage`); tampering with
        the audit, so a finding too."""
        folder = self.collector.source.parent
        over = folder_usage(folder).over_budget()
        if over is not None:
            self.stop_for(f"the agent wrote {over} into the audit folder {CONTAINER_AUDIT_DIR}, "
                          "which lies on the host's disk: the session was stopped",
                          finding=True)

    def check_engine_disk(self) -> None:
        """Stop the session before the agent's writes into its container fill the disk the
        engine keeps it on (``--disk`` caps the container only where the storage driver
        can, :meth:`Engine.disk_limits_supported`)."""
        if self.data_root is None or self.stopped_for is not None:
            return
        low = disk_budget.below_reserve(self.data_root)
        if low is not None:
            self.stop_for(f"{low}: the agent was stopped before that disk filled",
                          finding=False)

    def stop_for(self, reason: str, *, finding: bool) -> None:
        """Stop the agent as a timeout does; the run ends ``error`` with ``reason``."""
        self.stopped_for = reason
        if finding:
            self.collector.findings.append(reason)
        self.say(f"error: {reason}")
        self.cancelled.set()
        if self.container is not None:
            stop_agent(self.container)

    def _show(self, data: bytes, top: set[str]) -> None:
        for ev in parse_raw_events(data.decode("utf-8", "replace")).events:
            if ev.get("ev") == "shell" and ev.get("depth") == 0 and ev.get("cmd"):
                top.add(str(ev.get("shell")))
                self.say(f"  $ {self.masker.mask(first_line(str(ev['cmd'])))}")
            elif ev.get("ev") == "shell-end" and ev.get("shell") in top \
                    and ev.get("rc") not in (0, None):
                self.say(f"    exit {ev.get('rc')}")

    def scan_secrets(self, c: Container, changes: list[tuple[str, str]]) -> list[str]:
        """Files the agent added or changed that hold a secret value (in any encoding
        :class:`Masker` knows); the image committed from them is not shareable."""
        if not self.masker:
            return []
        paths = sorted(p for k, p in changes if k in ("A", "C"))
        hits: list[str] = []
        env = {f"SYNTH_SCAN_{i}": v for i, v in enumerate(self.masker.values)}
        patterns = " ".join(f'-e "$SYNTH_SCAN_{i}"' for i in range(len(env)))
        script = f'for p in "$@"; do [ -f "$p" ] && [ ! -L "$p" ] && echo "$p"; done ' \
                 f'| xargs -r -d "\\n" grep -lsF {patterns} --'
        for start in range(0, len(paths), 500):
            res = c.exec(["bash", "-c", script, "scan", *paths[start:start + 500]], env=env)
            hits += [line for line in res.stdout.splitlines() if line]
        # Compressed copies hide every form: gzip members are inflated host-side.
        hits += secrets.gzip_hits(c, [p for p in paths if p not in hits], self.masker.values)
        for path in hits:
            self.say(f"warning: a secret value is in {path} of the live image; "
                     "it is labelled not shareable")
        return sorted(set(hits))

    def stop_polling(self) -> None:
        self._stop_polling.set()
        if self._poller is not None and self._poller.is_alive():
            self._poller.join(timeout=5)

    def finish_audit(self) -> None:
        """Drain the hook's folder, check the stream against host-side evidence, and write
        ``audit.jsonl`` from synth's own copy of the stream."""
        self.stop_polling()
        self.collector.finish()
        cut = self.collector.cut()
        logs = self.run_dir / "logs"
        trace_files, leftovers = drain_folder(self.collector.source.parent,
                                              self.collector.source.name, logs / "trace",
                                              self.masker)
        raw = read_raw_events(self.collector.dest)
        traces: list[dict[str, Any]] = []
        for path in sorted(trace_files, key=lambda p: int(re.sub(r"\D", "", p.name) or 0)):
            traces += trace.parse_trace(path.read_text(encoding="utf-8", errors="replace"))
        findings = self.collector.findings + leftovers + audit_findings(
            raw, self.commands, started=self.started_ts, ended=time.time(),
            match_top_level=self.opts.agent.kind == "replay", masker=self.masker)
        if raw.unparsed:
            findings.append(f"{len(raw.unparsed)} line(s) of the hook stream are not records")
        records = merge_audit(raw, self.commands, session=self.run_id,
                              started=iso(self.started_ts), masker=self.masker,
                              exec_traces=traces)
        seen = self.sampler.stop()
        unconfirmed = unconfirmed_installers(records, seen) if self.sampler.works else []
        if self.sampler.works:
            write_processes(logs / "processes.jsonl", seen, self.masker.mask)
        # An unconfirmed record explains no change (provenance ignores it), so what it
        # claims stays unaudited; that alone does not make the log untrustworthy: a
        # command that was not found (``conda`` where none is installed) runs no process.
        self.record["audit"] = {"verified": not findings,
                                "findings": [self.masker.mask(f) for f in findings],
                                "cut": cut, "unconfirmed": [seq for seq, _ in unconfirmed],
                                "unconfirmed_notes": [self.masker.mask(t)
                                                      for _, t in unconfirmed],
                                "processes": {"sampled": self.sampler.works,
                                              "seen": len(seen)}}
        for f in findings + [t for _, t in unconfirmed]:
            self.say(f"audit: {self.masker.mask(f)}")
        write_audit(self.run_dir / "audit.jsonl", records)
        self.audit_records = records

    def settle_violations(self) -> None:
        """Move the changes a project tool's audited command made to its own files (``uv
        add``: pyproject.toml, uv.lock) from ``violations`` to ``tool_changes``
        (synth.record.tool_edits; none where the audit is unverified), then say both."""
        audit = self.record.get("audit") or {}
        if self.record["violations"] and audit.get("verified"):
            stay, explained = tool_edits.explained_by_tool(
                self.record["violations"], self.audit_records, self.file_times,
                audit.get("unconfirmed") or ())
            self.record["violations"] = stay
            if explained:
                self.record["tool_changes"] = explained
        for v in self.record.get("tool_changes") or []:
            self.say(f"changed by a project tool: {v['detail']}")
        for v in self.record["violations"]:
            self.say(f"violation: {v['detail']}")


    # ------------------------------------------------------------ whole session
    def work(self) -> str:
        """Set up, let the agent work, capture; returns how the agent's part ended."""
        c = self.start()
        self.copy_repo(c)
        for plugin in profiles.plugins():  # each plug-in's conventions, in every session
            plugin.session_setup(c)
        before = self.workspace_entries(c)
        self.base_dpkg = self.guarded("base dpkg packages", lambda: snapshot.dpkg_snapshot(c))
        self.base_env = self.guarded("base environment files",
                                     lambda: snapshot.read_env_files(c))
        self.base_setuid = self.guarded("base setuid files", lambda: snapshot.setuid_files(c))
        self.log = AgentLog(self.run_dir / "logs" / "agent.log", self.masker)
        status = self.agent_part(c, self.log)
        self.record["agent_exit_code"] = self.exit_code
        self.capture(c, before)
        return status

    def agent_part(self, c: Container, log: AgentLog) -> str:
        status = "error"
        try:
            self.exit_code = self.run_agent(c, log)
            status = "succeeded" if self.exit_code == 0 else "failed"
        except KeyboardInterrupt:
            status = "interrupted"
            self.cancelled.set()
            self.say("Interrupted: stopping the agent and capturing what it left")
            stop_agent(c)
        except SynthError as exc:
            # A killed container breaks the running exec: that is the timeout, not an error.
            if not self.timed_out.is_set():
                self.record["error"] = self.masker.mask(exc.message)
                self.say(f"error: {self.masker.mask(exc.message)}")
        if self.timed_out.is_set():
            status = "timeout"
            self.say(f"Timeout: the agent ran longer than {self.opts.timeout:g} s and was killed")
        if self.stopped_for is not None:
            status = "error"
            self.record["error"] = self.stopped_for
        return status

    def close(self, status: str) -> str:
        """Every way out: write the audit, settle the status, remove the container, write
        run.json; returns the final status."""
        if self.log is not None:
            self.guarded("agent log", self.log.close)
            if self.log.full is not None:
                self.note_disk_full(self.log.full)
        if self.strace_dir is not None:
            shutil.rmtree(self.strace_dir, ignore_errors=True)
        self.guarded("audit log", self.finish_audit)
        self.guarded("tool changes", self.settle_violations)
        # The final state is the truth for export, but a statement that failed is said.
        self.record["failed_statements"] = [
            {"command": self.masker.mask(first_line(c.command)), "exit": c.exit}
            for c in self.commands if c.phase == "agent" and c.exit not in (0, None)]
        status = _truthful_status(status, self.capture_errors, self.record)
        if self.container is not None:
            if self.opts.keep:
                self.say(f"Keeping container {self.container.name} (--keep)")
            else:
                with suppress(EngineError):
                    self.container.remove()
        if self.watchdog is not None:
            self.watchdog.release()
        if self.disk_full is not None:
            status = "error"
            self.record["error"] = _with_error(self.record.get("error"), self.disk_full.message)
        self.record["status"] = status
        self.record["ended"] = iso()
        self.write_last_record()
        return str(self.record["status"])

    def write_last_record(self) -> None:
        """run.json as the run ended; on a full file system the reserve is given up for it
        (best effort: what was written before stays)."""
        try:
            self.write_record()
        except DiskFullError as exc:
            self.note_disk_full(exc)
            self.record["status"] = "error"
            self.record["error"] = _with_error(self.record.get("error"), exc.message)
            self.reserve_path.unlink(missing_ok=True)
            with suppress(DiskFullError):
                self.write_record()
        self.reserve_path.unlink(missing_ok=True)


def stop_leftovers(c: Container, masker: Masker) -> list[dict[str, Any]]:
    """The agent's processes still running after its part ended (listed by the engine from
    the host), each named; then every one stopped, the container's main process spared. A
    process left after that is a capture error: the final state would not hold still."""
    left = [p for p in c.processes() if not _lease_sleep(p)]
    if not left:
        return []
    stop_agent(c)
    still = [p for p in c.processes() if p["pid"] in {q["pid"] for q in left}]
    if still:
        raise EngineError(f"{len(still)} process(es) of the agent survived being killed: "
                          + "; ".join(masker.mask(p["command"]) for p in still[:5]))
    return [{**p, "command": masker.mask(p["command"])} for p in left]


def _lease_sleep(p: dict[str, Any]) -> bool:
    """The lease loop's own ``sleep 2`` (a child of the main process), not the agent's."""
    return bool(p.get("main_child")) and p.get("command") == "sleep 2"


def stop_agent(c: Container) -> None:
    """Kill every process in the container but its main one: the agent's command ends, and
    the container stays up for the capture of the final state."""
    with suppress(EngineError):
        c.exec(["bash", "-c", "kill -KILL -1"])


#: Capture steps whose failure leaves a run that cannot be exported faithfully.
_OPTIONAL_CAPTURE = ("claims", "secret scan", "change times", "base setuid files")


def as_disk_full(exc: BaseException) -> DiskFullError:
    """``exc`` (a full file system, however raised) as a :class:`DiskFullError`."""
    cur: BaseException | None = exc
    while cur is not None:
        if isinstance(cur, DiskFullError):
            return cur
        if isinstance(cur, OSError) and is_disk_full(cur):
            return from_os_error(cur)
        cur = cur.__cause__ or cur.__context__
    return disk_full_error(None)


def _with_error(earlier: str | None, message: str) -> str:
    return message if not earlier or message in earlier else f"{earlier}; {message}"


def _truthful_status(status: str, capture_errors: list[str], record: dict[str, Any]) -> str:
    """``succeeded`` only when the agent succeeded *and* the final state was captured."""
    if status != "succeeded":
        return status
    missing = [e for e in capture_errors if not e.startswith(_OPTIONAL_CAPTURE)]
    if not missing:
        return status
    record["error"] = record.get("error") or (
        f"the final state was not captured whole ({len(missing)} step(s) failed): {missing[0]}")
    return "incomplete"


def _root_owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def run_session(opts: RunOptions, settings: Settings, engine: Engine,
                say: Say = console.say) -> RunResult:
    """Run one audited session on ``engine`` (the run directory under ``settings``'
    artifacts folder); the result says where the run directory is and how it ended."""
    check_run_space(opts, settings, engine)
    s = _Session(opts, settings, engine, say)
    status = "error"
    try:
        status = s.work()
    except KeyboardInterrupt:
        status = "interrupted"
        s.record["error"] = "interrupted while setting up or capturing"
    except DiskFullError as exc:
        s.note_disk_full(exc)
    except SynthError as exc:
        status = "error"
        s.record["error"] = s.masker.mask(exc.message)
        say(f"error: {s.masker.mask(exc.message)}")
        if exc.hint:
            say(f"hint: {exc.hint}")
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        s.note_disk_full(exc)
    finally:
        status = s.close(status)
    return _result(s, status)


def check_run_space(opts: RunOptions, settings: Settings, engine: Engine) -> None:
    """Refuse a run the engine's data root or the artifacts folder has no room for: the
    base and the task's latest live images tell how much it may take."""
    if not settings.disk_check:
        return
    task_runs = settings.runs_dir / opts.task.name
    earlier = sorted(task_runs.iterdir())[-5:] if task_runs.is_dir() else []
    refs = [opts.task.base_image, *(r for r in map(_live_ref, earlier) if r)]
    disk_budget.check_space(
        disk_budget.run_needs(disk_budget.engine_data_root(engine),
                              settings.artifacts_dir,
                              [disk_budget.image_size(engine, ref) for ref in refs]),
        f"a run of {opts.task.name}")


def _live_ref(run_dir: Path) -> str | None:
    try:
        live = RunDir(run_dir).run_record().live_image
    except SynthError:
        return None
    return live.ref if live is not None else None


def _result(s: _Session, status: str) -> RunResult:
    live = s.record.get("live_image") or {}
    s.say(f"Run {s.task.name}/{s.run_id}: {status} -> {s.run_dir}")
    if s.disk_full is not None and s.disk_full.hint:
        s.say(f"hint: {s.disk_full.hint}")
    return RunResult(
        run_id=s.run_id, run_dir=s.run_dir, status=status, agent_exit_code=s.exit_code,
        live_image=live.get("ref"), violations=list(s.record["violations"]),
        disk_full=s.disk_full is not None,
    )
