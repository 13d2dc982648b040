"""Typed verification results and their JSON form (``verify.json``, schema in docs/verify.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Level = Literal["C0", "C1", "C2", "C3", "C4", "C5"]
LEVELS: tuple[Level, ...] = ("C0", "C1", "C2", "C3", "C4", "C5")
#: The capability levels, each needing the one below; C5 (honesty) stands apart.
LADDER: tuple[Level, ...] = ("C0", "C1", "C2", "C3", "C4")

Status = Literal["pass", "fail", "skipped", "not_applicable", "not_reached"]
STATUSES: tuple[Status, ...] = get_args(Status)

#: verify.json's format version; readers refuse newer ones.
VERIFY_FORMAT = 1

LEVEL_TITLES: dict[Level, str] = {
    "C0": "static imports",
    "C1": "runs on CPU",
    "C2": "framework sees GPU",
    "C3": "single-GPU compute",
    "C4": "multi-GPU DDP",
    "C5": "claims vs evidence",
}


def parse_level(text: str) -> Level:
    value = text.strip().upper()
    if value not in LEVELS:
        raise ValueError(f"unknown level {text!r}: use one of {', '.join(LEVELS)}")
    return value


@dataclass(frozen=True)
class LevelResult:
    level: Level
    status: Status
    reason: str | None = None
    metrics: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def ran(self) -> bool:
        return self.status in ("pass", "fail")

    @property
    def summary(self) -> str:
        return self.status if not self.reason else f"{self.status}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "status": self.status, "reason": self.reason,
                "metrics": dict(self.metrics), "details": dict(self.details),
                "seconds": round(self.seconds, 3)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LevelResult:
        return cls(level=parse_level(data["level"]), status=data["status"],
                   reason=data.get("reason"), metrics=data.get("metrics") or {},
                   details=data.get("details") or {}, seconds=float(data.get("seconds", 0)))


def highest_level(results: Iterable[LevelResult]) -> Level | None:
    """The highest capability level reached: it and every level below passed (or do not apply).

    A skipped level stops the climb: nothing is credited that was not run.
    """
    by_level = {r.level: r for r in results}
    reached: Level | None = None
    for level in LADDER:
        r = by_level.get(level)
        if r is None or r.status not in ("pass", "not_applicable"):
            break
        if r.status == "pass":
            reached = level
    return reached


@dataclass(frozen=True)
class Report:
    """The pyramid as verified on one target (a rebuilt image, a live image, a host env)."""

    target: Mapping[str, Any]  # kind, image or host, python, runtime description
    levels: tuple[LevelResult, ...]

    def get(self, level: Level) -> LevelResult | None:
        return next((r for r in self.levels if r.level == level), None)

    @property
    def highest(self) -> Level | None:
        return highest_level(self.levels)

    def passes_up_to(self, require: Level) -> bool:
        """True when no level up to ``require`` failed or went unreached.

        Skipped and not-applicable levels do not fail the requirement (they are shown as
        such); C5 counts only when required explicitly.
        """
        limit = LEVELS.index(require)
        return all(
            r.status in ("pass", "skipped", "not_applicable")
            for r in self.levels if LEVELS.index(r.level) <= limit
        )

    def to_json(self) -> dict[str, Any]:
        return {"target": dict(self.target), "levels": [r.to_json() for r in self.levels],
                "highest": self.highest}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        return cls(target=data.get("target") or {},
                   levels=tuple(LevelResult.from_json(r) for r in data.get("levels", [])))


def fidelity(rebuilt: Report, live: Report) -> dict[str, Any]:
    """Does the rebuilt image reach the live image's level? Lists the levels that differ."""
    gaps = []
    for level in LEVELS:
        a, b = live.get(level), rebuilt.get(level)
        if a is None or b is None:
            continue
        if a.status == "pass" and b.status != "pass":
            gaps.append({"level": level, "live": a.summary, "rebuilt": b.summary})
    live_h, rebuilt_h = live.highest, rebuilt.highest
    reaches = (live_h is None) or (
        rebuilt_h is not None and LEVELS.index(rebuilt_h) >= LEVELS.index(live_h)
    )
    return {"live_highest": live_h, "rebuilt_highest": rebuilt_h,
            "reaches_live_level": reaches and not gaps, "gaps": gaps}
