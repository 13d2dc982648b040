"""What the parts of distillation share: the notes they add to the report, the classified
commands, and small helpers over requirement specifiers and build environments."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar, cast

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion

from synth.config import CA_ENV_NAMES
from synth.distill.shell import SimpleCommand
from synth.distill.steps import Step, StepBase

#: Variables never carried into a build: the CA (a secret at build time), shell noise.
ENV_DENY = frozenset({*CA_ENV_NAMES, "PS1", "OLDPWD", "PWD", "SHLVL", "HOME", "_",
                      "VIRTUAL_ENV", "BASH_ENV", "HOSTNAME", "TERM"})

#: One simple command, the extractor that recognised it, and the step it made.
Classified: TypeAlias = tuple[SimpleCommand, str, Step]

S = TypeVar("S", bound=StepBase)


class StepIndex:
    """Classified commands by the type of their step, each type's in log order: the parts
    of distill that want one kind of step (the pip installs, the downloads, the builds …)
    read only those. A long log has 150,000 commands, and a pass over all of them per kind
    asked costs as much as the index, made once."""

    __slots__ = ("_by_type",)

    def __init__(self, classified: Iterable[Classified]) -> None:
        by_type: dict[type[StepBase], list[Classified]] = {}
        for t in classified:
            kind = type(t[2])
            found = by_type.get(kind)
            if found is None:
                by_type[kind] = [t]
            else:
                found.append(t)
        self._by_type = by_type

    def of(self, kind: type[S]) -> Sequence[tuple[SimpleCommand, str, S]]:
        """The commands whose step is a ``kind`` (the step types are final: no step type
        derives from another), in log order."""
        return cast("Sequence[tuple[SimpleCommand, str, S]]", self._by_type.get(kind, ()))


@dataclass
class Notes:
    """What distillation tells the reader besides the outcomes (sorted at the end)."""

    warnings: list[str] = field(default_factory=list)
    not_reproducible: list[str] = field(default_factory=list)


_REQ_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
#: ``name<op>version`` with a release-only version (``numpy==1.26.4``, ``torch>=2``): the
#: specifier packaging would give, read without it (a test compares the two).
_RELEASE_TEXT = r"[0-9]+(?:\.[0-9]+)*"
_SPECIFIER_TEXT = rf"(==|!=|>=|<=|<|>)({_RELEASE_TEXT})"
_SIMPLE_PIN = re.compile(rf"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?({_SPECIFIER_TEXT})")
_RELEASE = re.compile(_RELEASE_TEXT)
_SIMPLE_SPECIFIER = re.compile(_SPECIFIER_TEXT)


def req_name(spec: str) -> str:
    """The canonical distribution name a requirement specifier names."""
    m = _REQ_NAME.match(spec)
    return _canonical(m.group(1) if m else spec)


@functools.lru_cache(maxsize=4096)
def _canonical(name: str) -> str:
    return str(canonicalize_name(name))


def req_pin(spec: str) -> str | None:
    """The version specifier of a requirement (``==1.0``, ``<70``), None when it has none."""
    m = _SIMPLE_PIN.fullmatch(spec)
    return m.group(1) if m else _req_pin(spec)


@functools.lru_cache(maxsize=4096)
def _req_pin(spec: str) -> str | None:
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None
    return str(req.specifier) or None


def _release(version: str) -> tuple[int, ...]:
    """A release-only version's numbers, trailing zeros dropped (``1.0`` is ``1``)."""
    parts = [int(x) for x in version.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


#: How a release-only version compares with a release-only specifier version.
_COMPARE = {"==": tuple.__eq__, "!=": tuple.__ne__, ">=": tuple.__ge__, "<=": tuple.__le__,
            ">": tuple.__gt__, "<": tuple.__lt__}


def satisfies(version: str, specifier: str) -> bool:
    """Whether ``version`` is in ``specifier`` (pre-releases included); True when either
    cannot be read. Release-only versions against one ``<op>version`` are compared as
    numbers, as packaging compares them (a test compares the two)."""
    m = _SIMPLE_SPECIFIER.fullmatch(specifier) if _RELEASE.fullmatch(version) else None
    if m is not None:
        return bool(_COMPARE[m.group(1)](_release(version), _release(m.group(2))))
    return _satisfies(version, specifier)


@functools.lru_cache(maxsize=4096)
def _satisfies(version: str, specifier: str) -> bool:
    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def pkg_name(spec: str) -> str:
    """``pkg`` of an apt ``pkg=version`` or ``pkg:arch``."""
    return spec.split("=", 1)[0].split(":", 1)[0]


def build_env(cmd: SimpleCommand) -> tuple[tuple[str, str], ...]:
    """The environment a build command ran with, less secrets and shell noise."""
    env = {**cmd.env_map(), **dict(cmd.assignments)}
    return tuple(sorted((k, v) for k, v in env.items() if k not in ENV_DENY and "***" not in v))
