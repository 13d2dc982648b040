"""Which live and rebuilt images ``synth gc --keep-runs N`` keeps: pure, no engine.

A run's live image is tagged ``synth-live/<task>:<run-id>`` (run ids sort by time); a
verify's rebuilt image ``synth-rebuilt/<task>:<digest>``, dated by the engine. Per task the
latest ``N`` of each are kept; the older ones are what gc removes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TaggedImage:
    """One image synth made: its tag, its kind (``live``, ``rebuilt``) and when it was
    created (the engine's ISO 8601 date; only its order matters)."""

    ref: str
    kind: str
    created: str


def _task(ref: str) -> str:
    repo = ref.rsplit(":", 1)[0]
    return repo.split("/", 1)[1] if "/" in repo else repo


def _order(img: TaggedImage) -> str:
    """Newest last: a live image by its run id (its tag), a rebuilt one by its date."""
    return img.ref.rsplit(":", 1)[1] if img.kind == "live" else img.created


def beyond_latest(images: Iterable[TaggedImage], keep: int) -> list[TaggedImage]:
    """The images older than the latest ``keep`` of their kind and task, oldest first."""
    groups: dict[tuple[str, str], list[TaggedImage]] = {}
    for img in images:
        if img.kind in ("live", "rebuilt"):
            groups.setdefault((img.kind, _task(img.ref)), []).append(img)
    old: list[TaggedImage] = []
    for members in groups.values():
        members.sort(key=_order)
        old += members[:max(len(members) - keep, 0)]
    return sorted(old, key=lambda i: (i.kind, _task(i.ref), _order(i)))


def live_run(ref: str) -> tuple[str, str] | None:
    """``(task, run id)`` of a live image's tag, None for another tag."""
    repo, _, run_id = ref.rpartition(":")
    if not repo.startswith("synth-live/") or not run_id:
        return None
    return repo.removeprefix("synth-live/"), run_id


def summary(removed: Sequence[str], sizes: dict[str, int]) -> str:
    """``N image(s), X.Y GB``: what ``--keep-runs`` frees (``sizes``: bytes by ref)."""
    total = sum(sizes.get(r, 0) for r in removed)
    return f"{len(removed)} image(s), {total / 1e9:.1f} GB"
