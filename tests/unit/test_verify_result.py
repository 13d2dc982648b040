"""Results: highest level, --require, fidelity, and the JSON round trip."""

from __future__ import annotations

import json

from verify.result import LevelResult, Report, fidelity, highest_level


def report(*statuses: str) -> Report:
    levels = []
    for i, s in enumerate(statuses):
        st, _, reason = s.partition(":")
        levels.append(LevelResult(f"C{i}", st, reason.strip() or None))  # type: ignore[arg-type]
    return Report(target={"kind": "test"}, levels=tuple(levels))


CPU_ONLY = ("pass", "pass", "skipped: no GPU runtime on this engine",
            "skipped: no GPU runtime on this engine", "skipped: no GPU runtime on this engine",
            "not_applicable: no claims")


def test_highest_level_stops_at_a_skip_and_steps_over_not_applicable() -> None:
    assert report(*CPU_ONLY).highest == "C1"
    assert report("pass", "not_applicable: lib", "pass", "fail", "not_reached: C3 failed",
                  "pass").highest == "C2"
    assert report("fail", "not_reached: C0 failed").highest is None
    assert highest_level([]) is None


def test_require_ignores_skips_but_not_failures() -> None:
    assert report(*CPU_ONLY).passes_up_to("C1")
    assert report(*CPU_ONLY).passes_up_to("C4")  # skipped levels do not fail --require
    broken = report("pass", "fail", "not_reached: C1 failed")
    assert broken.passes_up_to("C0")
    assert not broken.passes_up_to("C1")
    liar = report(*CPU_ONLY[:5], "fail: 3 false claim(s)")
    assert liar.passes_up_to("C4")
    assert not liar.passes_up_to("C5")


def test_fidelity_gap() -> None:
    live = report(*CPU_ONLY)
    rebuilt = report("fail: 1/3 imports unresolved: yaml (pyyaml)", "not_reached: C0 failed",
                     *CPU_ONLY[2:])
    f = fidelity(rebuilt, live)
    assert f["reaches_live_level"] is False
    assert f["live_highest"] == "C1"
    assert f["rebuilt_highest"] is None
    assert [g["level"] for g in f["gaps"]] == ["C0", "C1"]
    assert fidelity(live, live)["reaches_live_level"] is True


def test_report_json_round_trip() -> None:
    r = Report(target={"kind": "rebuilt", "image": "x"}, levels=(
        LevelResult("C0", "pass", None, {"missing_ratio": 0.0}, {"missing": []}, 1.23456),
        LevelResult("C1", "fail", "exit 1"),
    ))
    data = json.loads(json.dumps(r.to_json()))
    assert data["highest"] == "C0"
    assert data["levels"][0]["seconds"] == 1.235
    back = Report.from_json(data)
    assert back.levels[1].summary == "fail: exit 1"
    assert back.to_json() == data
