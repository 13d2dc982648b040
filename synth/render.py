"""Render a :class:`BuildPlan` into the artifact's text files, with Jinja2 file templates.

Only ``templates/`` speaks Dockerfile. Templates use ``StrictUndefined`` (a missing variable
is an error, never an empty string) and keep trailing newlines. Everything rendered is a
pure function of the plan and the locks: no dates, sorted collections, the regenerating
command in each header.
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jinja2

import synth
from synth.atomic import dumps_json
from synth.config import CONTAINER_WHEELHOUSE
from synth.distill.lock import Lock, render_lock
from synth.distill.plan import BuildPlan
from synth.model import EXPORT_REPORT_FORMAT

_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


def templates_dir() -> Path:
    """``synth/templates`` in an installed wheel, else the repository's ``templates/``."""
    packaged = Path(synth.__file__).parent / "templates"
    if packaged.is_dir():
        return packaged
    return Path(synth.__file__).resolve().parent.parent / "templates"


def shquote(word: str) -> str:
    return word if _SAFE.match(word) else shlex.quote(word)


def shjoin(argv: Iterable[str]) -> str:
    return " ".join(shquote(a) for a in argv)


def shvalue(value: str) -> str:
    """A value for ``NAME=value`` in a shell: ``$VAR`` references still expand."""
    if _SAFE.match(value) or re.match(r"^[A-Za-z0-9_@%+=:,./${}-]+$", value):
        return value
    if "$" in value:
        return '"' + re.sub(r'(["\\`])', r"\\\1", value) + '"'
    return shlex.quote(value)


def dockerenv(value: str) -> str:
    """A value for Dockerfile ``ENV NAME=value`` (``$VAR`` expands, as in the shell)."""
    if value and re.match(r"^[^\s\"'\\]+$", value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def mdcode(text: str) -> str:
    """Inline code in a Markdown table cell: one line, no pipes or backticks breaking it."""
    one = " ".join(text.split())
    if len(one) > 160:
        one = one[:157] + "..."
    return one.replace("|", "\\|").replace("`", "'")


def wordlines(words: Iterable[str], width: int = 80) -> list[str]:
    """Words joined into lines of at most ``width`` characters (one long word: its own)."""
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) <= width:
            lines[-1] += " " + w
        else:
            lines.append(w)
    return lines


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters.update(shjoin=shjoin, shquote=shquote, shvalue=shvalue, dockerenv=dockerenv,
                       mdcode=mdcode, wordlines=wordlines,
                       dirname=posixpath.dirname)
    return env


def render_apt_lock(plan: BuildPlan) -> str:
    lines = [
        f"# apt.lock for task {plan.task}: every Debian package the run added or changed "
        "against the base image, name=version.",
        f"# Regenerate: {plan.regenerate_command}",
    ]
    lines += [f"{name}={version}" for name, version in plan.apt.pins]
    lines += [f"# removed: {name}" for name in plan.apt.remove]
    return "\n".join(lines) + "\n"


def report_counts(plan: BuildPlan) -> dict[str, int]:
    counts = {"kept": 0, "folded": 0, "dropped": 0}
    for o in plan.outcomes:
        counts[o.decision] = counts.get(o.decision, 0) + 1
    return counts


def report_json(plan: BuildPlan) -> dict[str, Any]:
    return {
        "format": EXPORT_REPORT_FORMAT,
        "task": plan.task,
        "run_id": plan.run_id,
        "command": plan.regenerate_command,
        "counts": report_counts(plan),
        "commands": [
            {"ref": o.ref, "command": o.command, "cwd": o.cwd, "extractor": o.extractor,
             "step": o.step, "decision": o.decision, "reason": o.reason}
            for o in plan.outcomes
        ],
        "unexplained": list(plan.unexplained),
        "not_reproducible": list(plan.not_reproducible),
        "warnings": list(plan.warnings),
    }


def artifact_files_description(plan: BuildPlan, locks: Sequence[Lock]) -> list[tuple[str, str]]:
    files = [
        ("Dockerfile", "the build: base, apt, Python lock, source, native builds, ENV"),
        ("apt.lock", "Debian packages, name=version, sorted"),
    ]
    files += [(lk.env.lock_file, f"pins with sha256 hashes for {lk.env.python}") for lk in locks]
    files += [
        ("manifest.json", "sha256 of every file and of the run inputs; base image identity"),
        ("export-report.md", "what was kept, folded, dropped (with reasons) and unexplained"),
        ("export-report.json", "the export report, for machines"),
        ("task.toml", "the task's probes, for `synth verify`"),
    ]
    if plan.claims:
        files.append(("claims.json", "the agent's self-report, checked by C5"))
    if plan.source.kind != "none":
        files.append(("source/", f"the research code, copied to {plan.source.dest}"))
    if plan.includes:
        files.append(("include/", "files carried along with --include"))
    return sorted(files)


def render_artifact(plan: BuildPlan, locks: Sequence[Lock], *,
                    locker_command: str = "uv pip compile --generate-hashes --no-deps"
                    ) -> dict[str, str]:
    """Every generated text file of the artifact (not the manifest), by name."""
    env = environment()
    wheel_files = sorted({f for lk in locks for f in lk.wheel_files})
    ctx: dict[str, Any] = {
        "plan": plan,
        "locks": locks,
        "wheel_files": wheel_files,
        "wheelhouse_dir": CONTAINER_WHEELHOUSE,
        "outcomes": plan.outcomes,
        "counts": report_counts(plan),
        "artifact_ref": f"{plan.task}/{plan.run_id}",
        "files": artifact_files_description(plan, locks),
    }
    files = {
        "Dockerfile": env.get_template("Dockerfile.j2").render(ctx),
        "README.md": env.get_template("README.md.j2").render(ctx),
        "export-report.md": env.get_template("export-report.md.j2").render(ctx),
        "export-report.json": dumps_json(report_json(plan)),
        "apt.lock": render_apt_lock(plan),
    }
    for lk in locks:
        header = [
            f"{lk.env.lock_file} for {lk.env.python} (task {plan.task}): exact pins with "
            "sha256 hashes; install with --require-hashes --no-deps.",
            f"Regenerate: {plan.regenerate_command}",
            f"Locked with: {locker_command if lk.locker == 'uv' else 'pip-compile'}",
        ]
        files[lk.env.lock_file] = render_lock(lk, header)
    return files


def plan_json(plan: BuildPlan) -> str:
    return json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n"
