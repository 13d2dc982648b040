"""Typed verification results and their JSON form (``verify.json``, schema in docs/verify.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Level = Literal["C0", "C0i", "C1", "C2", "C3", "C4", "C5"]
LEVELS: tuple[Level, ...] = ("C0", "C0i", "C1", "C2", "C3", "C4", "C5")
#: The capability levels in order; C5 (honesty) stands apart. Every level runs on its own.
LADDER: tuple[Level, ...] = ("C0", "C0i", "C1", "C2", "C3", "C4")

Status = Literal["pass", "fail", "skipped", "not_applicable", "not_reached"]
STATUSES: tuple[Status, ...] = get_args(Status)

LEVEL_TITLES: dict[Level, str] = {
    "C0": "static imports",
    "C0i": "imports run",
    "C1": "runs on CPU",
    "C2": "framework sees GPU",
    "C3": "single-GPU compute",
    "C4": "multi-GPU DDP",
    "C5": "claims vs evidence",
}


def parse_level(text: str) -> Level:
    value = text.strip().upper().replace("C0I", "C0i").replace("C0.IMPORT", "C0i")
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
    """The highest capability level (C0..C4) that passed. Levels are independent: each is
    judged on its own run, so a failure below does not hide a pass above (it fails
    ``--require`` instead). None only when no capability level passed.
    """
    passed = {r.level for r in results if r.status == "pass"}
    reached: Level | None = None
    for level in LADDER:
        if level in passed:
            reached = level
    return reached


def passed_levels(results: Iterable[LevelResult]) -> list[Level]:
    """Every level that passed, in order."""
    passed = {r.level for r in results if r.status == "pass"}
    return [lv for lv in LEVELS if lv in passed]


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
        """True when no level up to ``require`` (in LEVELS order) failed.

        Each level is judged on its own result. Skipped (not selected, no GPU) and
        not-applicable levels do not fail the requirement (they are shown as such); C5
        counts only when required explicitly.
        """
        limit = LEVELS.index(require)
        return all(
            r.status in ("pass", "skipped", "not_applicable")
            for r in self.levels if LEVELS.index(r.level) <= limit
        )

    def to_json(self) -> dict[str, Any]:
        return {"target": dict(self.target), "levels": [r.to_json() for r in self.levels],
                "highest": self.highest, "passed_levels": passed_levels(self.levels)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        return cls(target=data.get("target") or {},
                   levels=tuple(LevelResult.from_json(r) for r in data.get("levels", [])))


def _failing(r: LevelResult | None, key: str, name: str) -> set[str]:
    """Names listed under ``details[key]`` (C0's missing modules, C0i's failing imports)."""
    if r is None:
        return set()
    return {str(item.get(name)) for item in r.details.get(key) or [] if isinstance(item, Mapping)}


def fidelity(rebuilt: Report, live: Report) -> dict[str, Any]:
    """Does the rebuilt image do everything the live one does? Lists every level where it
    does worse ("gaps"): a level live passes and rebuilt does not, an import the rebuilt C0
    misses or the rebuilt import check fails that live resolves or imports."""
    gaps: list[dict[str, Any]] = []
    for level in LEVELS:
        a, b = live.get(level), rebuilt.get(level)
        if a is None or b is None:
            continue
        if a.status == "pass" and b.status != "pass":
            gaps.append({"level": level, "live": a.summary, "rebuilt": b.summary})
    for level, key, name in (("C0", "missing", "module"), ("C0i", "failed", "module")):
        a, b = live.get(level), rebuilt.get(level)
        if a is None or b is None or not (a.ran and b.ran) or a.status == "pass":
            continue  # not run on both, or already a gap above
        worse = sorted(_failing(b, key, name) - _failing(a, key, name))
        if worse:
            gaps.append({"level": level, "live": a.summary,
                         "rebuilt": f"worse than live: {', '.join(worse[:10])}"})
    return {"live_highest": live.highest, "rebuilt_highest": rebuilt.highest,
            "reaches_live_level": not gaps, "gaps": gaps}
