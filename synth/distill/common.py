"""What the parts of distillation share: the notes they add to the report, the classified
commands, and small helpers over requirement specifiers and build environments."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TypeAlias

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion

from synth import model
from synth.config import CA_ENV_NAMES
from synth.distill.shell import SimpleCommand
from synth.distill.steps import Step

#: Variables never carried into a build: the CA (a secret at build time), shell noise.
ENV_DENY = frozenset({*CA_ENV_NAMES, "PS1", "OLDPWD", "PWD", "SHLVL", "HOME", "_",
                      "VIRTUAL_ENV", "BASH_ENV", "HOSTNAME", "TERM"})
#: Where the base system's own packages live: apt's business, not the lock's.
DEBIAN_SITE = model.DEBIAN_SITE

#: One simple command, the extractor that recognised it, and the step it made.
Classified: TypeAlias = tuple[SimpleCommand, str, Step]


@dataclass
class Notes:
    """What distillation tells the reader besides the outcomes (sorted at the end)."""

    warnings: list[str] = field(default_factory=list)
    not_reproducible: list[str] = field(default_factory=list)


def req_name(spec: str) -> str:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    return str(canonicalize_name(m.group(1) if m else spec))


@functools.lru_cache(maxsize=4096)
def req_pin(spec: str) -> str | None:
    """The version specifier of a requirement (``==1.0``, ``<70``), None when it has none."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None
    return str(req.specifier) or None


@functools.lru_cache(maxsize=4096)
def satisfies(version: str, specifier: str) -> bool:
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
