"""A seeded mutator over synth's input files, and the properties every mutant must keep.

Used by tests/unit/test_fuzz_inputs.py (a bounded number of cases in CI) and by
bench/fuzz_inputs.py (as many as asked). The world is small and our own: a task folder, a
synthetic run directory (tests/distill_runs.py) and the artifact exported from it with a
fake locker, so no engine and no network are needed. Each case copies one of them, mutates
one file, and drives the real CLI in-process (:func:`synth.cli.main`):

* no traceback: every exit is 0 or a SynthError's exit code (diff: 0, 1, 2);
* a file the store refuses yields no artifact (export fails, the out folder is not made),
  never "equal" (diff exits 2), and ``runs list`` skips a bad run.json with a warning;
* a bad claims.json is exported with a warning (verify's C5 fails on it), unless over its
  size cap, which export refuses; verify reads it as the reason C5 fails;
* nothing is overwritten: every file of the case's input is byte-identical afterwards.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import random
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth import errors
from synth.formats.store import (
    APT_STATE,
    AUDIT_LOG,
    CLAIMS,
    DIFF_STATE,
    ENV_STATE,
    MANIFEST,
    PLAN,
    PYTHON_STATE,
    RUN_RECORD,
    VERIFY_DOCUMENT,
    FileKind,
    load_json,
    read_audit,
)
from tests.distill_runs import NO_ENGINE, cmd, dist, make_run_dir, system_python, venv

RUN_KINDS = (RUN_RECORD, AUDIT_LOG, APT_STATE, PYTHON_STATE, DIFF_STATE, ENV_STATE, CLAIMS)
#: The artifact files a command reads back (export-report.json is for people and tools:
#: diff reads the plan from plan.json).
ARTIFACT_KINDS = (MANIFEST, CLAIMS, PLAN, VERIFY_DOCUMENT)
#: Exit codes a command may end with: success, or one SynthError kind.
ERROR_CODES = frozenset(
    cls.exit_code for cls in vars(errors).values()
    if isinstance(cls, type) and issubclass(cls, errors.SynthError))
#: Values a mutant puts where a field was: wrong types, hostile text, extremes.
HOSTILE: list[Any] = [
    None, True, -1, 0, 2**70, 1e308, "", "x" * 5000, "[/]", "[bold]x[/bold", ":x:", "\x00",
    "\u202e", "../../../etc/passwd", [], {}, [[[[[]]]]], {"format": 99}]


@dataclass(frozen=True)
class World:
    root: Path
    task_dir: Path
    run_dir: Path
    artifact: Path


def fake_locker(env: Any, target: Any) -> Any:
    """Pins as the run had them, with a made-up hash: export without the network."""
    from synth.export.lock import Lock, LockedPin

    pins = tuple(LockedPin(name=n, version=v, hashes=(hashlib.sha256(n.encode()).hexdigest(),),
                           wheel_files=()) for n, v in env.pins)
    return Lock(env=env, pins=pins, locker="uv")


def build_world(root: Path) -> World:
    """The pristine inputs every case starts from."""
    from synth.config import Settings
    from synth.export.artifact import ExportOptions, export_run

    task_dir = root / "tasks" / "demo"
    (task_dir / "repo" / "demo").mkdir(parents=True)
    (task_dir / "repo" / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    (task_dir / "repo" / "demo" / "__init__.py").write_text("")
    (task_dir / "task.toml").write_text(
        'name = "demo"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[probes.cpu]\ncommand = "python -c \'import demo\'"\n'
        '[not_applicable]\nC3 = "cpu"\nC4 = "cpu"\n')
    audit = [
        cmd("apt-get update && apt-get install -y git",
            hooks=[("apt-get update", 0), ("apt-get install -y git", 0)]),
        cmd("python3 -m venv /opt/venv"),
        cmd("/opt/venv/bin/pip install numpy", hooks=[("/opt/venv/bin/pip install numpy", 0)]),
        cmd("cd /workspace && /opt/venv/bin/pip install -e ."),
        cmd("echo 'export OMP_NUM_THREADS=1' >> ~/.bashrc"),
    ]
    py = [system_python(), venv(dists=[
        dist("numpy", "2.3.5"), dist("pip", "23.0.1"),
        dist("demo", "0.0.0", direct_url={"url": "file:///workspace",
                                          "dir_info": {"editable": True}}),
    ])]
    run_dir = make_run_dir(
        root / "pristine", audit, task="demo", python=py, task_file=task_dir / "task.toml",
        apt_added={"git": "1:2.39.5-0+deb12u2"}, apt_manual=["git"],
        env={"OMP_NUM_THREADS": "1"}, diff=[("A", "/opt/venv"), ("C", "/root/.bashrc")],
        claims={"python_path": "/opt/venv/bin/python", "torch_version": None},
    )
    artifact = export_run(ExportOptions(
        run_dir, out_dir=root / "pristine-artifact", locker=fake_locker, ask_live=False),
        Settings.load(artifacts_dir=root / "pristine"), NO_ENGINE).artifact_dir
    (artifact / VERIFY_DOCUMENT.rel).write_text(json.dumps(_verify_document(artifact)))
    return World(root, task_dir, run_dir, artifact)


def _verify_document(artifact: Path) -> dict[str, Any]:
    """A verify.json as ``synth verify --rebuild`` leaves one (diff reads it)."""
    image = "synth-rebuilt/demo:0123456789ab"
    level = {"level": "C0", "status": "pass", "reason": None, "metrics": {}, "details": {},
             "seconds": 0.1}
    return {"format": 1, "synth_version": "0.1.0", "require": "C1",
            "target": {"kind": "artifact", "path": str(artifact), "task": "demo"},
            "levels_selected": ["C0"], "build": {"image": image, "image_id": None},
            "fidelity": None, "fingerprint": None, "decides": "rebuilt", "passed": True,
            "reports": {"rebuilt": {"target": {"kind": "rebuilt", "image": image},
                                    "levels": [level], "highest": "C0"}}}


# ------------------------------------------------------------------------------ mutants
def _json_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _json_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _json_paths(v, (*prefix, i))


def _edit_json(doc: Any, rng: random.Random) -> tuple[Any, str]:
    paths = [p for p in _json_paths(doc) if p]
    if not paths:
        return rng.choice(HOSTILE), "replaced the document"
    path = rng.choice(paths)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    how = rng.choice(["set", "set", "drop", "add"])
    if how == "drop":
        del parent[path[-1]]
    elif how == "add" and isinstance(parent, dict):
        parent[rng.choice(["zz_extra", "format", "type"])] = rng.choice(HOSTILE)
    else:
        parent[path[-1]] = rng.choice(HOSTILE)
    return doc, f"{how} {'.'.join(map(str, path))}"


def _mutate_json_text(text: str, rng: random.Random, jsonl: bool) -> tuple[str, str]:
    if jsonl:
        lines = text.splitlines()
        i = rng.randrange(len(lines))
        doc, what = _edit_json(json.loads(lines[i]), rng)
        lines[i] = json.dumps(doc)
        return "\n".join(lines) + "\n", f"line {i + 1}: {what}"
    doc, what = _edit_json(json.loads(text), rng)
    return json.dumps(doc, indent=1), what


def _mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    how = rng.choice(["truncate", "garbage", "nul", "latin1", "empty", "nest", "nan",
                      "surrogate", "dup-line"])
    cut = rng.randrange(len(data) + 1)
    if how == "truncate":
        return data[:cut], f"truncated at {cut}"
    if how == "garbage":
        return data[:cut] + bytes(rng.randrange(256) for _ in range(8)) + data[cut:], "garbage"
    if how == "nul":
        return data[:cut] + b"\x00" + data[cut:], f"NUL at {cut}"
    if how == "latin1":
        return data[:cut] + b"\xe9\xff" + data[cut:], f"non-UTF-8 at {cut}"
    if how == "empty":
        return b"", "emptied"
    if how == "nest":
        return b"[" * 100_000 + b"]" * 100_000, "nested 100000 deep"
    if how == "nan":
        return data.replace(b"0", b"NaN", 1), "NaN"
    if how == "surrogate":
        return data.replace(b'"', b'"\\ud800', 1), "lone surrogate"
    lines = data.splitlines(keepends=True)
    return data + (lines[0] if lines else b"{}\n"), "first line repeated"


def mutate(path: Path, kind: FileKind, rng: random.Random) -> str:
    """Mutate ``path`` in place (or remove it, or swap it for a link / folder / giant)."""
    how = rng.random()
    if how < 0.06:
        path.unlink(missing_ok=True)
        return "deleted"
    if how < 0.09:
        path.unlink(missing_ok=True)
        path.symlink_to("/etc/passwd")
        return "a symlink to /etc/passwd"
    if how < 0.11:
        path.unlink(missing_ok=True)
        path.mkdir()
        return "a folder"
    if how < 0.14:
        with path.open("r+b") as fh:  # sparse: costs no disk, and must never be read
            fh.truncate(max(kind.max_bytes + 1, 200 << 20 if kind is CLAIMS else 0))
        return f"grown to {path.stat().st_size} bytes"
    data = path.read_bytes()
    if how < 0.55:
        new, what = _mutate_bytes(data, rng)
    else:
        new_text, what = _mutate_json_text(data.decode(), rng, jsonl=kind is AUDIT_LOG)
        new = new_text.encode("utf-8", "surrogatepass")
    path.write_bytes(new)
    return what


def refused(path: Path, kind: FileKind) -> bool:
    """Does the store refuse this file (the oracle for "corrupt")? An optional file that
    is not there is not refused."""
    try:
        if kind is AUDIT_LOG:
            read_audit(path)
        elif kind in (CLAIMS, PLAN, VERIFY_DOCUMENT) and not os.path.lexists(path):
            return False
        else:
            load_json(path, kind)
    except errors.InputFileError:
        return True
    return False


# ---------------------------------------------------------------------------- driving
@contextlib.contextmanager
def offline_locker() -> Iterator[None]:
    """``synth export`` locks with :func:`fake_locker` (no index needed) while inside."""
    import synth.export.artifact

    def lock_env(env: Any, target: Any, locker: str = "uv") -> Any:
        return fake_locker(env, target)

    real = synth.export.artifact.lock_env  # type: ignore[attr-defined]
    synth.export.artifact.lock_env = lock_env  # type: ignore[attr-defined]
    try:
        yield
    finally:
        synth.export.artifact.lock_env = real  # type: ignore[attr-defined]


def run_cli(*argv: str) -> tuple[int, str, str]:
    """``synth ARGV`` in this process: (exit code, stdout, stderr). A traceback escapes."""
    from synth import cli
    out, err = io.StringIO(), io.StringIO()
    old, app = sys.argv, cli.app
    sys.argv = ["synth", *argv]
    cli.app = _click_app()  # typer would rebuild it on every call
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv, cli.app = old, app
    return code, out.getvalue(), err.getvalue()


@functools.cache
def _click_app() -> Any:
    """synth's typer app as the click command it builds (once: it takes ~70 ms a time)."""
    import typer.main

    from synth import cli
    return typer.main.get_command(cli.app)


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (links as their target), to prove nothing was rewritten."""
    out: dict[str, bytes] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink():
            out[rel] = b"-> " + os.readlink(p).encode()
        elif p.is_file() and p.stat().st_size <= 16 << 20:
            out[rel] = p.read_bytes()
        elif p.is_file():
            out[rel] = f"{p.stat().st_size} bytes".encode()
    return out


def check_run_case(world: World, case: Path, kind: FileKind, rng: random.Random) -> str:
    """Mutate one run file in a copy of the run; every command keeps the properties."""
    run_dir = case / "runs" / "demo" / world.run_dir.name
    shutil.copytree(world.run_dir, run_dir, symlinks=True)
    what = f"{kind.rel}: {mutate(run_dir / kind.rel, kind, rng)}"
    bad = refused(run_dir / kind.rel, kind)
    before = snapshot(case)
    out = case / "out"
    code, stdout, stderr = run_cli("export", "--run", str(run_dir), "-o", str(out), "--json")
    assert code == 0 or code in ERROR_CODES, (what, code, stderr)
    claims = run_dir / kind.rel
    claims_only = kind is CLAIMS and not claims.is_symlink() and claims.is_file() and (
        claims.stat().st_size <= kind.max_bytes)
    if bad and not claims_only:
        assert code != 0 and not out.exists(), (what, "an artifact from a refused file")
    if bad and claims_only and code == 0:
        assert "claims.json is not valid" in stdout, (what, "no warning about the claims")
    shutil.rmtree(out, ignore_errors=True)
    code, stdout, stderr = run_cli("diff", str(run_dir), str(run_dir), "--json")
    assert code in (0, 1, 2), (what, code, stderr)
    if bad and not claims_only:
        assert code == 2, (what, "diff did not fail on a refused file", code)
    code, stdout, stderr = run_cli("runs", "list", "--artifacts", str(case), "--json")
    assert code == 0, (what, code, stderr)
    listed = [r["run_dir"] for r in json.loads(stdout)["result"]["runs"]]
    if kind is RUN_RECORD and bad:  # skipped with a warning; without a run.json, not a run
        warned = "skipped" in stderr or not os.path.lexists(run_dir / kind.rel)
        assert not listed and warned, (what, listed, stderr)
    code, _stdout, stderr = run_cli("runs", "show", str(run_dir), "--json")
    assert code == 0 or code in ERROR_CODES, (what, code, stderr)
    assert snapshot(case) == before, (what, "an input was rewritten")
    return what


def check_artifact_case(world: World, case: Path, kind: FileKind, rng: random.Random) -> str:
    """Mutate one artifact file in a copy of the artifact; verify and diff keep the
    properties (verify stops before it needs an engine: an artifact without --rebuild)."""
    from synth.config import Settings
    from synth.verify.command import resolve_target

    art = case / "artifact"
    shutil.copytree(world.artifact, art, symlinks=True)
    what = f"artifact {kind.rel}: {mutate(art / kind.rel, kind, rng)}"
    bad = refused(art / kind.rel, kind)
    before = snapshot(case)
    code, _stdout, stderr = run_cli("verify", str(art), "--json", "-o", str(case / "v"))
    assert code in ERROR_CODES, (what, code, stderr)
    if kind is MANIFEST:  # refused as a file, or (deleted) not an artifact at all
        expect = ({errors.InputFileError.exit_code, errors.NotFoundError.exit_code} if bad
                  else {errors.UsageError.exit_code})
        assert code in expect, (what, code, stderr)
    else:  # the artifact still resolves; only the missing --rebuild stops it
        assert code == errors.UsageError.exit_code, (what, code, stderr)
    if kind is CLAIMS:
        target = resolve_target(str(art), Settings.load(artifacts_dir=case), "docker")
        from synth.pyramid.claims import BadClaims

        assert isinstance(target.claims, BadClaims) == bad, (what, target.claims)
    code, _stdout, stderr = run_cli("diff", str(art), str(art), "--json")
    assert code in (0, 1, 2), (what, code, stderr)
    # (A folder with a Dockerfile and no manifest is still an artifact to diff: docs/diff.md;
    # plan.json (older artifacts) and verify.json are optional; claims.json is not diff's.)
    if bad and kind is not CLAIMS and os.path.lexists(art / kind.rel):
        assert code == 2, (what, f"diff did not fail on a refused {kind.rel}", code)
    assert snapshot(case) == before, (what, "an input was rewritten")
    return what


def check_task_case(world: World, case: Path, rng: random.Random) -> str:
    """Mutate task.toml in a copy of the task folder: a TaskError or a task, never more."""
    task_dir = case / "demo"
    shutil.copytree(world.task_dir, task_dir, symlinks=True)
    path = task_dir / "task.toml"
    data = path.read_bytes()
    if rng.random() < 0.3:
        value = rng.choice(["/", "/etc", "/proc/self", "../../..", "repo/../..", "..",
                            "x" * 5000, "repo\\u0000", "~root"])
        path.write_bytes(data.replace(b'path = "repo"', f'path = "{value}"'.encode()))
        what = f"task.toml: repo.path = {value!r}"
    else:
        new, what = _mutate_bytes(data, rng)
        path.write_bytes(new)
        what = f"task.toml: {what}"
    before = snapshot(case)
    code, _stdout, stderr = run_cli("task", "check", str(task_dir), "--json")
    assert code in (0, errors.TaskError.exit_code), (what, code, stderr)
    if "repo.path" in what and code == 0:
        from synth.formats.task import load_task

        repo = load_task(task_dir).repo_path
        assert repo is not None and repo.is_relative_to(task_dir.resolve()), (what, repo)
    assert snapshot(case) == before, (what, "an input was rewritten")
    return what


Check = Callable[[World, Path, random.Random], str]


def cases(count: int, seed: int) -> Iterator[tuple[str, Check]]:
    """``count`` cases spread over every file: run files, artifact files, task.toml."""
    kinds: list[tuple[str, Check]] = [
        *((f"run:{k.rel}", lambda w, c, r, k=k: check_run_case(w, c, k, r))
          for k in RUN_KINDS),
        *((f"artifact:{k.rel}", lambda w, c, r, k=k: check_artifact_case(w, c, k, r))
          for k in ARTIFACT_KINDS),
        ("task.toml", check_task_case),
    ]
    for i in range(count):
        yield kinds[i % len(kinds)]


def run_cases(world: World, count: int, seed: int, scratch: Path) -> list[str]:
    """Run ``count`` seeded cases; returns what each did (an AssertionError stops it)."""
    done = []
    for i, (name, check) in enumerate(cases(count, seed)):
        case = scratch / f"case{i}"
        case.mkdir(parents=True)
        rng = random.Random(f"{seed}:{i}")
        done.append(f"{name}: {check(world, case, rng)}")
        shutil.rmtree(case, ignore_errors=True)
    return done


def stats(done: list[str]) -> dict[str, int]:
    by: dict[str, int] = {}
    for line in done:
        key = line.split(":", 2)[0] + ":" + line.split(":", 2)[1]
        by[key] = by.get(key, 0) + 1
    return by
