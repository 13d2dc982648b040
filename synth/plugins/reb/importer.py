"""``synth task import-reb REB_DIR``: one synth task per REB repository.

REB's layout: ``m1_repo_manifest_module/manifests/manifest.json`` lists the repositories
(``repo_url``, ``commit_sha``, ``repo_id``, ``hardware_bucket``); each has probe scripts
under ``scripts/<owner>@<repo>/benchmark_scripts/``. A task gets the URL (or its local
mirror, ``--mirror URL=PATH``) and the commit; REB's probe scripts are copied beside the
task file (``reb/benchmark_scripts/``, never into the session: only the repository is) and
the level scripts are embedded in the task's probe commands, so they run at verify time in
the image under test, as ``benchmark_scripts/NAME`` from the repository folder as REB runs
them. Levels REB does not support for a repository (its hardware bucket, or a missing
script) become ``not_applicable`` with the reason. REB's fixed C0 denominator for the
repository (``m5/c0_repo_baseline_totals.json``) goes to ``reb/c0_total.json`` for
``verify --scoring reb``; ``prepare_assets.sh`` makes the task's assets step
(:mod:`synth.plugins.reb.assets`), and ``reb/manifest-entry.json`` marks the task as REB's, so its
claims follow the ``reb`` profile (:mod:`synth.plugins.reb.profile`).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.errors import TaskError, UsageError
from synth.util import atomic

MANIFEST = Path("m1_repo_manifest_module") / "manifests" / "manifest.json"
REQUIRED = ("repo_url", "commit_sha", "repo_id", "hardware_bucket")
#: synth level -> REB's script for it (run in the repository's folder); then older names.
LEVEL_SCRIPTS = {"C1": ("run_cpu_entrypoint.sh",),
                 "C3": ("run_single_gpu_entrypoint.sh", "run_single_gpu.sh"),
                 "C4": ("run_multi_gpu_entrypoint.sh", "run_multi_gpu.sh")}
ASSETS_SCRIPT = "prepare_assets.sh"
#: REB's fixed C0 denominators (repo_full_name -> imported packages).
C0_TOTALS = Path("m5") / "c0_repo_baseline_totals.json"
#: REB hardware buckets -> the levels they leave out, with the reason.
BUCKET_UNSUPPORTED = {
    "cpu": {"C2": "REB hardware_bucket cpu: the repository needs no GPU",
            "C3": "REB hardware_bucket cpu: the repository needs no GPU",
            "C4": "REB hardware_bucket cpu: the repository needs no GPU"},
    "single_gpu": {"C4": "REB hardware_bucket single_gpu: no multi-GPU stage"},
}
_DELIM = "SYNTH_REB_PROBE_EOF"


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


def read_manifest(reb_dir: Path) -> list[RebRepo]:
    path = reb_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"{reb_dir} has no REB manifest at {MANIFEST}.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{path}: not valid JSON: {exc}", path=path) from exc
    entries = data.get("repos", data.get("repositories")) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise TaskError(f"{path}: expected a list of repositories (or {{\"repos\": [...]}}).",
                        path=path)
    repos = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise TaskError(f"{path}: entry {i} is not an object.", path=path, field=f"[{i}]")
        missing = [k for k in REQUIRED if not isinstance(entry.get(k), str) or not entry[k]]
        if missing:
            raise TaskError(f"{path}: entry {i} ({entry.get('repo_id', '?')}): field(s) "
                            f"{', '.join(missing)} missing or not a string.", path=path,
                            field=f"[{i}].{missing[0]}")
        if not re.fullmatch(r"[0-9a-f]{7,40}", entry["commit_sha"]):
            raise TaskError(f"{path}: entry {i} ({entry['repo_id']}): `commit_sha` "
                            f"{entry['commit_sha']!r} is not a hex commit id.", path=path,
                            field=f"[{i}].commit_sha")
        repos.append(RebRepo(entry["repo_id"], entry["repo_url"], entry["commit_sha"],
                             entry["hardware_bucket"], entry))
    return repos


def parse_mirrors(items: list[str]) -> dict[str, str]:
    mirrors: dict[str, str] = {}
    for item in items:
        url, sep, path = item.partition("=")
        if not sep or not url or not path:
            raise UsageError(f"--mirror {item!r}: expected URL=PATH.", option="--mirror")
        mirrors[url] = str(Path(path).expanduser().resolve())
    return mirrors


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def _embedded(script: Path) -> str:
    """The script as one ``bash -c`` command: the text travels in the task file, so it
    reaches the image under test at verify time without ever being in the session. It
    runs as ``benchmark_scripts/NAME`` from the repository folder, where REB runs it (its
    scripts find the repository from their own path); the assets step installs REB's
    whole folder there first, and then its copy is the one run."""
    name = shlex.quote(script.name)
    return (f"mkdir -p benchmark_scripts\n"
            f"if [ ! -f benchmark_scripts/{name} ]; then\n"
            f"cat > benchmark_scripts/{name} <<'{_DELIM}'\n"
            f"{script.read_text(encoding='utf-8').rstrip(chr(10))}\n{_DELIM}\n"
            f"fi\nbash benchmark_scripts/{name}\n")


def _level_script(scripts: Path | None, names: tuple[str, ...]) -> Path | None:
    if scripts is None:
        return None
    return next((scripts / n for n in names if (scripts / n).is_file()), None)


def task_toml(repo: RebRepo, url: str, scripts: Path | None) -> str:
    unsupported = dict(BUCKET_UNSUPPORTED.get(repo.hardware_bucket, {}))
    for level, reason in (repo.entry.get("unsupported") or {}).items():
        unsupported[str(level)] = f"REB: {reason}"
    about = f"ResearchEnvBench {repo.repo_id} ({repo.hardware_bucket})"
    lines = [f"name = {_toml_str(repo.task_name)}", f"description = {_toml_str(about)}",
             'base_image = "synth/python:bookworm"', "", "[repo]",
             f"url = {_toml_str(url)}", f"commit = {_toml_str(repo.commit_sha)}", ""]
    probes: dict[str, str] = {}
    for level, names in LEVEL_SCRIPTS.items():
        script = _level_script(scripts, names)
        if level in unsupported:
            continue
        if script is not None:
            probes[level] = _embedded(script)
        else:
            unsupported[level] = f"REB has no {names[0]} for {repo.repo_id}"
    for level, table in (("C1", "probes.cpu"), ("C3", "probes.gpu"), ("C4", "probes.ddp")):
        if level in probes:
            lines += [f"[{table}]", f"command = {_toml_str(probes[level])}", "timeout = 1800", ""]
    if unsupported:
        lines.append("[not_applicable]")
        lines += [f"{lv} = {_toml_str(unsupported[lv])}" for lv in sorted(unsupported)]
    return "\n".join(lines) + "\n"


def import_reb(reb_dir: Path, out_dir: Path, repo_ids: list[str] | None = None,
               mirrors: dict[str, str] | None = None) -> list[Path]:
    """Write one task folder per selected repository under ``out_dir``; their paths."""
    repos = read_manifest(reb_dir)
    known = {r.repo_id for r in repos}
    unknown = sorted(set(repo_ids or ()) - known)
    if unknown:
        raise UsageError(f"--repo {', '.join(unknown)}: not in the manifest.",
                         hint=f"Known: {', '.join(sorted(known))}.", option="--repo")
    totals = read_c0_totals(reb_dir)
    written = []
    for repo in repos:
        if repo_ids and repo.repo_id not in repo_ids:
            continue
        scripts = reb_dir / "scripts" / repo.owner_repo / "benchmark_scripts"
        task_dir = out_dir / repo.task_name
        url = (mirrors or {}).get(repo.repo_url, repo.repo_url)
        atomic.write_text(task_dir / "task.toml",
                          task_toml(repo, url, scripts if scripts.is_dir() else None))
        if scripts.is_dir():
            dest = task_dir / "reb" / "benchmark_scripts"
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(scripts, dest)
        atomic.write_json(task_dir / "reb" / "manifest-entry.json", repo.entry)
        total = totals.get(repo.full_name.lower())
        if total is not None:
            atomic.write_json(task_dir / "reb" / "c0_total.json",
                              {"repo_full_name": repo.full_name, "total": total})
        written.append(task_dir)
    return written


def read_c0_totals(reb_dir: Path) -> dict[str, int]:
    """REB's per-repo C0 totals (lower-cased ``owner/repo`` -> count); {} without the file."""
    path = reb_dir / C0_TOTALS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{path}: not valid JSON: {exc}", path=path) from exc
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, dict):
        raise TaskError(f"{path}: expected {{\"repos\": {{\"owner/repo\": N, ...}}}}.",
                        path=path)
    return {str(k).strip().lower(): v for k, v in repos.items()
            if isinstance(v, int) and not isinstance(v, bool) and v > 0}
