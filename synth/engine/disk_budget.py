"""The disk budget: before a run, a rebuild, a bundle or a bench cell, the free space of
the engine's data root and of the artifacts folder against what the step needs.

An estimate from what is known (the base image's size, the live images of earlier runs of
the task), never below a conservative floor; a step that would not fit is refused with
:class:`~synth.errors.DiskFullError` before it starts, naming the file system, both sizes
and the command that frees space. ``SYNTH_DISK_CHECK=0`` or ``--no-disk-check`` skips it.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from synth.errors import DiskFullError, EngineError
from synth.util.disk import GIB, existing_ancestor, human, mount_point

#: The least a step is let start with, whatever the estimate says.
RUN_FLOOR = 2 * GIB
REBUILD_FLOOR = 3 * GIB
BUNDLE_FLOOR = 2 * GIB
#: A run directory's logs and state, an export's files.
ARTIFACTS_FLOOR = 256 * 1024 * 1024
#: What a session leaves free on the engine's data root: an agent that writes past it into
#: its container is stopped (:func:`below_reserve`), so that it never fills the host's disk.
SESSION_RESERVE = 1 * GIB

FREE_HINT = ("Free space: `synth gc --images --dry-run` lists the live and rebuilt images "
             "it would remove (then without --dry-run), `docker system df` shows what the "
             "engine holds. --no-disk-check (or SYNTH_DISK_CHECK=0) skips this check.")


class Usage(NamedTuple):
    total: int
    used: int
    free: int


DiskUsage = Callable[[Path], Usage]


def disk_usage(path: Path) -> Usage:
    total, used, free = shutil.disk_usage(path)
    return Usage(total, used, free)


@dataclass(frozen=True)
class SpaceNeed:
    """What one step needs on one file system."""

    #: "the engine's data root", "the artifacts folder".
    place: str
    path: Path
    needed: int
    #: How the figure was reached, e.g. "live image 1.2 GiB x 1.5".
    basis: str


def engine_data_root(engine: object) -> Path | None:
    """The engine's data root (``docker info``'s DockerRootDir) where the engine says."""
    info = getattr(engine, "info", None)
    if not callable(info):
        return None
    try:
        root = (info() or {}).get("DockerRootDir")
    except EngineError:
        return None
    return Path(root) if isinstance(root, str) and root.startswith("/") else None


def below_reserve(data_root: Path, *, usage: DiskUsage | None = None) -> str | None:
    """Why a session must stop, where the file system of the engine's data root (where a
    container's writable layer lies) has less than :data:`SESSION_RESERVE` free; None while
    it has more, or where it cannot be read (a remote engine's)."""
    try:
        space = (usage or disk_usage)(data_root)
    except OSError:
        return None
    if space.free >= SESSION_RESERVE:
        return None
    return (f"the file system of the engine's data root {data_root} has {human(space.free)} "
            f"free of {human(space.total)} (a session leaves at least "
            f"{human(SESSION_RESERVE)})")


def check_commit_room(data_root: Path, layer: int | None, *,
                      usage: DiskUsage | None = None) -> None:
    """Refuse to commit a container whose writable layer (``layer`` bytes; the commit
    writes it again) would leave less than :data:`SESSION_RESERVE` free on the engine's
    data root; a size or a file system that cannot be read is not checked."""
    if layer is None:
        return
    try:
        free = (usage or disk_usage)(data_root).free
    except OSError:
        return
    if free - layer >= SESSION_RESERVE:
        return
    raise DiskFullError(
        f"Not enough disk space to commit the live image: the container's layer holds "
        f"{human(layer)} and the file system of the engine's data root {data_root} has "
        f"{human(free)} free (a commit writes the layer again and leaves at least "
        f"{human(SESSION_RESERVE)}).", path=str(data_root), needed=layer + SESSION_RESERVE,
        free=free, hint=FREE_HINT)


def image_size(engine: Any, ref: str | None) -> int | None:
    """The size of image ``ref`` as the engine reports it, or None."""
    if not ref:
        return None
    try:
        size = engine.image_inspect(ref).get("Size")
    except Exception:
        return None
    return size if isinstance(size, int) else None


def estimate(floor: int, known: Iterable[int | None], factor: float, what: str
             ) -> tuple[int, str]:
    """``factor`` times the largest known size, never below ``floor``; with its basis."""
    sizes = [s for s in known if s]
    if not sizes or int(max(sizes) * factor) <= floor:
        return floor, f"the floor for {what}"
    biggest = max(sizes)
    return int(biggest * factor), f"{human(biggest)} x {factor:g} for {what}"


def run_needs(data_root: Path | None, artifacts: Path, known: Sequence[int | None]
              ) -> list[SpaceNeed]:
    """A run: the base and earlier live images of the task (``known``) on the engine's
    data root; logs and state in the artifacts folder."""
    needed, basis = estimate(RUN_FLOOR, known, 1.2, "a run")
    needs = [SpaceNeed("the artifacts folder", artifacts, ARTIFACTS_FLOOR, "a run's records")]
    if data_root is not None:
        needs.insert(0, SpaceNeed("the engine's data root", data_root, needed, basis))
    return needs


def rebuild_needs(data_root: Path | None, live_size: int | None) -> list[SpaceNeed]:
    """A rebuild: about one and a half live images (the image and its build cache)."""
    needed, basis = estimate(REBUILD_FLOOR, [live_size], 1.5, "a rebuild")
    return [] if data_root is None else [
        SpaceNeed("the engine's data root", data_root, needed, basis)]


def bundle_needs(dest: Path, live_size: int | None) -> list[SpaceNeed]:
    """A bundle: every wheel, .deb and download, about the live image's size."""
    needed, basis = estimate(BUNDLE_FLOOR, [live_size], 1.0, "a bundle")
    return [SpaceNeed("the artifacts folder", dest, needed, basis)]


def check_space(needs: Sequence[SpaceNeed], step: str, *,
                usage: DiskUsage | None = None) -> None:
    """Refuse ``step`` when a file system has less free than its needs there (needs on
    one file system add up); a path whose file system cannot be read is not checked."""
    usage = usage or disk_usage
    by_mount: dict[Path, list[SpaceNeed]] = {}
    for need in needs:
        by_mount.setdefault(mount_point(need.path), []).append(need)
    for mount, group in sorted(by_mount.items()):
        try:
            free = usage(existing_ancestor(group[0].path)).free
        except OSError:
            continue
        needed = sum(n.needed for n in group)
        if free >= needed:
            continue
        places = " and ".join(f"{n.place} ({n.path}: about {human(n.needed)}, {n.basis})"
                              for n in group)
        raise DiskFullError(
            f"Not enough disk space for {step}: the file system at {mount} has "
            f"{human(free)} free, about {human(needed)} needed for {places}.",
            path=str(group[0].path), mount=str(mount), needed=needed, free=free,
            hint=FREE_HINT)


def free_spaces(data_root: Path | None, artifacts: Path, *,
                usage: DiskUsage | None = None) -> dict[str, tuple[Path, int | None]]:
    """The free bytes of the engine's data root and of the artifacts folder (``synth
    doctor``); None where the file system cannot be read."""
    usage = usage or disk_usage
    out: dict[str, tuple[Path, int | None]] = {}
    for place, path in (("engine data root", data_root), ("artifacts folder", artifacts)):
        if path is None:
            continue
        try:
            out[place] = (path, usage(existing_ancestor(path)).free)
        except OSError:
            out[place] = (path, None)
    return out
