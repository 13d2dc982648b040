"""``synth minimize RUN``: the smallest artifact that still passes what the original passes.

Delta debugging over the distilled plan (:mod:`synth.distill.leave_out`): its environment
variables, the apt packages the agent installed and each environment's distributions (the
environments' own tooling, pip, setuptools, wheel and the activation variables such as
PATH, left be unless ``tooling``). A trial exports the run without a set of parts, builds
it with the engine's build cache (trials differ by a few lines), runs the pyramid on it and
keeps the removal only when

* every level the original artifact passed passes again, and
* every distribution that remains has the fingerprint it had in the original (same version,
  same installed files), and none of those left out is installed anyway (a lock that pulls
  a removed distribution back as a dependency removed nothing).

The search tries the leaves of the original's requirements graph (what nothing that remains
requires) all at once, then halves of what failed, down to single parts, round after round
as removals free new leaves (:func:`search`); each trial costs one rebuild of ``budget``.
Trials are written to ``trials.jsonl`` as they end, so a second run with the same folder
replays the finished ones without a rebuild and goes on where the budget stopped. The
minimized artifact is an export of its own (``<out>/artifact``, never the run's
``export/``), its report naming what was left out.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from synth.config import Settings
from synth.distill.leave_out import Part, parts_of
from synth.distill.load import load_run
from synth.distill.plan import distill
from synth.engine.base import Engine
from synth.engine.fingerprint import ImageProbe
from synth.errors import SynthError, VerifyError
from synth.export.artifact import ExportOptions, export_run
from synth.pyramid.c0_scope import canonical
from synth.pyramid.result import LEVELS
from synth.util import atomic
from synth.verify.command import verify
from synth.verify.outcome import VerifyOptions

Say = Callable[[str], None]
MINIMIZE_FORMAT = 1
DEFAULT_BUDGET = 16


@dataclass(frozen=True)
class MinimizeOptions:
    run_dir: Path
    #: Default ``<run_dir>/minimize``.
    out_dir: Path | None = None
    #: Rebuilds this invocation may spend (finished trials replayed from trials.jsonl are free).
    budget: int = DEFAULT_BUDGET
    #: Also try the environments' own tooling: pip, setuptools, wheel and the variables
    #: that activate them (PATH, VIRTUAL_ENV, …).
    tooling: bool = False


@dataclass(frozen=True)
class Trial:
    """One rebuild without ``without``: did it keep everything the original had?"""

    without: tuple[str, ...]
    passed: bool
    why: str
    levels: dict[str, str] = field(default_factory=dict)
    image_size: int | None = None
    build_seconds: float | None = None
    #: The original's distributions (canonical name -> [version, files digest]): what
    #: every trial must keep; only on the trial of the original.
    distributions: dict[str, list[str | None]] | None = None
    #: The original's requirements graph (distribution -> what it requires); likewise.
    requires: dict[str, list[str]] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"without": list(self.without), "passed": self.passed, "why": self.why,
                "levels": self.levels, "image_size": self.image_size,
                "build_seconds": self.build_seconds, "distributions": self.distributions,
                "requires": self.requires}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trial:
        return cls(tuple(d["without"]), bool(d["passed"]), str(d["why"]),
                   dict(d.get("levels") or {}), d.get("image_size"), d.get("build_seconds"),
                   d.get("distributions"), d.get("requires"))


class BudgetSpent(Exception):
    """No rebuild is left for a trial that was not run before."""


@dataclass
class Search:
    """The outcome of :func:`search`: what could go, in the order it was found to."""

    removed: list[Part] = field(default_factory=list)
    #: Each accepted removal: the parts, and the trial that accepted them.
    steps: list[tuple[tuple[Part, ...], Trial]] = field(default_factory=list)
    #: Parts a trial without them failed: needed.
    needed: list[Part] = field(default_factory=list)
    #: Parts the budget left undecided.
    undecided: list[Part] = field(default_factory=list)


def search(candidates: Sequence[Part], trial: Callable[[Sequence[Part]], Trial],
           requires: Mapping[str, Sequence[str]] | None = None) -> Search:
    """Delta debugging for the largest set of ``candidates`` whose removal ``trial`` accepts:
    all at once, then the halves of a rejected chunk, down to single parts.

    With ``requires`` (distribution -> the distributions it requires, canonical names) only
    *leaves* are tried: parts nothing that remains requires (a dependency goes only with
    what needs it). A round over the leaves can free new ones (the dependencies of what it
    removed); rounds go on until one removes nothing. A part required by what is kept is
    kept. ``trial`` raises :class:`BudgetSpent` when it may not rebuild; what was not
    decided then is undecided."""
    out = Search()
    rejected = out.needed
    while True:
        gone = {canonical(p.name) for p in out.removed if p.kind == "python"}
        leaves = [p for p in candidates if p not in out.removed and p not in rejected
                  and not _required(p, requires, gone)]
        before = len(out.removed)
        queue: list[list[Part]] = [leaves] if leaves else []
        while queue:
            chunk = queue.pop(0)
            try:
                result = trial([*out.removed, *chunk])
            except BudgetSpent:
                out.undecided = [p for p in candidates
                                 if p not in out.removed and p not in rejected]
                return out
            if result.passed:
                out.removed += chunk
                out.steps.append((tuple(chunk), result))
            elif len(chunk) > 1:
                half = len(chunk) // 2
                queue[:0] = [chunk[:half], chunk[half:]]
            else:
                rejected.append(chunk[0])
        if len(out.removed) == before:
            return out


def _required(part: Part, requires: Mapping[str, Sequence[str]] | None,
              gone: set[str]) -> bool:
    """Does a distribution that remains require ``part``?"""
    if requires is None or part.kind != "python":
        return False
    name = canonical(part.name)
    return any(name in {canonical(d) for d in deps} for owner, deps in requires.items()
               if canonical(owner) != name and canonical(owner) not in gone)


def _key(parts: Sequence[Part]) -> tuple[str, ...]:
    return tuple(sorted(str(p) for p in parts))


def read_trials(path: Path) -> dict[tuple[str, ...], Trial]:
    """The finished trials of an earlier run in this folder, by what each left out; a line
    that is not a trial is an error naming the file and the line (never a guess)."""
    done: dict[tuple[str, ...], Trial] = {}
    if not path.is_file():
        return done
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            trial = Trial.from_json(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise VerifyError(f"{path}:{number}: not a trial of synth minimize ({exc!r}).",
                              hint="Remove the file (its trials are run again) or give "
                              "another -o folder.") from None
        done[trial.without] = trial
    return done


class _Trials:
    """Runs trials (export, build with cache, pyramid, fingerprint), memoised on disk."""

    def __init__(self, opts: MinimizeOptions, out: Path, settings: Settings, engine: Engine,
                 say: Say) -> None:
        self.opts, self.out, self.settings, self.engine, self.say = (
            opts, out, settings, engine, say)
        self.log = out / "trials.jsonl"
        self.done = read_trials(self.log)
        self.rebuilds = 0

    def __call__(self, parts: Sequence[Part]) -> Trial:
        key = _key(parts)
        if key in self.done:
            return self.done[key]
        if self.rebuilds >= self.opts.budget:
            raise BudgetSpent
        self.rebuilds += 1
        self.say(f"trial {self.rebuilds}/{self.opts.budget}: without "
                 f"{', '.join(key) or 'nothing (the original)'}")
        result = self._run(parts, key)
        self.say(f"  {'kept out' if result.passed else 'needed'}: {result.why}")
        self.done[key] = result
        with self.log.open("a", encoding="utf-8") as fh:  # one line per finished trial
            fh.write(json.dumps(result.to_json(), sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return result

    def _run(self, parts: Sequence[Part], key: tuple[str, ...]) -> Trial:
        artifact = self.out / "trial"
        try:
            exported = export_run(ExportOptions(self.opts.run_dir, out_dir=artifact, force=True,
                                                without=tuple(parts)), self.settings, self.engine)
            outcome = verify(VerifyOptions(target=str(artifact), rebuild=True, build_cache=True,
                                           out_dir=self.out / "verify", progress="quiet",
                                           fingerprint=False),
                             self.settings, self.engine, say=lambda _m: None)
        except SynthError as exc:
            return Trial(key, False, f"the trial failed: {exc.message}")
        assert outcome.build is not None
        image = outcome.build.image
        try:
            size = int(self.engine.image_inspect(image).get("Size") or 0)
            report = outcome.reports["rebuilt"]
            levels = {str(r.level): str(r.status) for r in report.levels}
            dists = _distributions(self.engine, image, exported.plan.python)
            requires = (ImageProbe(self.engine).requirements(image, exported.plan.python)
                        if not key else None)
        finally:
            self.engine.remove_image(image)
        trial = self._judge(parts, key, levels, dists, size, outcome.build.seconds)
        return replace(trial, requires=requires) if requires is not None else trial

    def _judge(self, parts: Sequence[Part], key: tuple[str, ...], levels: dict[str, str],
               dists: dict[str, list[str | None]], size: int, seconds: float) -> Trial:
        if not key:  # the original: what every trial must keep
            return Trial(key, True, "the original artifact", levels, size, seconds, dists)
        base = self.done[()]
        lost = [lv for lv in LEVELS if base.levels.get(lv) == "pass" and levels.get(lv) != "pass"]
        if lost:
            return Trial(key, False, f"{', '.join(lost)} no longer pass"
                         f" ({', '.join(f'{lv} {levels.get(lv)}' for lv in lost)})",
                         levels, size, seconds)
        gone = {canonical(p.name) for p in parts if p.kind == "python"}
        still = sorted(n for n in gone if n in dists)
        if still:
            return Trial(key, False, f"still installed (what remains requires it): "
                         f"{', '.join(still)}", levels, size, seconds)
        changed = sorted(n for n, fp in (base.distributions or {}).items()
                         if n not in gone and dists.get(n) != fp)
        if changed:
            return Trial(key, False, f"what remains changed: {', '.join(changed)}", levels,
                         size, seconds)
        return Trial(key, True, "every level the original passed passes; what remains is "
                     "unchanged", levels, size, seconds)


def _distributions(engine: Engine, image: str, python: str) -> dict[str, list[str | None]]:
    fp = ImageProbe(engine).fingerprint(image, python)
    return {canonical(d.name): [d.version, d.digest] for d in fp.distributions}


@dataclass(frozen=True)
class MinimizeResult:
    out_dir: Path
    document: dict[str, Any]
    artifact: Path | None


def minimize(opts: MinimizeOptions, settings: Settings, engine: Engine,
             say: Say) -> MinimizeResult:
    """Search, then export the minimized artifact and write the report (minimize.json,
    minimize.md) into ``opts.out_dir``."""
    if opts.budget < 1:
        raise VerifyError("--budget must be at least 1: the original is rebuilt first.")
    out = (opts.out_dir or opts.run_dir / "minimize").absolute()
    out.mkdir(parents=True, exist_ok=True)
    plan, _ = distill(load_run(opts.run_dir))
    candidates = parts_of(plan, tooling=opts.tooling)
    trials = _Trials(opts, out, settings, engine, say)
    say(f"minimize {opts.run_dir.name}: {len(candidates)} parts to try "
        f"({', '.join(str(p) for p in candidates) or 'none'}); budget {opts.budget} rebuilds")
    try:
        baseline = trials([])
    except BudgetSpent:  # pragma: no cover - budget >= 1 is checked above
        raise VerifyError("No rebuild left for the original.") from None
    if not any(s == "pass" for s in baseline.levels.values()):
        raise VerifyError(f"The original artifact passes no level ({baseline.why}): there is "
                          "nothing to keep passing.", hint="synth verify RUN --rebuild says why.")
    found = search(candidates, trials, baseline.requires)
    artifact = None
    if found.removed:
        artifact = out / "artifact"
        say(f"exporting the minimized artifact to {artifact}")
        export_run(ExportOptions(opts.run_dir, out_dir=artifact, force=True,
                                 without=tuple(found.removed)), settings, engine)
    shutil.rmtree(out / "trial", ignore_errors=True)
    doc = _document(opts, candidates, baseline, found, trials.rebuilds, artifact)
    atomic.write_json(out / "minimize.json", doc)
    atomic.write_text(out / "minimize.md", render_markdown(doc))
    return MinimizeResult(out, doc, artifact)


def _document(opts: MinimizeOptions, candidates: Sequence[Part], baseline: Trial,
              found: Search, rebuilds: int, artifact: Path | None) -> dict[str, Any]:
    steps = []
    size, seconds = baseline.image_size, baseline.build_seconds
    for parts, trial in found.steps:
        steps.append({
            "removed": [str(p) for p in parts],
            "image_size": trial.image_size, "build_seconds": trial.build_seconds,
            "saved_bytes": None if size is None or trial.image_size is None
            else size - trial.image_size,
            "saved_seconds": None if seconds is None or trial.build_seconds is None
            else round(seconds - trial.build_seconds, 1),
        })
        size, seconds = trial.image_size, trial.build_seconds
    removed = {str(p) for p in found.removed}
    undecided = {str(p) for p in found.undecided}
    needed = {str(p) for p in found.needed}
    return {
        "format": MINIMIZE_FORMAT,
        "run": str(opts.run_dir),
        "budget": opts.budget,
        "rebuilds": rebuilds,
        "tooling": opts.tooling,
        "original": {k: v for k, v in baseline.to_json().items() if k != "requires"},
        "candidates": [str(p) for p in candidates],
        "removed": sorted(removed),
        "kept": [str(p) for p in candidates if str(p) not in removed | undecided],
        "needed": [str(p) for p in candidates if str(p) in needed],
        "required": [str(p) for p in candidates
                     if str(p) not in removed | undecided | needed],
        "undecided": sorted(undecided),
        "steps": steps,
        "artifact": str(artifact) if artifact else None,
        "complete": not undecided,
    }


def render_markdown(doc: dict[str, Any]) -> str:
    orig = doc["original"]
    lines = [f"# synth minimize: {Path(doc['run']).name}", "",
             f"Original artifact: {_mb(orig['image_size'])}, built in "
             f"{orig['build_seconds']} s (with the build cache); levels passed: "
             f"{', '.join(lv for lv, s in orig['levels'].items() if s == 'pass')}.", "",
             f"{doc['rebuilds']} rebuild(s) of a budget of {doc['budget']}; "
             + ("the search is complete." if doc["complete"] else
                f"undecided (budget spent): {', '.join(doc['undecided'])}."), ""]
    if doc["removed"]:
        lines += ["## Unnecessary", "", "| removed | image after | saved | build after |",
                  "|---|---|---|---|"]
        for step in doc["steps"]:
            lines.append(f"| {', '.join(step['removed'])} | {_mb(step['image_size'])} | "
                         f"{_mb(step['saved_bytes'])} | {step['build_seconds']} s |")
        lines += ["", f"Minimized artifact: `{doc['artifact']}`.", ""]
    else:
        lines += ["Nothing could be left out.", ""]
    if doc["needed"]:
        lines += ["## Needed", "", "A trial without each failed:", "",
                  ", ".join(f"`{p}`" for p in doc["needed"]), ""]
    if doc["required"]:
        lines += ["## Required by what is kept", "",
                  "Not tried: a distribution kept requires each.", "",
                  ", ".join(f"`{p}`" for p in doc["required"]), ""]
    return "\n".join(lines)


def _mb(size: int | None) -> str:
    return "?" if size is None else f"{size / 1e6:.1f} MB"
