"""Run directories: ``<artifacts>/runs/<task>/<run-id>/`` — naming, finding, listing."""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synth.config import Settings
from synth.errors import NotFoundError, RunError

RUN_FORMAT = 1
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
    pattern = f"{task}/*/run.json" if task else "*/*/run.json"
    dirs = [p.parent for p in root.glob(pattern) if RUN_ID_RE.match(p.parent.name)]
    return sorted(dirs, key=lambda d: (d.name, d.parent.name))


def find_run(settings: Settings, ref: str | Path | None = None) -> Path:
    """A run directory named by path, run id (or a unique prefix), ``<task>/<run-id>``,
    or ``latest`` / None for the most recent run."""
    if ref is None or str(ref) == "latest":
        runs = list_runs(settings)
        if not runs:
            raise NotFoundError(
                f"No runs under {settings.runs_dir}.",
                hint="Make one with `synth run TASK --agent …`, or point --artifacts at "
                "the folder holding runs/.",
            )
        return runs[-1]
    text = str(ref)
    path = Path(text)
    if (path / "run.json").is_file():
        return path.resolve()
    if path.name == "run.json" and path.is_file():
        return path.parent.resolve()
    if "/" in text.strip("/"):
        cand = settings.runs_dir / text.strip("/")
        if (cand / "run.json").is_file():
            return cand
    matches = [d for d in list_runs(settings) if d.name == text]
    if not matches:
        matches = [d for d in list_runs(settings) if d.name.startswith(text)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(f"{d.parent.name}/{d.name}" for d in matches[:5])
        raise NotFoundError(f"Run {text} is ambiguous: {names}.",
                            hint="Name it as <task>/<run-id>.")
    raise NotFoundError(
        f"No run {text} under {settings.runs_dir}.",
        hint="`synth runs list` shows the runs there.",
    )


def read_run(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "run.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise NotFoundError(f"{run_dir} holds no run.json; not a run directory.") from exc
    except json.JSONDecodeError as exc:
        raise RunError(f"{path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RunError(f"{path} does not hold a JSON object.")
    if int(data.get("format", 0)) > RUN_FORMAT:
        raise RunError(f"{path}: run format {data.get('format')} is newer than this synth "
                       f"knows ({RUN_FORMAT}).", hint="Upgrade synth.")
    return data


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
    from synth.session.lease import lapsed

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
    """One line's worth of a run, for ``synth runs list``."""
    try:
        data = read_run(run_dir)
    except (RunError, NotFoundError) as exc:
        return {"run_dir": str(run_dir), "run_id": run_dir.name, "task": run_dir.parent.name,
                "status": "unreadable", "error": str(exc)}
    return {
        "run_dir": str(run_dir),
        "run_id": data.get("run_id", run_dir.name),
        "task": (data.get("task") or {}).get("name", run_dir.parent.name),
        "agent": (data.get("agent") or {}).get("kind"),
        "status": effective_status(data, run_dir),
        "audit_verified": (data.get("audit") or {}).get("verified"),
        "started": data.get("started"),
        "ended": data.get("ended"),
        "violations": len(data.get("violations") or []),
        "claims": (data.get("claims") or {}).get("status"),
    }


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def describe_run(run_dir: Path) -> dict[str, Any]:
    """``run.json`` plus a summary of the state files and the audit log."""
    run = read_run(run_dir)
    apt = _load_json(run_dir / "state" / "apt.json") or {}
    py = _load_json(run_dir / "state" / "python.json") or {}
    env = _load_json(run_dir / "state" / "env.json") or {}
    commands = failed = 0
    audit = run_dir / "audit.jsonl"
    if audit.is_file():
        for line in audit.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if rec.get("type") == "command" and rec.get("source") == "bash-hook":
                commands += 1
                failed += rec.get("exit") not in (0, None)
    primary = py.get("primary")
    prim = next((i for i in py.get("interpreters", []) if i.get("path") == primary), None)
    run["status"] = effective_status(run, run_dir)
    return {
        "run_dir": str(run_dir),
        "run": run,
        "summary": {
            "commands": commands,
            "failed_commands": failed,
            "apt_added": apt.get("added", {}),
            "apt_manual": apt.get("manual", []),
            "python_primary": primary,
            "python_distributions": {
                d["name"]: d["version"] for d in (prim or {}).get("distributions", [])
            },
            "interpreters": [i.get("path") for i in py.get("interpreters", [])],
            "persisted_env": sorted(env.get("persisted") or {}),
        },
    }


def format_run(info: dict[str, Any]) -> str:
    run, s = info["run"], info["summary"]
    lines = [
        f"run        {run.get('task', {}).get('name')}/{run.get('run_id')}  ({info['run_dir']})",
        f"status     {run.get('status')}  (agent exit {run.get('agent_exit_code')})",
        f"agent      {json.dumps(run.get('agent'), sort_keys=True)}",
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
    for v in run.get("violations") or []:
        lines.append(f"VIOLATION  {v.get('detail')}")
    for e in run.get("capture_errors") or []:
        lines.append(f"capture    {e}")
    audit = run.get("audit") or {}
    if audit.get("verified") is False:
        lines.append("audit      UNVERIFIED")
        lines += [f"  finding  {f}" for f in audit.get("findings") or []]
    for path in run.get("secret_findings") or []:
        lines.append(f"SECRET     a secret value is in {path} of the live image "
                     "(labelled not shareable)")
    return "\n".join(lines)
