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
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from synth.engine.base_images import RESEARCH_BASE
from synth.errors import TaskError, UsageError
from synth.plugins.reb import categories
from synth.plugins.reb.assets_fetch import extract_assets
from synth.plugins.reb.categories import LevelSupport
from synth.plugins.reb.mirror import MirrorCheck, check_mirror
from synth.util import atomic

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
        raise TaskError(f"{path}: not valid JSON: {exc}") from exc
    entries = data.get("repos", data.get("repositories")) if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise TaskError(f"{path}: expected a list of repositories (or {{\"repos\": [...]}}).")
    repos = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise TaskError(f"{path}: entry {i} is not an object.")
        missing = [k for k in REQUIRED if not isinstance(entry.get(k), str) or not entry[k]]
        if missing:
            raise TaskError(f"{path}: entry {i} ({entry.get('repo_id', '?')}): field(s) "
                            f"{', '.join(missing)} missing or not a string.")
        if not re.fullmatch(r"[0-9a-f]{7,40}", entry["commit_sha"]):
            raise TaskError(f"{path}: entry {i} ({entry['repo_id']}): `commit_sha` "
                            f"{entry['commit_sha']!r} is not a hex commit id.")
        repos.append(RebRepo(entry["repo_id"], entry["repo_url"], entry["commit_sha"],
                             str(entry.get("hardware_bucket") or ""), entry))
    return repos


def parse_mirrors(items: list[str]) -> dict[str, str]:
    mirrors: dict[str, str] = {}
    for item in items:
        url, sep, path = item.partition("=")
        if not sep or not url or not path:
            raise UsageError(f"--mirror {item!r}: expected URL=PATH.")
        mirrors[url] = str(Path(path).expanduser().resolve())
    return mirrors


def _toml_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def _embedded(script: Path) -> str:
    """The level's probe: ``bash benchmark_scripts/NAME`` from the repository folder, where
    REB runs it (its scripts find the repository, ``runner.py`` and their helpers from their
    own path). The REB profile installs REB's whole folder there before the probes; the
    script's text travels in the task file too, written only where the folder is absent (a
    runtime without the profile), so the command never depends on the session."""
    name = shlex.quote(script.name)
    return (f"mkdir -p benchmark_scripts\n"
            f"if [ ! -f benchmark_scripts/{name} ]; then\n"
            f"cat > benchmark_scripts/{name} <<'{_DELIM}'\n"
            f"{script.read_text(encoding='utf-8').rstrip(chr(10))}\n{_DELIM}\n"
            f"fi\nbash benchmark_scripts/{name}\n")


def _missing_script(name: str, repo_id: str) -> str:
    """A level REB scores whose script is absent: REB's run_all finds no results.json and
    counts the stage failed; so does this probe."""
    return (f"echo {shlex.quote(f'REB has no {name} for {repo_id}: no results.json')} >&2\n"
            "exit 1\n")


def task_toml(repo: RebRepo, url: str, scripts: Path | None,
              support: Mapping[str, LevelSupport] | None = None,
              base_image: str = RESEARCH_BASE) -> str:
    """The task file: REB's URL and commit, the level scripts REB scores as probes, the
    levels it does not score ``not_applicable`` with its reason."""
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
        script = scripts / LEVEL_SCRIPTS[level] if scripts is not None else None
        command = (_embedded(script) if script is not None and script.is_file()
                   else _missing_script(LEVEL_SCRIPTS[level], repo.repo_id))
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


def _write_task(repo: RebRepo, reb_dir: Path, out_dir: Path, url: str,
                row: Mapping[str, str] | None, total: int | None, base_image: str) -> Path:
    scripts = reb_dir / "scripts" / repo.owner_repo / "benchmark_scripts"
    task_dir = out_dir / repo.task_name
    support = categories.supports(row)
    atomic.write_text(task_dir / "task.toml", task_toml(
        repo, url, scripts if scripts.is_dir() else None, support, base_image))
    if scripts.is_dir():
        dest = task_dir / "reb" / "benchmark_scripts"
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(scripts, dest, symlinks=True)
    atomic.write_json(task_dir / "reb" / "manifest-entry.json", repo.entry)
    atomic.write_json(task_dir / "reb" / "applicability.json",
                      _applicability(repo, row, support))
    atomic.write_json(task_dir / "reb" / "assets.json",
                      extract_assets(scripts if scripts.is_dir() else None))
    if total is not None:
        atomic.write_json(task_dir / "reb" / "c0_total.json",
                          {"repo_full_name": repo.full_name, "total": total})
    return task_dir


def report_import(outcome: ImportOutcome) -> None:
    """Raise, naming every mirror that lacks what its task needs (the other tasks are
    written)."""
    if outcome.incomplete:
        raise TaskError("Some mirrors cannot serve their commit, so no task was written for "
                        "them:\n  " + "\n  ".join(outcome.problems()),
                        hint=f"{NO_ARCHIVES}: fetch the missing objects into the mirror (a "
                        "full clone), or import without --mirror to clone from the URL.")


def import_reb(reb_dir: Path, out_dir: Path, repo_ids: list[str] | None = None,
               mirrors: dict[str, str] | None = None,
               base_image: str = RESEARCH_BASE) -> ImportOutcome:
    """Write one task folder per selected repository under ``out_dir``. A repository whose
    ``--mirror`` lacks its commit or some of its files gets no task; the outcome lists
    what each such mirror lacks."""
    repos = read_manifest(reb_dir)
    known = {r.repo_id for r in repos}
    unknown = sorted(set(repo_ids or ()) - known)
    if unknown:
        raise UsageError(f"--repo {', '.join(unknown)}: not in the manifest.",
                         hint=f"Known: {', '.join(sorted(known))}.")
    totals = read_c0_totals(reb_dir)
    rows = categories.read_rows(reb_dir / categories.CATEGORIES)
    written, incomplete = [], []
    for repo in repos:
        if repo_ids and repo.repo_id not in repo_ids:
            continue
        url = (mirrors or {}).get(repo.repo_url, repo.repo_url)
        if url != repo.repo_url:
            check = check_mirror(Path(url), repo.commit_sha)
            if not check.complete:
                incomplete.append(check)
                continue
        row = categories.find_row(rows, repo.owner_repo, repo.repo_url)
        written.append(_write_task(repo, reb_dir, out_dir, url, row,
                                   totals.get(repo.full_name.lower()), base_image))
    return ImportOutcome(written, incomplete)


def read_c0_totals(reb_dir: Path) -> dict[str, int]:
    """REB's per-repo C0 totals (lower-cased ``owner/repo`` -> count); {} without the file."""
    path = reb_dir / C0_TOTALS
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{path}: not valid JSON: {exc}") from exc
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, dict):
        raise TaskError(f"{path}: expected {{\"repos\": {{\"owner/repo\": N, ...}}}}.")
    return {str(k).strip().lower(): v for k, v in repos.items()
            if isinstance(v, int) and not isinstance(v, bool) and v > 0}
