"""A seeded mutator over synth's untrusted inputs, and the properties every mutant keeps.

Used by tests/unit/test_fuzz_inputs.py (a bounded number of cases in CI) and by
bench/fuzz_inputs.py (as many as asked). Five kinds of input, each a small world of our
own, so no engine and no network are needed: a task folder, a synthetic run directory
(tests/distill_runs.py), the artifact exported from it with a fake locker, a
ResearchEnvBench tree, and a bench results folder. Each case copies one, mutates one file
(its bytes, a field of its JSON, or the file itself swapped for a link to a host file, a
FIFO, a folder, a sparse giant), drives synth in-process (the CLI, :func:`synth.cli.main`;
``run_bench`` with its executor faked) and judges the outcome:

* ``traceback``: anything but a SynthError escaped, or a command exited with a code that
  is neither 0 nor a SynthError's;
* ``silent``: a silent accept. A mutant that must be refused (a hostile value, a link or
  special file where a file belongs, a file the store refuses) was accepted; a mutant that
  differs from the pristine input was called "equal" by ``synth diff``; an import wrote a
  task that does not load, or wrote anything when it refused; a damaged bench line was
  skipped without a warning naming it;
* ``unlocated``: refused, but the error does not name the mutated file;
* ``rewritten``: an input file changed, or a host file outside the world did;
* else ``refused`` (a located SynthError) or ``accepted`` (loaded as a valid input: for
  ``synth diff`` against the pristine copy, identical in content).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import io
import json
import os
import random
import shutil
import sys
import traceback
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
    EXPORT_REPORT,
    MANIFEST,
    PLAN,
    PROVENANCE,
    PYTHON_STATE,
    RUN_RECORD,
    VERIFY_DOCUMENT,
    FileKind,
    load,
    read_audit,
)
from tests.distill_runs import NO_ENGINE, cmd, dist, make_run_dir, system_python, venv

RUN_KINDS = (RUN_RECORD, AUDIT_LOG, APT_STATE, PYTHON_STATE, DIFF_STATE, ENV_STATE,
             PROVENANCE, CLAIMS)
#: The artifact files a command reads back, and files its manifest lists (diff checks
#: every listed file against the manifest).
ARTIFACT_KINDS = (MANIFEST, CLAIMS, PLAN, VERIFY_DOCUMENT, EXPORT_REPORT)
ARTIFACT_PLAIN = ("Dockerfile", "requirements.lock", "apt.lock", "task.toml")
#: The kinds of input, in the order cases cycle through them.
INPUT_KINDS = ("task", "run", "artifact", "reb", "bench")
#: Outcomes that break a property.
FAILURES = ("traceback", "silent", "unlocated", "rewritten")
#: The content of a host file every world has beside it: it must never reach an output.
HOST_SECRET = "HOST-SECRET-5e4d3c2b1a"
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
    reb: Path
    bench: Path
    host_secret: Path


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
    secret = root / "host-secret.txt"
    secret.write_text(HOST_SECRET + "\n")
    return World(root, task_dir, run_dir, artifact, build_reb(root / "reb"),
                 build_bench(root / "bench"), secret)


def build_reb(root: Path) -> Path:
    """A ResearchEnvBench tree: a manifest of two repositories, their scripts, C0 totals."""
    (root / "m1_repo_manifest_module" / "manifests").mkdir(parents=True)
    (root / "m1_repo_manifest_module" / "manifests" / "manifest.json").write_text(json.dumps([
        {"repo_id": "Acme_Alpha", "repo_url": "https://github.com/acme/alpha.git",
         "commit_sha": "a" * 40, "hardware_bucket": "cpu"},
        {"repo_id": "acme-beta", "repo_url": "https://github.com/acme/beta",
         "commit_sha": "b" * 40, "hardware_bucket": "single_gpu",
         "unsupported": {"C4": "one GPU"}}], indent=1))
    for repo, scripts in (("acme@alpha", {"run_cpu_entrypoint.sh": "python3 train.py\n",
                                          "prepare_assets.sh": "mkdir -p assets\n"}),
                          ("acme@beta", {"run_single_gpu_entrypoint.sh": "python3 gpu.py\n"})):
        folder = root / "scripts" / repo / "benchmark_scripts"
        folder.mkdir(parents=True)
        for name, text in scripts.items():
            (folder / name).write_text("#!/usr/bin/env bash\n" + text)
    (root / "m5").mkdir()
    (root / "m5" / "c0_repo_baseline_totals.json").write_text(
        json.dumps({"repos": {"acme/alpha": 5, "other/repo": 9}}))
    return root


#: The bench world's task (tests/bench_task) and its one cell.
BENCH_TASK = Path(__file__).resolve().parent / "bench_task"
BENCH_CELL = "bench-tiny--good--r1"


def build_bench(root: Path) -> Path:
    """A results folder of a finished bench: one done cell and its start marker."""
    cell = root / "cells" / BENCH_CELL
    cell.mkdir(parents=True)
    (cell / "started.json").write_text(json.dumps({"started": 1796087968.0, "host": "vm",
                                                   "pid": 1, "executor": "local"}))
    record = {"format": 1, "cell": BENCH_CELL, "task": "bench-tiny", "agent": "good",
              "agent_kind": "replay", "repeat": 1, "executor": "local", "status": "done",
              "error": None, "started": 1796087968.0, "ended": 1796088020.0,
              "verify": {"passed": True, "levels": {"rebuilt": {"C0": "pass", "C1": "pass"}},
                         "highest": {"rebuilt": "C1"}, "reaches_live_level": None,
                         "fingerprint_equal": None, "error": None},
              "times": {"run": 1.0, "total": 2.0}}
    crashed = {**record, "status": "crashed", "error": "killed", "verify": None}
    (root / "cells.jsonl").write_text(json.dumps(crashed) + "\n" + json.dumps(record) + "\n")
    return root


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


def plant(path: Path, rng: random.Random, host_secret: Path, size: int = 200 << 20) -> str:
    """``path`` swapped for something no reader may take as the file: a link to a host
    file (or to /dev/zero), a FIFO, a folder, a sparse file over any cap."""
    how = rng.choice(["link", "link", "zero", "fifo", "folder", "giant"])
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if how == "link":
        path.symlink_to(host_secret)
        return "a symlink to a host file"
    if how == "zero":
        path.symlink_to("/dev/zero")
        return "a symlink to /dev/zero"
    if how == "fifo":
        os.mkfifo(path)
        return "a FIFO"
    if how == "folder":
        path.mkdir()
        return "a folder"
    with path.open("wb") as fh:  # sparse: costs no disk, and must never be read
        fh.truncate(size)
    return f"grown to {size} bytes"


def mutate(path: Path, kind: FileKind, rng: random.Random,
           host_secret: Path = Path("/etc/passwd")) -> str:
    """Mutate ``path`` in place (or remove it, or swap it for a link / FIFO / folder /
    giant)."""
    how = rng.random()
    if how < 0.06:
        path.unlink(missing_ok=True)
        return "deleted"
    if how < 0.14:
        return plant(path, rng, host_secret, max(kind.max_bytes + 1,
                                                 200 << 20 if kind is CLAIMS else 0))
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
        elif kind in (CLAIMS, PLAN, VERIFY_DOCUMENT, PROVENANCE, EXPORT_REPORT) and \
                not os.path.lexists(path):
            return False
        else:
            load(path, kind)
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
    frame = sys.modules["synth.cli.app"]  # the module main() reads its app from
    out, err = io.StringIO(), io.StringIO()
    old, app = sys.argv, frame.app
    sys.argv = ["synth", *argv]
    frame.app = _click_app()  # typer would rebuild it on every call (twice)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                cli.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        sys.argv, frame.app = old, app
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


# ----------------------------------------------------------------------------- judging
@dataclass(frozen=True)
class Case:
    """One case: its input kind, what was done, and the verdict."""

    kind: str
    what: str
    outcome: str
    detail: str = ""


class Judge:
    """The verdict of one case: its first failure, else refused or accepted."""

    def __init__(self) -> None:
        self.outcome = "accepted"
        self.detail = ""

    def fail(self, outcome: str, detail: str) -> None:
        if self.outcome not in FAILURES:
            self.outcome, self.detail = outcome, detail[-3000:]

    def saw_refusal(self, message: str, *names: str) -> None:
        """A SynthError: located when its message names the mutated file."""
        if not any(n and n in message for n in names):
            self.fail("unlocated", f"the error names none of {names}: {message[:600]}")
        elif self.outcome == "accepted":
            self.outcome = "refused"

    def cli(self, *argv: str) -> tuple[int, str, str]:
        """``synth ARGV`` in-process; a traceback or a foreign exit code is a failure."""
        try:
            code, out, err = run_cli(*argv)
        except Exception:  # the property: nothing but a SynthError escapes
            self.fail("traceback", f"synth {' '.join(argv)}: {traceback.format_exc()}")
            return -1, "", ""
        if code != 0 and code not in ERROR_CODES and code not in (1, 2):
            self.fail("traceback", f"synth {' '.join(argv)}: exit {code}: {err[-1500:]}")
        return code, out, err


def _message(out: str, err: str) -> str:
    """The error of a ``--json`` command (its envelope's message), else its stderr."""
    try:
        doc = json.loads(out)
    except ValueError:
        return err
    if isinstance(doc.get("error"), dict):
        return str(doc["error"].get("message"))
    tasks = (doc.get("result") or {}).get("tasks") if isinstance(doc.get("result"), dict) \
        else None
    if isinstance(tasks, list):  # task check: each path's own error
        return "\n".join(str(t.get("error") or t.get("skipped") or "") for t in tasks
                         if isinstance(t, dict)) + err
    return err


def _unchanged(judge: Judge, before: dict[str, bytes], root: Path, world: World) -> None:
    if snapshot(root) != before:
        judge.fail("rewritten", f"a file under {root} changed")
    if world.host_secret.read_text() != HOST_SECRET + "\n":
        judge.fail("rewritten", "the host file changed")


def _leaks(root: Path) -> bool:
    """Whether the host file's content reached any file under ``root``."""
    for p in root.rglob("*") if root.exists() else ():
        if p.is_file() and not p.is_symlink() and p.stat().st_size < 64 << 20 and \
                HOST_SECRET.encode() in p.read_bytes():
            return True
    return False


# ---------------------------------------------------------------------------- task files
#: Values a task file must refuse, each (text replaced, replacement).
TASK_HOSTILE: list[tuple[str, str]] = [
    ('path = "repo"', f'path = "{v}"') for v in
    ("/", "/etc", "/proc/self", "../../..", "repo/../..", "..", "~root", "repo\\u0000")] + [
    ('path = "repo"', f'url = "{u}"\ncommit = "abcdef1"') for u in
    ("-oProxyCommand=touch /tmp/x", "ssh://-oProxyCommand=x/y", "ext::sh -c id",
     "https://u:p@h/r", "git@h:o/r", "/srv/repo", "https://h/\\u001b[2J")] + [
    ('path = "repo"', 'url = "https://h/r.git"\ncommit = "--upload-pack=x"'),
    ('command = "python -c', 'timeout = true\ncommand = "python -c'),
    ('command = "python -c', 'timeout = 60.0\ncommand = "python -c'),
    ('command = "python -c', 'command = "\\u0000python -c'),
    ('[not_applicable]', '[probes]\nworkdir = "relative"\n[not_applicable]'),
    ('[not_applicable]', '[probes]\nworkdir = "/a/../b"\n[not_applicable]'),
    ('[not_applicable]', '[probes]\nnative_modules = ["-x"]\n[not_applicable]'),
    ('[not_applicable]', '[limits]\ncpus = inf\n[not_applicable]'),
    ('[not_applicable]', '[python]\nwheelhouse = 1\n[not_applicable]'),
    ('base_image = "synth/python:bookworm"', 'base_image = "-v /:/host"'),
]


def check_task_case(world: World, case: Path, rng: random.Random) -> tuple[str, Judge]:
    """Mutate task.toml in a copy of the task folder: refused with the file named, or a
    task; a hostile value is always refused."""
    judge = Judge()
    task_dir = case / "demo"
    shutil.copytree(world.task_dir, task_dir, symlinks=True)
    path = task_dir / "task.toml"
    data = path.read_bytes()
    how = rng.random()
    must_refuse = True
    if how < 0.15:
        what = f"task.toml: {plant(path, rng, world.host_secret, 2 << 20)}"
    elif how < 0.5:
        old, new = rng.choice(TASK_HOSTILE)
        path.write_bytes(data.replace(old.encode(), new.encode(), 1))
        what = f"task.toml: {old!r} -> {new!r}"
    else:
        new_data, what = _mutate_bytes(data, rng)
        path.write_bytes(new_data)
        what, must_refuse = f"task.toml: {what}", False
    before = snapshot(case)
    code, out, err = judge.cli("task", "check", str(task_dir), "--json")
    if code == 0 and must_refuse:
        judge.fail("silent", f"{what}: accepted by task check")
    elif code not in (0, -1):
        # (a task.toml that is a link is named by the file it reads)
        judge.saw_refusal(_message(out, err), str(task_dir), "task.toml",
                          os.path.realpath(path))
    if code == 0 and "repo.path" in what:
        from synth.formats.task import load_task

        repo = load_task(task_dir).repo_path
        if repo is None or not repo.is_relative_to(task_dir.resolve()):
            judge.fail("silent", f"{what}: repo.path {repo} leaves the task folder")
    _unchanged(judge, before, case, world)
    return what, judge


# ------------------------------------------------------------------------ run directories
def _same_content(a: Path, b: Path, kind: FileKind) -> bool:
    """The pristine file and the mutant say the same (claims: the same JSON)."""
    if os.path.lexists(a) != os.path.lexists(b):
        return False
    if not os.path.lexists(a):
        return True
    if b.is_symlink() or not b.is_file():
        return False
    if a.read_bytes() == b.read_bytes():
        return True
    if kind is CLAIMS:
        try:
            return bool(json.loads(a.read_bytes()) == json.loads(b.read_bytes()))
        except (ValueError, RecursionError):
            return False
    return False


def check_run_case(world: World, case: Path, rng: random.Random) -> tuple[str, Judge]:
    """Mutate one run file in a copy of the run; export, diff, runs list/show keep the
    properties."""
    judge = Judge()
    kind = rng.choice(RUN_KINDS)
    run_dir = case / "runs" / "demo" / world.run_dir.name
    shutil.copytree(world.run_dir, run_dir, symlinks=True)
    what = f"{kind.rel}: {mutate(run_dir / kind.rel, kind, rng, world.host_secret)}"
    bad = refused(run_dir / kind.rel, kind)
    claims = run_dir / kind.rel
    claims_only = kind is CLAIMS and not claims.is_symlink() and claims.is_file() and (
        claims.stat().st_size <= kind.max_bytes)
    name = kind.rel.rsplit("/", 1)[-1]
    before = snapshot(case)
    out = case / "out"
    code, stdout, stderr = judge.cli("export", "--run", str(run_dir), "-o", str(out), "--json")
    if bad and not claims_only and (code == 0 or out.exists()):
        judge.fail("silent", f"{what}: exported (code {code}) from a file the store refuses")
    if bad and claims_only and code == 0 and "claims.json is not valid" not in stdout:
        judge.fail("silent", f"{what}: exported without a warning about the claims")
    if code not in (0, -1):
        judge.saw_refusal(_message(stdout, stderr), name, str(run_dir))
    shutil.rmtree(out, ignore_errors=True)
    code, stdout, stderr = judge.cli("diff", str(world.run_dir), str(run_dir), "--json")
    if bad and code != 2:
        judge.fail("silent", f"{what}: diff exit {code} on a file the store refuses")
    if code == 2:
        judge.saw_refusal(_message(stdout, stderr), name, str(run_dir))
    if code == 0 and not _same_content(world.run_dir / kind.rel, run_dir / kind.rel, kind) \
            and not _another_run(world.run_dir, run_dir):
        judge.fail("silent", f"{what}: diff calls the changed copy equal")
    code, stdout, stderr = judge.cli("runs", "list", "--artifacts", str(case), "--json")
    if code == 0 and kind is RUN_RECORD and bad:
        listed = [r["run_dir"] for r in json.loads(stdout)["result"]["runs"]]
        if listed or not ("skipped" in stderr or not os.path.lexists(run_dir / kind.rel)):
            judge.fail("silent", f"{what}: runs list took the run ({listed}) or said nothing")
    judge.cli("runs", "show", str(run_dir), "--json")
    _unchanged(judge, before, case, world)
    return what, judge


def _another_run(a: Path, b: Path) -> bool:
    """The mutant's run.json names another run id: it is another run, whose environment
    may well equal the pristine one's (diff compares environments)."""
    try:
        return bool(json.loads((a / "run.json").read_bytes())["run_id"]
                    != json.loads((b / "run.json").read_bytes())["run_id"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False


# ------------------------------------------------------------------------ artifact folders
def check_artifact_case(world: World, case: Path, rng: random.Random) -> tuple[str, Judge]:
    """Mutate one file in a copy of the artifact; verify and diff against the pristine one
    keep the properties (verify stops before it needs an engine: no --rebuild)."""
    judge = Judge()
    art = case / "artifact"
    shutil.copytree(world.artifact, art, symlinks=True)
    listed = json.loads((world.artifact / "manifest.json").read_text())["files"]
    target = rng.choice([*(k.rel for k in ARTIFACT_KINDS), *ARTIFACT_PLAIN])
    kind = next((k for k in ARTIFACT_KINDS if k.rel == target), None)
    path = art / target
    if kind is not None:
        what = f"artifact {target}: {mutate(path, kind, rng, world.host_secret)}"
        bad = refused(path, kind)
    elif rng.random() < 0.15:
        what, bad = f"artifact {target}: {plant(path, rng, world.host_secret)}", True
    else:
        new, how = _mutate_bytes(path.read_bytes(), rng)
        path.write_bytes(new)
        what, bad = f"artifact {target}: {how}", False
    changed = not _same_content(world.artifact / target, path, kind or MANIFEST) or (
        kind is CLAIMS and not _same_content(world.artifact / target, path, MANIFEST))
    # A file the manifest lists, changed, is a corrupted artifact: never compared.
    bad = bad or (target in listed and changed) or (target == MANIFEST.rel and changed
                                                    and _files_of(path) != listed)
    before = snapshot(case)
    code, stdout, stderr = judge.cli("verify", str(art), "--json", "-o", str(case / "v"))
    if code == 0:
        judge.fail("silent", f"{what}: verify of an artifact without --rebuild passed")
    if code not in (-1, errors.UsageError.exit_code):
        judge.saw_refusal(_message(stdout, stderr), target, str(art))
    code, stdout, stderr = judge.cli("diff", str(world.artifact), str(art), "--json")
    if bad and code != 2:
        judge.fail("silent", f"{what}: diff exit {code} on a corrupted artifact")
    if code == 2:
        judge.saw_refusal(_message(stdout, stderr), target, str(art))
    if code == 0 and changed and not (target == VERIFY_DOCUMENT.rel and _same_pyramid(
            world.artifact / target, path)):
        judge.fail("silent", f"{what}: diff calls the changed copy equal")
    _unchanged(judge, before, case, world)
    return what, judge


def _files_of(manifest: Path) -> object:
    try:
        return json.loads(manifest.read_bytes())["files"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None


def _same_pyramid(a: Path, b: Path) -> bool:
    """verify.json is not the artifact's: a change that leaves its verdicts is no
    difference of the artifacts."""
    from synth.compare.load import pyramid_from_verify
    from synth.formats.store import read_verify

    try:
        return pyramid_from_verify(read_verify(a)) == pyramid_from_verify(read_verify(b))
    except errors.SynthError:
        return False


# ------------------------------------------------------------------------------ REB trees
REB_MANIFEST = Path("m1_repo_manifest_module") / "manifests" / "manifest.json"
#: (field, value) an entry must refuse.
REB_HOSTILE: list[tuple[str, Any]] = [
    ("repo_url", "-oProxyCommand=touch /tmp/x"), ("repo_url", "ext::sh -c id"),
    ("repo_url", "https://tok@github.com/acme/alpha"), ("repo_url", 7),
    ("repo_url", "git@github.com:acme/alpha"), ("commit_sha", "ABCDEF1"),
    ("commit_sha", "--upload-pack=x"), ("commit_sha", None), ("repo_id", ["x"]),
    ("repo_id", "x\x1b[2J"), ("repo_id", ""), ("hardware_bucket", {}),
    ("repo_id", "acme-beta"),  # two entries, one task name
]


def _mutate_reb(reb: Path, rng: random.Random, host_secret: Path) -> tuple[str, bool]:
    """One mutation of the tree; whether it must be refused."""
    scripts = reb / "scripts" / "acme@alpha" / "benchmark_scripts"
    target = rng.choice([REB_MANIFEST, REB_MANIFEST, scripts / "run_cpu_entrypoint.sh",
                         scripts / "prepare_assets.sh", Path("m5/c0_repo_baseline_totals.json"),
                         scripts])
    path = reb / target
    how = rng.random()
    if how < 0.2 or target == scripts:
        what = plant(path, rng, host_secret)
        # (an empty folder where REB's scripts folder was is one: nothing to refuse)
        return f"{target}: {what}", not (target == scripts and what == "a folder")
    if target == REB_MANIFEST and how < 0.6:
        doc = json.loads(path.read_text())
        key, value = rng.choice(REB_HOSTILE)
        doc[0][key] = value
        path.write_text(json.dumps(doc))
        return f"{target}: entry 0 {key} = {value!r}", True
    if target.name == "run_cpu_entrypoint.sh" and how < 0.4:
        path.write_bytes(b"#!/bin/bash\n\xff\xfe echo\n")
        return f"{target}: not UTF-8 (a level script is embedded in the task)", True
    new, what = _mutate_bytes(path.read_bytes(), rng)
    path.write_bytes(new)
    return f"{target}: {what}", False


def check_reb_case(world: World, case: Path, rng: random.Random) -> tuple[str, Judge]:
    """Mutate a copy of the REB tree and import it: refused naming the file, with nothing
    written, or tasks that all load; a host file never reaches them."""
    judge = Judge()
    reb = case / "reb"
    shutil.copytree(world.reb, reb, symlinks=True)
    what, must_refuse = _mutate_reb(reb, rng, world.host_secret)
    before = snapshot(reb)
    out = case / "tasks"
    code, stdout, stderr = judge.cli("task", "import-reb", str(reb), "-o", str(out), "--json")
    if code == 0:
        if must_refuse:
            judge.fail("silent", f"{what}: imported")
        tasks = json.loads(stdout)["result"]["tasks"]
        if tasks:
            c2, o2, e2 = judge.cli("task", "check", *tasks, "--json")
            if c2 != 0:
                judge.fail("silent", f"{what}: imported a task that does not load: "
                           f"{_message(o2, e2)[:400]}")
    elif code != -1:
        judge.saw_refusal(_message(stdout, stderr), str(reb))
        if out.exists():
            judge.fail("silent", f"{what}: refused, yet wrote {out}")
    if _leaks(out):
        judge.fail("silent", f"{what}: the host file's content reached the tasks")
    _unchanged(judge, before, reb, world)
    return what, judge


# ----------------------------------------------------------------- bench results folders
def bench_line_ok(raw: bytes) -> bool:
    """An oracle of its own for a line of cells.jsonl: a JSON object with the strings,
    numbers and tables the summary reads."""
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    if not isinstance(rec, dict):
        return False
    strings = all(isinstance(rec.get(k), str) and rec[k] for k in ("cell", "agent", "task",
                                                                      "status"))
    numbers = all(isinstance(rec[k], int | float) and not isinstance(rec[k], bool)
                  for k in ("started", "ended") if k in rec)
    tables = all(rec.get(k) is None or isinstance(rec[k], dict)
                 for k in ("times", "verify", "export", "run"))
    if not (strings and numbers and tables):
        return False
    times_ok = all(isinstance(v, int | float) and not isinstance(v, bool)
                   for v in (rec.get("times") or {}).values())
    v = rec.get("verify") or {}
    levels, highest = v.get("levels") or {}, v.get("highest") or {}
    errors_ok = all(e is None or isinstance(e, str) for e in (
        rec.get("error"), v.get("error"), (rec.get("export") or {}).get("error")))
    return times_ok and errors_ok and \
        isinstance(levels, dict) and all(isinstance(t, dict) and all(
            isinstance(x, str) for x in t.values()) for t in levels.values()) and \
        isinstance(highest, dict) and all(h is None or isinstance(h, str)
                                          for h in highest.values()) and all(
        v.get(k) is None or isinstance(v[k], bool)
        for k in ("passed", "reaches_live_level", "fingerprint_equal"))


def _mutate_bench(folder: Path, rng: random.Random, host_secret: Path) -> tuple[str, bool]:
    how = rng.random()
    cells = folder / "cells.jsonl"
    if how < 0.15:
        target = rng.choice(["cells.jsonl", "summary.json", "report.html", "cells"])
        what = plant(folder / target, rng, host_secret)
        # A link or a FIFO is refused; so is a folder where a file belongs. A big regular
        # file (under the cap) is a file; an empty folder where `cells/` belongs, a folder.
        must = what.startswith(("a symlink", "a FIFO")) or (what == "a folder"
                                                            and target != "cells")
        return f"{target}: {what}", must
    if how < 0.3:
        started = folder / "cells" / BENCH_CELL / "started.json"
        if rng.random() < 0.3:
            return f"started.json: {plant(started, rng, host_secret)}", False
        new, what = _mutate_bytes(started.read_bytes(), rng)
        started.write_bytes(new)
        return f"started.json: {what}", False
    if how < 0.65:
        new_text, what = _mutate_json_text(cells.read_text(), rng, jsonl=True)
        cells.write_text(new_text)
        return f"cells.jsonl: {what}", False
    new, what = _mutate_bytes(cells.read_bytes(), rng)
    cells.write_bytes(new)
    return f"cells.jsonl: {what}", False


@contextlib.contextmanager
def _fake_executor() -> Iterator[None]:
    """``synth bench``'s local executor, each cell finished at once (no engine)."""
    from synth.bench import run as bench_run
    from synth.bench.cell import new_record

    def fake_local(cells: list[Any], opts: Any, on_start: Any, on_done: Any) -> None:
        for cell in cells:
            on_start(cell)
            rec = new_record(cell, "local", 60)
            rec.update(ended=rec["started"] + 1, times={"total": 1.0}, files={})
            on_done(rec)

    real = bench_run.run_local
    bench_run.run_local = fake_local  # type: ignore[assignment]
    try:
        yield
    finally:
        bench_run.run_local = real  # type: ignore[assignment]


def check_bench_case(world: World, case: Path, rng: random.Random) -> tuple[str, Judge]:
    """Mutate a copy of a finished bench's results folder and resume it: a located error,
    or a resumed bench whose damaged lines were each named in a warning."""
    from synth.bench import run as bench_run
    from synth.bench.matrix import AgentSpec
    from synth.config import Settings

    judge = Judge()
    folder = case / "bench"
    shutil.copytree(world.bench, folder, symlinks=True)
    what, must_refuse = _mutate_bench(folder, rng, world.host_secret)
    cells = folder / "cells.jsonl"
    bad_lines = ([n for n, raw in enumerate(cells.read_bytes().split(b"\n"), 1)
                  if raw.strip() and not bench_line_ok(raw)]
                 if cells.is_file() and not cells.is_symlink() else [])
    said: list[str] = []
    opts = bench_run.BenchOptions(tasks=[BENCH_TASK], agents=[AgentSpec.parse("good")],
                                  out_dir=folder)
    try:
        with _fake_executor():
            bench_run.run_bench(opts, Settings.load(artifacts_dir=case / "art"), said.append)
    except errors.SynthError as exc:
        judge.saw_refusal(exc.message, str(folder))
    except Exception:  # the property: nothing but a SynthError escapes
        judge.fail("traceback", f"{what}: {traceback.format_exc()}")
    else:
        if must_refuse:
            judge.fail("silent", f"{what}: the bench resumed over it")
        for n in bad_lines:
            if not any(f"cells.jsonl:{n}:" in m for m in said):
                judge.fail("silent", f"{what}: line {n} is damaged and no warning names it")
    if world.host_secret.read_text() != HOST_SECRET + "\n":
        judge.fail("rewritten", f"{what}: the host file changed")
    return what, judge


# ---------------------------------------------------------------------------- driving
Check = Callable[[World, Path, random.Random], tuple[str, Judge]]
CHECKS: dict[str, Check] = {"task": check_task_case, "run": check_run_case,
                            "artifact": check_artifact_case, "reb": check_reb_case,
                            "bench": check_bench_case}


def run_cases(world: World, count: int, seed: int, scratch: Path,
              kinds: tuple[str, ...] = INPUT_KINDS) -> list[Case]:
    """``count`` seeded cases of each kind in ``kinds`` (round robin); the verdict of each.
    Case ``i`` of a seed is the same mutation on every run."""
    done: list[Case] = []
    for i in range(count * len(kinds)):
        kind = kinds[i % len(kinds)]
        case = scratch / f"case{i}"
        case.mkdir(parents=True)
        rng = random.Random(f"{seed}:{kind}:{i // len(kinds)}")
        what, judge = CHECKS[kind](world, case, rng)
        done.append(Case(kind, what, judge.outcome, judge.detail))
        _remove(case)
        # A refused case leaves cyclic garbage (an exception's traceback and its frames),
        # some of it with finalizers (a temporary folder's): collected here, at a shallow
        # stack, rather than whenever the collector next runs, which may be deep inside the
        # next case's located-error walk of a 1,000-level mutant, where the finalizer itself
        # then hits the recursion limit.
        gc.collect()
    return done


def _remove(case: Path) -> None:
    """A case's folder, whatever a mutation left in it (a FIFO, a link)."""
    shutil.rmtree(case, ignore_errors=True)


def stats(done: list[Case]) -> dict[str, dict[str, int]]:
    """Per input kind: cases, and how many ended in each outcome."""
    by: dict[str, dict[str, int]] = {}
    for c in done:
        row = by.setdefault(c.kind, {"cases": 0, "accepted": 0, "refused": 0,
                                     **dict.fromkeys(FAILURES, 0)})
        row["cases"] += 1
        row[c.outcome] += 1
    return by


def failures(done: list[Case]) -> list[Case]:
    return [c for c in done if c.outcome in FAILURES]
