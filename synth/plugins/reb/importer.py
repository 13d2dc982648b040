"""``synth task import-reb REB_DIR``: one synth task per REB repository.

REB's layout: ``m1_repo_manifest_module/manifests/manifest.json`` lists the repositories
(``repo_url``, ``commit_sha``, ``repo_id``; ``hardware_bucket`` is REB's GPU-allocation
policy, ``auto`` for all 44, and decides no level); ``scripts_repos_test_categories.csv``
says which levels REB scores for each (:mod:`synth.plugins.reb.categories`); each has
probe scripts under ``scripts/<owner>@<repo>/benchmark_scripts/``. A task gets the URL (or
its local mirror, ``--mirror URL=PATH``, checked complete first:
:mod:`synth.plugins.reb.mirror`) and the commit, and the research base image
(:data:`synth.engine.base_images.RESEARCH_BASE`, the tools REB's agent image offers) unless
``--base-image`` names another. REB's probe scripts are copied beside the task file
(``reb/benchmark_scripts/``, never into the session: only the repository is); the level
scripts are the task's probe commands, run at verify time in the image under test as
``benchmark_scripts/NAME`` from the repository folder, where the REB profile installs the
whole folder first (:mod:`synth.plugins.reb.probes`). A level REB does not score for the
repository becomes ``not_applicable`` with REB's reason; C0, C2 and C5 apply everywhere.
Beside the task: ``reb/applicability.json`` (REB's row and each level's support, for the
results' post-run override), ``reb/c0_total.json`` (REB's fixed C0 denominator,
``m5/c0_repo_baseline_totals.json``), ``reb/assets.json`` (what ``prepare_assets.sh``
downloads, for ``synth reb assets fetch``) and ``reb/manifest-entry.json``, the mark of a
REB task (its claims follow the ``reb`` profile, :mod:`synth.plugins.reb.profile`).

A REB tree is downloaded, so it is untrusted input (docs/security.md): every file is read
through :mod:`synth.util.safe_io` (regular files only, a link leading out of the REB
folder refused, a size cap), every manifest field is checked with the entry named, and
everything is read before anything is written. The tasks go into ``-o`` only where synth
alone wrote: a new or empty folder, or one synth imported into before (its
``.synth-reb-import.json`` lists every file synth wrote there with its sha256); a task
folder is replaced whole, and only while its files are exactly the ones synth wrote.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import tempfile
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.engine.base_images import RESEARCH_BASE
from synth.errors import InputFileError, TaskError, UsageError
from synth.formats import artifact_files
from synth.formats.store import parse_json
from synth.formats.task import commit_problem, repo_url_problem
from synth.plugins.reb import categories
from synth.plugins.reb.assets_fetch import extract_assets
from synth.plugins.reb.categories import LevelSupport
from synth.plugins.reb.mirror import MirrorCheck, check_mirror
from synth.util import atomic, safe_io

MANIFEST = Path("m1_repo_manifest_module") / "manifests" / "manifest.json"
REQUIRED = ("repo_url", "commit_sha", "repo_id")
#: synth level -> REB's script for it (run in the repository's folder).
LEVEL_SCRIPTS = {"C1": "run_cpu_entrypoint.sh", "C3": "run_single_gpu_entrypoint.sh",
                 "C4": "run_multi_gpu_entrypoint.sh"}
ASSETS_SCRIPT = "prepare_assets.sh"
C0_SCRIPT = "run_pyright_missing_imports.sh"
#: REB's fixed C0 denominators (repo_full_name -> imported packages).
C0_TOTALS = Path("m5") / "c0_repo_baseline_totals.json"
NO_ARCHIVES = ("REB ships no repository archives (its .gitignore leaves /repos/ out; its m2 "
               "clones each repository from GitHub at job time)")
_SCRIPT_NAMES = frozenset({ASSETS_SCRIPT, *LEVEL_SCRIPTS.values()})
_DELIM = "SYNTH_REB_PROBE_EOF"
#: What synth writes into an -o folder it imports into: every file, with its sha256.
IMPORT_RECORD = ".synth-reb-import.json"
IMPORT_FORMAT = 1
#: Caps on what a REB tree may make synth read.
MAX_MANIFEST_BYTES = 16 * safe_io.MiB
MAX_SCRIPT_BYTES = 4 * safe_io.MiB
MAX_SCRIPTS_BYTES = 64 * safe_io.MiB
MAX_SCRIPTS_FILES = 2000
MAX_FIELD_CHARS = 2048


@dataclass(frozen=True)
class RebRepo:
    repo_id: str
    repo_url: str
    commit_sha: str
    hardware_bucket: str
    entry: dict[str, Any]

    @property
    def owner_repo(self) -> str:
        """``owner@repo`` of a URL ``…/owner/repo(.git)``: REB's scripts folder name."""
        parts = self.repo_url.rstrip("/").removesuffix(".git").split("/")
        return f"{parts[-2]}@{parts[-1]}" if len(parts) >= 2 else parts[-1]

    @property
    def full_name(self) -> str:
        """``owner/repo``: REB's key for its C0 totals."""
        return self.owner_repo.replace("@", "/", 1)

    @property
    def task_name(self) -> str:
        name = re.sub(r"[^a-z0-9._-]+", "-", self.repo_id.lower()).strip("-._")
        return name or "reb-repo"


def _read_json(reb_dir: Path, rel: Path) -> Any:
    """A JSON file of the REB tree, read safely (safe_io) and parsed, errors located."""
    path = reb_dir / rel
    text = safe_io.decode_utf8(safe_io.read_beneath(reb_dir, rel, MAX_MANIFEST_BYTES), path)
    return parse_json(text, str(path))


def read_manifest(reb_dir: Path) -> list[RebRepo]:
    path = reb_dir / MANIFEST
    if not safe_io.lexists_beneath(reb_dir, MANIFEST):
        raise UsageError(f"{reb_dir} has no REB manifest at {MANIFEST}.")
    data = _read_json(reb_dir, MANIFEST)
    entries = data.get("repos", data.get("repositories")) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise TaskError(f"{path}: expected a list of repositories (or {{\"repos\": [...]}}).",
                        path=path)
    repos = [_repo(path, i, entry) for i, entry in enumerate(entries)]
    seen: dict[str, int] = {}
    for i, repo in enumerate(repos):
        if repo.task_name in seen:
            raise TaskError(f"{path}: entry {seen[repo.task_name]} and entry {i} both make "
                            f"the task name {repo.task_name!r} (from their repo_id).",
                            path=path, field=f"[{i}].repo_id")
        seen[repo.task_name] = i
    return repos


def _repo(path: Path, i: int, entry: object) -> RebRepo:
    """One manifest entry, every field synth uses checked; errors name the entry."""
    if not isinstance(entry, dict):
        raise TaskError(f"{path}: entry {i} is not an object.", path=path, field=f"[{i}]")
    repo_id = entry.get("repo_id")
    where = f"{path}: entry {i}" + (f" ({repo_id[:100]!r})" if isinstance(repo_id, str) else "")
    missing = [k for k in REQUIRED if not isinstance(entry.get(k), str) or not entry[k]]
    if missing:
        raise TaskError(f"{where}: field(s) {', '.join(missing)} missing or not a string.",
                        path=path, field=f"[{i}].{missing[0]}")
    for key in REQUIRED:
        value = entry[key]
        if len(value) > MAX_FIELD_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise TaskError(f"{where}: `{key}` is over {MAX_FIELD_CHARS} characters or holds "
                            "control characters.", path=path, field=f"[{i}].{key}")
    for key, problem in (("commit_sha", commit_problem(entry["commit_sha"])),
                         ("repo_url", repo_url_problem(entry["repo_url"]))):
        if problem:
            raise TaskError(f"{where}: `{key}` {entry[key][:200]!r} {problem}.", path=path,
                            field=f"[{i}].{key}")
    bucket = entry.get("hardware_bucket")
    if bucket is not None and not isinstance(bucket, str):
        raise TaskError(f"{where}: `hardware_bucket` is not a string.", path=path,
                        field=f"[{i}].hardware_bucket")
    return RebRepo(entry["repo_id"], entry["repo_url"], entry["commit_sha"],
                   bucket or "", entry)


def parse_mirrors(items: list[str]) -> dict[str, str]:
    mirrors: dict[str, str] = {}
    for item in items:
        url, sep, path = item.partition("=")
        if not sep or not url or not path:
            raise UsageError(f"--mirror {item!r}: expected URL=PATH.", option="--mirror")
        # A local mirror is a file:// URL, the form a task's repo.url takes for one.
        mirrors[url] = Path(path).expanduser().resolve().as_uri()
    return mirrors


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def _embedded(name: str, text: str) -> str:
    """The script as one ``bash -c`` command: the text travels in the task file, so it
    reaches the image under test at verify time without ever being in the session. It
    runs as ``benchmark_scripts/NAME`` from the repository folder, where REB runs it (its
    scripts find the repository from their own path); the assets step installs REB's
    whole folder there first, and then its copy is the one run."""
    quoted = shlex.quote(name)
    return (f"mkdir -p benchmark_scripts\n"
            f"if [ ! -f benchmark_scripts/{quoted} ]; then\n"
            f"cat > benchmark_scripts/{quoted} <<'{_DELIM}'\n"
            f"{text.rstrip(chr(10))}\n{_DELIM}\n"
            f"fi\nbash benchmark_scripts/{quoted}\n")


def _missing_script(name: str, repo_id: str) -> str:
    """A level REB scores whose script is absent: REB's run_all finds no results.json and
    counts the stage failed; so does this probe."""
    return (f"echo {shlex.quote(f'REB has no {name} for {repo_id}: no results.json')} >&2\n"
            "exit 1\n")


def task_toml(repo: RebRepo, url: str, scripts: Mapping[str, str] | None,
              support: Mapping[str, LevelSupport] | None = None,
              base_image: str = RESEARCH_BASE) -> str:
    """The task file: REB's URL and commit, the level scripts REB scores (``scripts``: by
    file name, their text) as probes, the levels it does not score ``not_applicable`` with
    its reason."""
    support = support or categories.supports(None)
    unsupported = {lv: categories.not_applicable_reason(lv, s)
                   for lv, s in support.items() if not s.supported}
    about = f"ResearchEnvBench {repo.repo_id} ({repo.full_name})"
    lines = [f"name = {_toml_str(repo.task_name)}", f"description = {_toml_str(about)}",
             f"base_image = {_toml_str(base_image)}", "", "[repo]",
             f"url = {_toml_str(url)}", f"commit = {_toml_str(repo.commit_sha)}", ""]
    for level, table in (("C1", "probes.cpu"), ("C3", "probes.gpu"), ("C4", "probes.ddp")):
        if level in unsupported:
            continue
        name = LEVEL_SCRIPTS[level]
        command = (_embedded(name, scripts[name]) if scripts and name in scripts
                   else _missing_script(name, repo.repo_id))
        lines += [f"[{table}]", f"command = {_toml_str(command)}", "timeout = 1800", ""]
    if unsupported:
        lines.append("[not_applicable]")
        lines += [f"{lv} = {_toml_str(unsupported[lv])}" for lv in sorted(unsupported)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ImportOutcome:
    """The task folders written, and the repositories whose mirror could not serve them
    (no task written for those)."""

    tasks: list[Path]
    incomplete: list[MirrorCheck] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [m.describe() for m in self.incomplete]


def _applicability(repo: RebRepo, row: Mapping[str, str] | None,
                   support: Mapping[str, LevelSupport]) -> dict[str, Any]:
    return {"repo": repo.full_name, "source": str(categories.CATEGORIES),
            "row": dict(row) if row is not None else None,
            "levels": {lv: s.to_json() for lv, s in support.items()}}


def report_import(outcome: ImportOutcome) -> None:
    """Raise, naming every mirror that lacks what its task needs (the other tasks are
    written)."""
    if outcome.incomplete:
        raise TaskError("Some mirrors cannot serve their commit, so no task was written for "
                        "them:\n  " + "\n  ".join(outcome.problems()),
                        hint=f"{NO_ARCHIVES}: fetch the missing objects into the mirror (a "
                        "full clone), or import without --mirror to clone from the URL.")


# ------------------------------------------------------------------ reading the tree
@dataclass
class _Scripts:
    """REB's ``benchmark_scripts/`` folder of one repository, read whole: relative path ->
    (bytes, executable)."""

    root: Path
    files: dict[str, tuple[bytes, bool]] = field(default_factory=dict)
    size: int = 0


def _walk_scripts(reb_dir: Path, rel: Path, out: _Scripts, prefix: str,
                  seen: set[str]) -> None:
    """Every file under ``reb_dir/rel`` into ``out``: links followed inside the REB folder
    only, a FIFO, device or socket refused, the count and size capped."""
    real = safe_io.resolve_beneath(reb_dir, rel)
    if str(real) in seen:
        raise InputFileError(f"{reb_dir / rel}: a link loop in REB's scripts folder")
    seen = seen | {str(real)}
    with os.scandir(reb_dir / real) as it:
        names = sorted(e.name for e in it)
    for name in names:
        child, path = rel / name, reb_dir / rel / name
        inside = safe_io.resolve_beneath(reb_dir, child)
        mode = os.lstat(reb_dir / inside).st_mode
        if stat.S_ISDIR(mode):
            if not prefix and name in _SCRIPT_NAMES:
                raise InputFileError(f"{path}: a folder; REB's script of that name was "
                                     "expected")
            _walk_scripts(reb_dir, child, out, f"{prefix}{name}/", seen)
            continue
        with safe_io.opened_beneath(reb_dir, child) as fd:
            executable = bool(os.fstat(fd).st_mode & stat.S_IXUSR)
            data = safe_io.read_fd(fd, path, MAX_SCRIPT_BYTES)
        out.size += len(data)
        out.files[prefix + name] = (data, executable)
        if len(out.files) > MAX_SCRIPTS_FILES or out.size > MAX_SCRIPTS_BYTES:
            raise InputFileError(f"{out.root}: over {MAX_SCRIPTS_FILES} files or "
                                 f"{MAX_SCRIPTS_BYTES} bytes; not REB's scripts folder")


def read_scripts(reb_dir: Path, repo: RebRepo) -> _Scripts | None:
    """REB's scripts of ``repo``, or None when REB has no folder for it."""
    rel = Path("scripts") / repo.owner_repo / "benchmark_scripts"
    if not safe_io.lexists_beneath(reb_dir, rel):
        return None
    real = safe_io.resolve_beneath(reb_dir, rel)
    if not (reb_dir / real).is_dir():
        raise InputFileError(f"{reb_dir / rel}: not a folder (REB's scripts folder was "
                             "expected)")
    out = _Scripts(reb_dir / rel)
    _walk_scripts(reb_dir, rel, out, "", set())
    return out


def _level_texts(scripts: _Scripts | None) -> dict[str, str]:
    """REB's level scripts (by name) as text: they are embedded in the task file."""
    if scripts is None:
        return {}
    out = {name: safe_io.decode_utf8(data, scripts.root / name)
           for name, (data, _x) in scripts.files.items()
           if name in _SCRIPT_NAMES and name != ASSETS_SCRIPT}
    for name, text in out.items():
        # Embedded in a probe command: no NUL (no command holds one), and not the line
        # that would end the here-document early.
        if "\x00" in text or _DELIM in text.splitlines():
            raise InputFileError(f"{scripts.root / name}: holds a NUL byte or a line "
                                 f"{_DELIM}; a level script is embedded in the task file")
    return out


def read_c0_totals(reb_dir: Path) -> dict[str, int]:
    """REB's per-repo C0 totals (lower-cased ``owner/repo`` -> count); {} without the file."""
    path = reb_dir / C0_TOTALS
    if not safe_io.lexists_beneath(reb_dir, C0_TOTALS):
        return {}
    data = _read_json(reb_dir, C0_TOTALS)
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, dict):
        raise TaskError(f"{path}: expected {{\"repos\": {{\"owner/repo\": N, ...}}}}.",
                        path=path)
    return {str(k).strip().lower(): v for k, v in repos.items()
            if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def read_categories(reb_dir: Path) -> list[dict[str, str]]:
    """REB's categories file's rows, read safely; [] without the file."""
    if not safe_io.lexists_beneath(reb_dir, categories.CATEGORIES):
        return []
    path = reb_dir / categories.CATEGORIES
    data = safe_io.read_beneath(reb_dir, categories.CATEGORIES, MAX_MANIFEST_BYTES)
    return categories.parse_rows(safe_io.decode_utf8(data, path).removeprefix("\ufeff"), path)


def task_files(reb_dir: Path, repo: RebRepo, url: str, totals: Mapping[str, int],
               row: Mapping[str, str] | None,
               base_image: str = RESEARCH_BASE) -> dict[str, tuple[bytes, bool]]:
    """Every file of ``repo``'s task folder (relative path -> (bytes, executable))."""
    scripts = read_scripts(reb_dir, repo)
    support = categories.supports(row)
    assets = [(name, safe_io.decode_utf8(data, scripts.root / name))
              for name, (data, _x) in sorted(scripts.files.items())
              if "/" not in name and name.startswith("prepare_assets")] if scripts else []
    files = {"task.toml": (task_toml(repo, url, _level_texts(scripts), support,
                                     base_image).encode("utf-8"), False),
             "reb/manifest-entry.json": (atomic.dumps_json(repo.entry).encode("utf-8"), False),
             "reb/applicability.json": (atomic.dumps_json(
                 _applicability(repo, row, support)).encode("utf-8"), False),
             "reb/assets.json": (atomic.dumps_json(
                 extract_assets(assets)).encode("utf-8"), False)}
    for rel, item in (scripts.files.items() if scripts else ()):
        files[f"reb/benchmark_scripts/{rel}"] = item
    total = totals.get(repo.full_name.lower())
    if total is not None:
        files["reb/c0_total.json"] = (atomic.dumps_json(
            {"repo_full_name": repo.full_name, "total": total}).encode("utf-8"), False)
    return files


# ------------------------------------------------------------------ writing the tasks
def _mirror_path(url: str) -> Path:
    return Path(urllib.parse.unquote(urllib.parse.urlparse(url).path))


def import_reb(reb_dir: Path, out_dir: Path, repo_ids: list[str] | None = None,
               mirrors: dict[str, str] | None = None,
               base_image: str = RESEARCH_BASE) -> ImportOutcome:
    """Write one task folder per selected repository under ``out_dir``. Everything is read
    (and refused) before anything is written. A repository whose ``--mirror`` lacks its
    commit or some of its files gets no task; the outcome lists what each such mirror
    lacks."""
    repos = read_manifest(reb_dir)
    known = {r.repo_id for r in repos}
    unknown = sorted(set(repo_ids or ()) - known)
    if unknown:
        raise UsageError(f"--repo {', '.join(unknown)}: not in the manifest.",
                         hint=f"Known: {', '.join(sorted(known))}.", option="--repo")
    totals = read_c0_totals(reb_dir)
    rows = read_categories(reb_dir)
    tasks: dict[str, dict[str, tuple[bytes, bool]]] = {}
    incomplete = []
    for repo in repos:
        if repo_ids and repo.repo_id not in repo_ids:
            continue
        url = (mirrors or {}).get(repo.repo_url, repo.repo_url)
        if url != repo.repo_url:
            check = check_mirror(_mirror_path(url), repo.commit_sha)
            if not check.complete:
                incomplete.append(check)
                continue
        row = categories.find_row(rows, repo.owner_repo, repo.repo_url)
        tasks[repo.task_name] = task_files(reb_dir, repo, url, totals, row, base_image)
    out_dir = out_dir.absolute()
    record = check_import_destination(out_dir, reb_dir, sorted(tasks))
    written = []
    for name, files in tasks.items():
        replace_task_folder(out_dir, name, files)
        record[name] = {"files": {rel: hashlib.sha256(data).hexdigest()
                                  for rel, (data, _x) in sorted(files.items())}}
        atomic.write_json(out_dir / IMPORT_RECORD, {"format": IMPORT_FORMAT,
                                                    "tasks": dict(sorted(record.items()))})
        written.append(out_dir / name)
    return ImportOutcome(written, incomplete)


def _read_record(out_dir: Path) -> dict[str, Any] | None:
    """The import record of ``out_dir`` (task -> {"files": {rel: sha256}}), None when the
    folder has none; an error when it is not one synth wrote."""
    path = out_dir / IMPORT_RECORD
    if not os.path.lexists(path):
        return None
    text = safe_io.decode_utf8(safe_io.read_regular(path, MAX_MANIFEST_BYTES), path)
    doc = parse_json(text, str(path))
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not (isinstance(doc, dict) and doc.get("format") == IMPORT_FORMAT
            and isinstance(tasks, dict) and all(
                isinstance(t, dict) and isinstance(t.get("files"), dict)
                and all(isinstance(d, str) for d in t["files"].values())
                for t in tasks.values())):
        raise InputFileError(f"{path}: not a synth REB import record (format "
                             f"{IMPORT_FORMAT})")
    return tasks


def check_import_destination(out_dir: Path, reb_dir: Path,
                             names: list[str]) -> dict[str, Any]:
    """Refuse ``-o`` where writing would replace what synth did not write; returns the
    folder's import record (empty for a new or empty folder)."""
    where = f"-o {out_dir}"
    if out_dir.is_symlink():
        raise UsageError(f"{where} is a symbolic link; synth does not write through it.")
    if os.path.realpath(reb_dir).startswith(os.path.realpath(out_dir) + os.sep) or \
            os.path.realpath(reb_dir) == os.path.realpath(out_dir):
        raise UsageError(f"{where} holds the REB folder {reb_dir}; give another folder.")
    if not out_dir.exists():
        return {}
    if not out_dir.is_dir():
        raise UsageError(f"{where} exists and is not a folder; synth will not replace it.")
    record = _read_record(out_dir)
    if record is None:
        if any(out_dir.iterdir()):
            raise UsageError(f"{where} is not empty and holds no {IMPORT_RECORD}: it is not a "
                             "folder synth imported REB tasks into, and synth replaces only "
                             "what it wrote.", hint="Give a new or empty folder.")
        return {}
    for name in names:
        if os.path.lexists(out_dir / name):
            _check_unchanged(out_dir / name, record.get(name))
    return record


def _check_unchanged(task_dir: Path, recorded: Mapping[str, Any] | None) -> None:
    """The task folder holds exactly the files synth wrote there, unchanged."""
    if recorded is None or task_dir.is_symlink() or not task_dir.is_dir():
        raise UsageError(f"{task_dir} was not written by synth's import; synth will not "
                         "replace it.", hint="Move it away, or import into a new folder.")
    want = dict(recorded["files"])
    try:
        have = artifact_files.digests(task_dir)
    except InputFileError as exc:
        raise UsageError(f"{task_dir}: {exc.message}; synth will not replace it.") from None
    changed = sorted(rel for rel in set(want) | set(have) if want.get(rel) != have.get(rel))
    if changed:
        raise UsageError(f"{task_dir} changed since synth imported it ("
                         + ", ".join(changed[:10]) + (" …" if len(changed) > 10 else "")
                         + "); synth will not replace those files.",
                         hint="Move the folder away (or restore it), then import again.")


def replace_task_folder(out_dir: Path, name: str, files: Mapping[str, tuple[bytes, bool]]
                        ) -> None:
    """``out_dir/name`` made anew: the files written into a fresh private folder beside it
    (each created, never opened through a link), then renamed into place; a previous task
    folder (checked unchanged) is renamed aside and removed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{name}.", dir=out_dir) as tmp_str:
        tmp = Path(tmp_str)
        new = tmp / name
        new.mkdir()
        for rel, (data, executable) in sorted(files.items()):
            path = new / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o755 if executable else 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        dest = out_dir / name
        if os.path.lexists(dest):
            os.replace(dest, tmp / "old")
        os.replace(new, dest)
        shutil.rmtree(tmp / "old", ignore_errors=True)
