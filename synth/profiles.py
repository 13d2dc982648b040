"""Task profiles: how a kind of task (a benchmark's, an ecosystem's) extends the core.

The core runs every task the same way; a profile adds what one kind of task needs at four
points — the session (a second name for the claims file, its claims rules), the probe
containers of ``synth verify`` (mounts, an assets step before the pyramid, a look at what
the probes left after it), a scoring beside synth's own (``verify --scoring NAME``), and the
files a ``synth bench`` cell leaves. A task's profile is the one whose :meth:`~Profile.owns`
says so (ResearchEnvBench's: a task folder imported by ``synth task import-reb``); every
other task gets :data:`DEFAULT`, which adds nothing.

Profiles are plug-ins: the core never imports one. Each is an object named by an entry
point of the ``synth.plugins`` group (``pyproject.toml``), loaded on first use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from synth.errors import UsageError

if TYPE_CHECKING:
    from synth.engine.base import Engine, EngineContainer, Mount
    from synth.formats.verify import VerifyDocument
    from synth.pyramid.result import Report

#: The entry point group a plug-in registers its profile in.
ENTRY_POINT_GROUP = "synth.plugins"
Say = Callable[[str], None]
#: Puts what an assets step left into a probe container.
Install = Callable[["EngineContainer"], None]


@dataclass(frozen=True)
class ProbeSite:
    """Where a task's probes run: what a profile's verify hooks get."""

    task_dir: Path | None
    image: str
    workdir: str = "/workspace"
    #: The agent's claims file on the host, if any.
    claims: Path | None = None
    assets_cache: Path | None = None
    assets_offline: bool = False


class Profile(Protocol):
    """What a plug-in provides; :class:`BaseProfile` has a do-nothing default for each."""

    name: str
    #: ``verify --scoring NAME`` names this profile provides.
    scorings: tuple[str, ...]

    def owns(self, task_dir: Path | None) -> bool: ...

    # the session: every installed plug-in's setup runs and its claims paths are read in
    # every session (an agent keeps its benchmark's habits whatever the task); its claims
    # rules apply to the tasks it owns
    def session_setup(self, container: EngineContainer) -> None: ...
    def claims_paths(self) -> tuple[str, ...]: ...
    def claims_errors(self, claims: Any) -> list[str]: ...

    # verify's probe containers
    def probe_mounts(self, site: ProbeSite) -> list[Mount]: ...
    def assets(self, engine: Engine, site: ProbeSite,
               say: Say) -> AbstractContextManager[Install | None]: ...
    def before_probes(self, container: EngineContainer, site: ProbeSite) -> None: ...
    def after_probes(self, container: EngineContainer, report: Report,
                     site: ProbeSite) -> Report: ...

    # scoring and bench
    def score(self, name: str, outcome: Any, engine: Engine | None,
              say: Say) -> dict[str, Any]: ...
    def bench_cell(self, doc: VerifyDocument, task_dir: Path, record: Mapping[str, Any],
                   files: Mapping[str, str], cell_dir: Path) -> None: ...


class BaseProfile:
    """synth's own rules: nothing added anywhere. Plug-ins derive from it."""

    name = "synth"
    scorings: tuple[str, ...] = ()

    def owns(self, task_dir: Path | None) -> bool:
        return False

    def session_setup(self, container: EngineContainer) -> None:
        return None

    def claims_paths(self) -> tuple[str, ...]:
        """Paths in the container read for the claims when synth's own is absent."""
        return ()

    def claims_errors(self, claims: Any) -> list[str]:
        return []

    def probe_mounts(self, site: ProbeSite) -> list[Mount]:
        return []

    def assets(self, engine: Engine, site: ProbeSite,
               say: Say) -> AbstractContextManager[Install | None]:
        return _nothing()

    def before_probes(self, container: EngineContainer, site: ProbeSite) -> None:
        return None

    def after_probes(self, container: EngineContainer, report: Report,
                     site: ProbeSite) -> Report:
        return report

    def score(self, name: str, outcome: Any, engine: Engine | None,
              say: Say) -> dict[str, Any]:
        raise UsageError(f"The {self.name} profile has no scoring {name!r}.")

    def bench_cell(self, doc: VerifyDocument, task_dir: Path, record: Mapping[str, Any],
                   files: Mapping[str, str], cell_dir: Path) -> None:
        return None


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


DEFAULT: Profile = BaseProfile()


@cache
def plugins() -> tuple[Profile, ...]:
    """Every profile the installed plug-ins register, in entry point name order."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    return tuple(e.load() for e in found)


def for_task(task_dir: Path | None) -> Profile:
    """The profile that owns ``task_dir``, else :data:`DEFAULT`."""
    return next((p for p in plugins() if p.owns(task_dir)), DEFAULT)


def scorings() -> dict[str, Profile]:
    """``verify --scoring`` name -> the profile that scores it."""
    return {name: p for p in plugins() for name in p.scorings}
