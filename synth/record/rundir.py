"""Run directories: ``<artifacts>/runs/<task>/<run-id>/`` — naming, finding, listing."""

from __future__ import annotations

import glob
import os
import re
import secrets
import shlex
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from synth.config import Settings
from synth.errors import InputFileError, NotFoundError
from synth.formats.limits import Limits
from synth.formats.run import RUN_FORMAT
from synth.formats.store import RunDir
from synth.record.lease import lapsed
from synth.util import atomic
from synth.util.retention import live_run

__all__ = ["RUN_FORMAT", "describe_run", "find_run", "list_runs", "read_run", "summarize"]
T = TypeVar("T")
RUN_ID_RE = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def new_run_id(now: datetime | None = None) -> str:
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def iso(ts: float | None = None) -> str:
    dt = datetime.fromtimestamp(ts, UTC) if ts is not None else datetime.now(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def list_runs(settings: Settings, task: str | None = None) -> list[Path]:
    """Every run directory (holding a run.json), oldest first (run ids sort by time)."""
    root = settings.runs_dir
    if not root.is_dir():
        return []
    pattern = f"{glob.escape(task)}/*/run.json" if task else "*/*/run.json"
    dirs = [p.parent for p in root.glob(pattern) if RUN_ID_RE.match(p.parent.name)]
    return sorted(dirs, key=lambda d: (d.name, d.parent.name))


def find_run(settings: Settings, ref: str | Path | None = None) -> Path:
    """A run directory named by path, run id (or a unique prefix), ``<task>/<run-id>``,
    ``latest`` / None for the most recent run, or ``<task>/latest`` for the task's."""
    task = (str(ref)[:-len("/latest")] if str(ref).endswith("/latest")
            and not os.path.lexists(Path(str(ref)) / "run.json") else None)
    if ref is None or str(ref) == "latest" or (task and "/" not in task):
        runs = list_runs(settings, task)
        if not runs:
            raise NotFoundError(
                f"No runs{f' of task {task}' if task else ''} under {settings.runs_dir}.",
                hint="Make one with `synth run TASK --agent …`, or point --artifacts at "
                "the folder holding runs/.", ref=str(ref or "latest"), what="run",
            )
        return runs[-1]
    text = str(ref)
    path = Path(text)
    if os.path.lexists(path / "run.json"):
        return path.resolve()
    if path.name == "run.json" and path.is_file():
        return path.parent.resolve()
    if "/" in text.strip("/"):
        cand = settings.runs_dir / text.strip("/")
        if os.path.lexists(cand / "run.json"):
            return cand
    matches = [d for d in list_runs(settings) if d.name == text]
    if not matches:
        matches = [d for d in list_runs(settings) if d.name.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(f"{d.parent.name}/{d.name}" for d in matches[:5])
        raise NotFoundError(f"Run {text} is ambiguous: {names}.",
                            hint="Name it as <task>/<run-id>.", ref=text, what="run")
    raise NotFoundError(
        f"No run {text} under {settings.runs_dir}.",
        hint="`synth runs list` shows the runs there.", ref=text, what="run",
    )


def read_run(run_dir: Path) -> dict[str, Any]:
    """``run.json`` as a validated document (:meth:`synth.formats.store.RunDir.run_record`)."""
    return dict(RunDir(run_dir).run_record().raw)


def mark_pruned(settings: Settings, removed: list[str], when: str | None = None) -> list[Path]:
    """Record in each run whose live image ``synth gc`` removed (``removed``: gc's lines,
    ``image synth-live/<task>:<run-id> (…)``) when it was pruned, so that verify and diff
    of that run say so; the run directories updated."""
    done = []
    for line in removed:
        ref = line.removeprefix("image ").split(" ", 1)[0]
        found = live_run(ref)
        run_json = settings.runs_dir / found[0] / found[1] / "run.json" if found else None
        if run_json is None or not run_json.is_file() or run_json.is_symlink():
            continue
        data = read_run(run_json.parent)
        live = data.get("live_image")
        if isinstance(live, dict) and live.get("ref") == ref:
            data["live_image"] = {**live, "pruned": when or iso()}
            atomic.write_json(run_json, data)
            done.append(run_json.parent)
    return done


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def effective_status(data: dict[str, Any], run_dir: Path) -> str:
    """The run's status as it truly is: a run still marked ``running`` whose synth died
    (its lease lapsed, or its process is gone from this host) is ``abandoned``."""
    status = str(data.get("status"))
    if status != "running":
        return status

    owner = data.get("owner") or {}
    pid = owner.get("pid")
    if lapsed(run_dir / "logs" / "lease"):
        return "abandoned"
    if owner.get("host") == socket.gethostname() and isinstance(pid, int) \
            and not _pid_alive(pid):
        return "abandoned"
    return status


def trust_problems(data: dict[str, Any], run_dir: Path) -> list[str]:
    """Why an export of this run would not be trustworthy; empty when it is."""
    problems: list[str] = []
    status = effective_status(data, run_dir)
    if status != "succeeded":
        error = data.get("error")
        problems.append(f"the run ended `{status}`" + (f": {error}" if error else ""))
    audit = data.get("audit") or {}
    if audit.get("verified") is False:
        findings = [str(f) for f in audit.get("findings") or []]
        problems.append("its audit log is unverified: " + "; ".join(findings))
    return problems


def summarize(run_dir: Path) -> dict[str, Any]:
    """One line's worth of a run, for ``synth runs list``; a run whose run.json cannot be
    read has ``status`` ``unreadable`` and the ``error``."""
    try:
        rec = RunDir(run_dir).run_record()
    except InputFileError as exc:
        return {"run_dir": str(run_dir), "run_id": run_dir.name, "task": run_dir.parent.name,
                "status": "unreadable", "error": exc.message}
    return {
        "run_dir": str(run_dir), "run_id": rec.run_id, "task": rec.task.name,
        "agent": rec.agent.kind, "status": effective_status(dict(rec.raw), run_dir),
        "audit_verified": rec.audit.verified if rec.audit is not None else None,
        "started": rec.started,
        "ended": rec.ended, "violations": len(rec.violations), "claims": rec.claims.status,
        "limit_hits": sorted({h.kind for h in rec.limit_hits or ()}),
        "failed_statements": len(rec.failed_statements or ()),
    }


def _part(load: Callable[[], T], unreadable: list[str]) -> T | None:
    """One file of a run for ``runs show``: a bad one is listed, not fatal."""
    try:
        return load()
    except InputFileError as exc:
        unreadable.append(exc.message)
        return None


def describe_run(run_dir: Path) -> dict[str, Any]:
    """``run.json`` plus a summary of the state files and the audit log."""
    store = RunDir(run_dir)
    run = dict(store.run_record().raw)
    unreadable: list[str] = []
    apt = _part(store.apt_state, unreadable)
    py = _part(store.python_state, unreadable)
    env = _part(store.env_state, unreadable)
    audit = _part(store.audit, unreadable)
    hooks = [r for r in (audit.commands() if audit else ()) if r.source == "bash-hook"]
    prim = py.primary_interpreter() if py else None
    run["status"] = effective_status(run, run_dir)
    return {
        "run_dir": str(run_dir),
        "run": run,
        "summary": {
            "commands": len(hooks),
            "failed_commands": sum(r.exit not in (0, None) for r in hooks),
            "apt_added": dict(apt.added) if apt else {},
            "apt_manual": list(apt.manual) if apt else [],
            "python_primary": py.primary if py else None,
            "python_distributions": {d.name: d.version for d in (prim.distributions
                                                                 if prim else ())},
            "interpreters": [i.path for i in py.interpreters] if py else [],
            "persisted_env": sorted(env.persisted) if env else [],
            "unreadable": unreadable,
        },
    }


def _agent_line(agent: Any) -> str:
    """``replay script /x/good.sh`` / ``exec argv my-agent --task …`` (the recorded fields)."""
    if not isinstance(agent, dict):
        return "-"
    parts = [str(agent.get("kind") or "-")]
    for key, value in sorted(agent.items()):
        if key == "kind" or value in (None, [], {}, ""):
            continue
        shown = shlex.join(map(str, value)) if isinstance(value, list) else str(value)
        parts.append(f"{key} {shown}")
    return "  ".join(parts)


def limit_lines(run: dict[str, Any]) -> list[str]:
    """The session's limits, and each agent command the kernel stopped at one."""
    limits = run.get("limits")
    if not isinstance(limits, dict):
        return []
    disk = limits.get("disk")
    shown = Limits(limits.get("memory"), limits.get("pids"), limits.get("cpus"), disk)
    lines = [f"limits     {shown.describe()}" + (
        " (disk not enforced by this storage driver)"
        if disk and not limits.get("disk_enforced") else "")]
    for hit in run.get("limit_hits") or []:
        what = {"memory": "memory limit (OOM kill)", "pids": "process limit (fork refused)"}
        lines.append(f"LIMIT HIT  {what.get(hit.get('kind'), hit.get('kind'))} x"
                     f"{hit.get('count')} in: {hit.get('command')} (exit {hit.get('exit')})")
    return lines


def format_run(info: dict[str, Any]) -> str:
    run, s = info["run"], info["summary"]
    lines = [
        f"run        {run.get('task', {}).get('name')}/{run.get('run_id')}  ({info['run_dir']})",
        f"status     {run.get('status')}  (agent exit {run.get('agent_exit_code')})",
        f"agent      {_agent_line(run.get('agent'))}",
        f"time       {run.get('started')} -> {run.get('ended')}",
        f"live image {(run.get('live_image') or {}).get('ref')}",
        f"claims     {(run.get('claims') or {}).get('status')}",
        f"commands   {s['commands']} audited, {s['failed_commands']} failed",
        f"apt        {len(s['apt_added'])} added; asked for: {' '.join(s['apt_manual']) or '-'}",
        f"python     primary {s['python_primary']} "
        f"({len(s['python_distributions'])} distributions); "
        f"interpreters: {' '.join(s['interpreters']) or '-'}",
        f"env        {' '.join(s['persisted_env']) or '-'}",
    ]
    if run.get("error"):
        lines.append(f"error      {run['error']}")
    lines += limit_lines(run)
    failed = run.get("failed_statements") or []
    if failed:
        lines.append(f"FAILED     {len(failed)} statement(s) of the agent failed (the final "
                     "state is exported all the same):")
        lines += [f"  exit {f.get('exit')}  {f.get('command')}" for f in failed[:20]]
    for v in run.get("violations") or []:
        lines.append(f"VIOLATION  {v.get('detail')}")
    for v in run.get("tool_changes") or []:
        lines.append(f"tool-edit  {v.get('detail')}")
    for e in run.get("capture_errors") or []:
        lines.append(f"capture    {e}")
    audit = run.get("audit") or {}
    if audit.get("verified") is False:
        lines.append("audit      UNVERIFIED")
        lines += [f"  finding  {f}" for f in audit.get("findings") or []]
    for note in audit.get("unconfirmed_notes") or []:
        lines.append(f"unconfirmed {note}; it explains no change")
    for path in run.get("secret_findings") or []:
        lines.append(f"SECRET     a secret value is in {path} of the live image "
                     "(labelled not shareable)")
    for e in s.get("unreadable") or []:
        lines.append(f"unreadable {e}")
    return "\n".join(lines)
