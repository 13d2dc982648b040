"""Synthetic run directories on the real schema (docs/formats.md), for distillation tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from synth.engine.base import NoEngine
from synth.errors import EngineUnavailableError

#: The engine unit tests pass where a function takes one: none answers (no Docker there).
NO_ENGINE = NoEngine(EngineUnavailableError("no engine in unit tests"))

#: A real manifest.json (the golden export), for artifacts made by hand in tests.
GOLDEN_MANIFEST = Path(__file__).resolve().parent / "golden" / "export-basic" / "manifest.json"


def manifest(**fields: Any) -> dict[str, Any]:
    """A schema-valid manifest.json document: the golden one with ``fields`` replaced."""
    doc: dict[str, Any] = json.loads(GOLDEN_MANIFEST.read_text(encoding="utf-8"))
    return {**doc, **fields}


BASE_APT = {"libc6": "2.36-9+deb12u10", "python3": "3.11.2-1+b1", "python3-pip": "23.0.1+dfsg-1"}


def dist(name: str, version: str, *, installer: str | None = "pip", requested: bool = False,
         direct_url: Mapping[str, Any] | None = None,
         location: str = "/opt/venv/lib/python3.11/site-packages") -> dict[str, Any]:
    return {"name": name, "version": version, "installer": installer, "requested": requested,
            "direct_url": direct_url, "location": location}


def venv(prefix: str = "/opt/venv", dists: Sequence[Mapping[str, Any]] = (),
         *, created: bool = True) -> dict[str, Any]:
    return {"path": f"{prefix}/bin/python", "kind": "venv", "version": "3.11.2",
            "prefix": prefix, "base_prefix": "/usr", "created_by_agent": created,
            "distributions": sorted(dists, key=lambda d: d["name"])}


def system_python(dists: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    return {"path": "/usr/bin/python3", "kind": "system", "version": "3.11.2", "prefix": "/usr",
            "base_prefix": "/usr", "created_by_agent": False,
            "distributions": sorted(dists, key=lambda d: d["name"])}


def cmd(command: str, *, exit: int = 0, cwd: str = "/workspace",
        hooks: Sequence[tuple[str, int]] | None = None, replayed: bool = False
        ) -> dict[str, Any]:
    """An audited ``bash -c`` line; ``hooks`` gives per-simple-command exit statuses;
    ``replayed``: synth ran it (the replay agent), so a ``synth`` record of the statement
    comes first, as a replayed session's log has it."""
    return {"command": command, "exit": exit, "cwd": cwd, "hooks": hooks,
            "replayed": replayed}


def project_task(tmp: Path, files: Mapping[str, str], probe: str) -> Path:
    """A task ``proj`` under ``tmp/tasks`` whose repository holds ``files`` (relative path
    -> text), with a CPU probe ``probe`` and no GPU levels; its task.toml's path."""
    repo = tmp / "tasks" / "proj" / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    task = repo.parent / "task.toml"
    task.write_text('name = "proj"\nbase_image = "synth/python:bookworm"\n[repo]\n'
                    f'path = "repo"\n[probes.cpu]\ncommand = "{probe}"\n'
                    '[not_applicable]\nC3 = "cpu"\nC4 = "cpu"\n')
    return task


def deb(name: str, version: str, arch: str = "amd64") -> dict[str, Any]:
    """A ``state/apt.json`` ``debs`` record as apt's indexes would give it (fake hash)."""
    import hashlib

    pool = f"pool/main/{name[0]}/{name}/{name}_{version.rsplit(':', maxsplit=1)[-1]}_{arch}.deb"
    return {"version": version, "arch": arch, "size": 1000 + len(name),
            "sha256": hashlib.sha256(pool.encode()).hexdigest(),
            "mirror": "http://deb.debian.org/debian", "filename": pool}


def make_run_dir(
    tmp_path: Path,
    audit: Sequence[Mapping[str, Any]] = (),
    *,
    task: str = "demo",
    run_id: str = "20261129-101500-a1b2c3",
    apt_added: Mapping[str, str] | None = None,
    apt_manual: Sequence[str] = (),
    apt_debs: Mapping[str, Mapping[str, Any]] | None = None,
    python: Sequence[Mapping[str, Any]] | None = None,
    primary: str | None = "/opt/venv/bin/python",
    diff: Sequence[tuple[str, str]] = (),
    env: Mapping[str, str] | None = None,
    claims: Mapping[str, Any] | None = None,
    task_file: Path | None = None,
    wheelhouse: str | None = None,
    base_id: str = "sha256:" + "ab" * 32,
) -> Path:
    run_dir = tmp_path / "runs" / task / run_id
    (run_dir / "state").mkdir(parents=True)

    def dump(rel: str, data: Any) -> None:
        (run_dir / rel).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    dump("run.json", {
        "format": 1, "run_id": run_id, "synth_version": "0.1.0",
        "task": {"name": task,
                 "task_file": str(task_file) if task_file else f"/nonexistent/{task}/task.toml"},
        "agent": {"kind": "replay", "script": "/x/sloppy.sh", "argv": None},
        "base_image": {
            "ref": "synth/python:bookworm", "id": base_id,
            "labels": {"synth.base.recipe": "debootstrap --variant=minbase --include=python3,"
                       "python3-venv bookworm http://deb.debian.org/debian",
                       "synth.base.packages_sha256": "cd" * 32},
            "rootfs": ["sha256:" + "ef" * 32], "repo_digests": []},
        "started": "2026-11-29T10:15:00Z", "ended": "2026-11-29T10:16:40Z",
        "status": "succeeded", "agent_exit_code": 0,
        "source_tree": {"before": "0" * 64, "after": "0" * 64, "changed": []},
        "violations": [], "claims": {"status": "missing", "errors": []},
        "live_image": {"ref": f"synth-live/{task}:{run_id}", "id": "sha256:" + "cd" * 32},
        "wheelhouse": wheelhouse, "ca_bundle": True, "error": None, "timeout": None,
        "container": f"synth-run-{task}-{run_id}", "kept": False, "secret_env": [],
        "trace_exec": False, "capture_errors": [],
    })
    lines = [json.dumps({"type": "header", "format": 1, "session": run_id,
                         "started": "2026-11-29T10:15:00Z", "raw_events": 0, "unparsed": 0})]
    seq = 0
    t = 1764410100.0
    for rec in audit:
        if rec.get("replayed"):
            seq += 1
            lines.append(json.dumps({
                "type": "command", "source": "synth", "session": run_id, "seq": seq,
                "command": rec["command"], "argv": ["bash", "-c", rec["command"]],
                "cwd": rec.get("cwd", "/workspace"), "start": t - 0.1, "end": t + 1.1,
                "exit": rec.get("exit", 0), "pipestatus": None, "timed_out": False,
                "phase": "agent",
            }))
        seq += 1
        top = seq
        lines.append(json.dumps({
            "type": "command", "source": "bash-c", "session": run_id, "seq": top, "pid": 100,
            "ppid": 1, "command": rec["command"], "cwd": rec.get("cwd", "/workspace"),
            "cwd_end": rec.get("cwd", "/workspace"), "start": t, "end": t + 1,
            "exit": rec.get("exit", 0), "pipestatus": [rec.get("exit", 0)], "depth": 0,
            "parent_seq": None,
        }))
        for text, code in rec.get("hooks") or ():
            seq += 1
            lines.append(json.dumps({
                "type": "command", "source": "bash-hook", "session": run_id, "seq": seq,
                "pid": 101, "command": text, "cwd": rec.get("cwd", "/workspace"),
                "start": t, "end": t + 0.5, "exit": code, "pipestatus": [code],
                "parent_seq": top, "depth": 0,
            }))
        t += 2
    (run_dir / "audit.jsonl").write_text("\n".join(lines) + "\n")
    added = dict(apt_added or {})
    dump("state/apt.json", {
        "format": 1, "base": BASE_APT, "final": {**BASE_APT, **added}, "added": added,
        "changed": {}, "removed": {}, "manual": sorted(apt_manual),
        **({"debs": {n: dict(d) for n, d in apt_debs.items()},
            "debs_missing": sorted(set(added) - set(apt_debs))} if apt_debs is not None else {}),
    })
    interps = list(python) if python is not None else [system_python(), venv()]
    dump("state/python.json", {"format": 1, "interpreters": interps, "primary": primary,
                                "errors": []})
    dump("state/diff.json", {"format": 1,
                             "changes": [{"kind": k, "path": p} for k, p in diff],
                             "noise": [{"kind": "A", "path": "/root/.cache/pip",
                                        "reason": "cache"}]})
    dump("state/env.json", {"format": 1, "persisted": dict(env or {}),
                            "sources": dict.fromkeys(env or {}, "/root/.bashrc")})
    dump("state/provenance.json", {"format": 1, "file_times": {}, "apt_times": {},
                                   "dist_times": {}, "setuid": [], "setuid_known": True})
    if claims is not None:
        dump("claims.json", dict(claims))
    return run_dir


def fake_base(run_dir: Path) -> Callable[[str, Path], None]:
    """A base image for a made-up run: one small layer, recorded as the run's base rootfs,
    and a ``save(image, dest)`` that writes it as ``docker save`` does (the engine's stand-in
    when an export carries the base)."""
    import hashlib
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        data = b"PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"
        info = tarfile.TarInfo("etc/os-release")
        info.size, info.mtime = len(data), 0
        tar.addfile(info, io.BytesIO(data))
    layer = raw.getvalue()
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    record = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    record["base_image"]["rootfs"] = [diff_id]
    (run_dir / "run.json").write_text(json.dumps(record), encoding="utf-8")
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["bash"]},
                         "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()

    def save(_image: str, dest: Path) -> None:
        with tarfile.open(dest, "w") as tar:
            for name, blob in (("abc/layer.tar", layer), ("cfg.json", config),
                               ("manifest.json", json.dumps([{
                                   "Config": "cfg.json", "RepoTags": [_image],
                                   "Layers": ["abc/layer.tar"]}]).encode())):
                info = tarfile.TarInfo(name)
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
    return save
