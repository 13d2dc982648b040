"""Leaving parts of a plan out: ``synth export --without`` and ``synth minimize``'s trials.

A part is a Python distribution of an environment (``python:NAME``, with the native step
that builds it and the files carried for it), an apt package the agent installed
(``apt:NAME``), an environment variable of the image (``env:NAME``) or a whole Python
environment other than the primary one, by its prefix (``prefix:PATH``: a tool's own venv,
such as the one an agent pip-installed poetry into, with its native steps, carried files and
``PATH`` entry). The plan without them is an ordinary plan; the export report names what was
left out, so an artifact made this way never passes for the whole environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Literal

from msgspec.structs import replace

from synth.distill import warnings as warn
from synth.distill.managed_python import runs_on
from synth.distill.native import installs_into
from synth.errors import UsageError
from synth.formats.plan import BuildPlan, DistillReport, NativeStep, PythonEnvPlan
from synth.pyramid.c0_scope import canonical

Kind = Literal["python", "apt", "env", "prefix"]
KINDS: tuple[Kind, ...] = ("python", "apt", "env", "prefix")
#: What ``python3 -m venv`` puts in every environment, and the variables that activate an
#: environment: its own tooling, not something the research code was set up with (``synth
#: minimize`` leaves them be unless asked).
ENV_SEEDS = frozenset({"pip", "setuptools", "wheel"})
ACTIVATION = frozenset({"PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV"})


@dataclass(frozen=True, order=True)
class Part:
    kind: Kind
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> Part:
        kind, sep, name = text.partition(":")
        if not sep or kind not in KINDS or not name.strip():
            raise UsageError(f"--without {text!r}: expected python:NAME, apt:NAME, env:NAME "
                             "or prefix:PATH.", option="--without")
        name = name.strip()
        if kind == "prefix":
            name = name.rstrip("/") or "/"
        return cls(kind, name)


def parse_parts(texts: Iterable[str] | None) -> tuple[Part, ...]:
    """``--without`` values, each ``KIND:NAME``."""
    return tuple(Part.parse(t) for t in texts or ())


def parts_of(plan: BuildPlan, *, tooling: bool = False) -> list[Part]:
    """Every part of ``plan`` that can be left out, in plan order: variables, apt packages,
    then each environment's distributions (``tooling``: also pip, setuptools, wheel and the
    activation variables, :data:`ENV_SEEDS` and :data:`ACTIVATION`)."""
    found = [Part("env", name) for name, _ in plan.env if tooling or name not in ACTIVATION]
    found += [Part("apt", name) for name, _ in plan.apt.pins]
    for env in plan.envs:
        found += [Part("python", name) for name, _ in env.pins
                  if tooling or canonical(name) not in ENV_SEEDS]
    found += [Part("python", _dist_name(step.distribution)) for step in plan.native
              if step.distribution]
    return list(dict.fromkeys(found))


def _key(part: Part) -> tuple[str, str]:
    return part.kind, canonical(part.name) if part.kind == "python" else part.name


def _dist_name(spec: str) -> str:
    return spec.split("==", 1)[0]


@dataclass(frozen=True)
class Without:
    """What ``parts`` leave out, read against a plan's environments: the distributions,
    apt packages, variables and environment prefixes, and the native steps that go with
    them. Distill asks it which commands are left out (:meth:`drops_step`); the plan is
    then made without them by :func:`leave_out`."""

    python: frozenset[str] = frozenset()
    apt: frozenset[str] = frozenset()
    env: frozenset[str] = frozenset()
    prefixes: frozenset[str] = frozenset()
    #: The system interpreters among ``prefixes``: prefix -> interpreter.
    system: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, parts: Iterable[Part], envs: Sequence[PythonEnvPlan]) -> Without:
        wanted = set(parts)
        prefixes = frozenset(p.name for p in wanted if p.kind == "prefix")
        return cls(python=frozenset(canonical(p.name) for p in wanted if p.kind == "python"),
                   apt=frozenset(p.name for p in wanted if p.kind == "apt"),
                   env=frozenset(p.name for p in wanted if p.kind == "env"),
                   prefixes=prefixes,
                   system={e.prefix: e.python for e in envs
                           if e.kind == "system" and e.prefix in prefixes})

    def holds(self, path: str) -> bool:
        """Whether ``path`` belongs to one of the environments left out: under it, or for
        the system interpreter's (its prefix, /usr, holds every program of the image), the
        interpreter itself and its site folders (Debian's pip installs under /usr/local),
        not its bin folder."""
        system = self.system
        return any(path == system[pre] or path.startswith(
            (f"{pre.rstrip('/')}/lib/python", f"{pre.rstrip('/')}/local/lib/python"))
            if pre in system else path == pre or path.startswith(pre + "/")
            for pre in self.prefixes)

    def drops_step(self, step: NativeStep, envs: Sequence[PythonEnvPlan]) -> bool:
        """Whether native ``step`` goes: it builds a distribution left out, or runs from
        or installs into an environment left out."""
        if step.distribution and canonical(_dist_name(step.distribution)) in self.python:
            return True
        into = installs_into(step, envs)
        return bool(step.argv and self.holds(step.argv[0])) or (
            into is not None and into.prefix in self.prefixes)


def leave_out(plan: BuildPlan, report: DistillReport,
              parts: Iterable[Part]) -> tuple[BuildPlan, DistillReport]:
    """``plan`` without ``parts``; a part the plan does not have is an error. The commands
    that made them were dropped when distilling with the same parts (``distill(...,
    without=parts)``, which decides every command's outcome)."""
    wanted = sorted(set(parts))
    if not wanted:
        return plan, report
    primary = {e.prefix for e in plan.envs[:1]} | {
        e.prefix for e in plan.envs if e.python == plan.python}
    for p in wanted:
        if p.kind == "prefix" and p.name in primary:
            raise UsageError(f"--without {p}: that is the primary environment, the one "
                             f"research code runs with ({plan.python}); it cannot be left "
                             "out.", option="--without")
    have = {_key(p) for p in parts_of(plan, tooling=True)}
    have |= {("prefix", e.prefix) for e in plan.envs}
    unknown = [str(p) for p in wanted if _key(p) not in have]
    if unknown:
        raise UsageError(f"--without: the plan has no {', '.join(unknown)}.",
                         hint="`synth export RUN --plan` lists what it has.",
                         option="--without")
    w = Without.of(wanted, plan.envs)
    before = plan
    plan = replace(
        plan,
        env=tuple(_without_bins(pair, w.prefixes - set(w.system)) for pair in plan.env
                  if pair[0] not in w.env),
        apt=replace(plan.apt, pins=tuple(p for p in plan.apt.pins if p[0] not in w.apt),
                    debs=tuple(d for d in plan.apt.debs if d.name not in w.apt)),
        envs=tuple(replace(e, pins=tuple(p for p in e.pins if canonical(p[0]) not in w.python))
                   for e in plan.envs if e.prefix not in w.prefixes),
        conda=tuple(c for c in plan.conda if c.prefix not in w.prefixes),
        pythons=tuple(m for m in plan.pythons if any(
            e.prefix not in w.prefixes and runs_on(e, m) for e in plan.envs)),
        native=tuple(s for s in plan.native if not w.drops_step(s, plan.envs)),
        carried=tuple(c for c in plan.carried
                      if canonical(c.distribution) not in w.python and not w.holds(c.path)),
    )
    note = ("left out on request (synth export --without / synth minimize): "
            + ", ".join(str(p) for p in wanted))
    # The second-interpreter warnings describe the environments the artifact makes.
    had = _second_interpreters(before)
    warnings = report.warnings
    if any(x in warnings for x in had):
        warnings = (*(x for x in warnings if x not in had), *_second_interpreters(plan))
    return plan, replace(report, warnings=(*warnings, note))


def _second_interpreters(plan: BuildPlan) -> list[str]:
    return warn.plan_second_interpreters(plan.envs)


def _without_bins(pair: tuple[str, str], prefixes: AbstractSet[str]) -> tuple[str, str]:
    """``PATH`` without the ``bin`` folders of environments left out."""
    name, value = pair
    if name != "PATH" or not prefixes:
        return pair
    bins = {f"{p}/bin" for p in prefixes}
    return name, ":".join(d for d in value.split(":") if d.rstrip("/") not in bins)


def describe(parts: Sequence[Part]) -> str:
    return ", ".join(str(p) for p in parts) or "nothing"
