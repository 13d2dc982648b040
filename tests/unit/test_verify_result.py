"""Results: highest level, --require, fidelity, and the JSON round trip."""

from __future__ import annotations

import json

from synth.pyramid.result import LEVELS, LevelResult, Report, fidelity, highest_level


def report(*statuses: str) -> Report:
    levels = []
    for level, s in zip(LEVELS, statuses, strict=False):
        st, _, reason = s.partition(":")
        levels.append(LevelResult(level, st, reason.strip() or None))  # type: ignore[arg-type]
    return Report(target={"kind": "test"}, levels=tuple(levels))


CPU_ONLY = ("pass", "pass", "pass", "skipped: no GPU runtime on this engine",
            "skipped: no GPU runtime on this engine", "skipped: no GPU runtime on this engine",
            "not_applicable: no claims")


def test_highest_level_is_the_highest_that_passed_on_its_own() -> None:
    assert report(*CPU_ONLY).highest == "C1"
    assert report("pass", "pass", "not_applicable: lib", "pass", "fail", "skipped: x",
                  "pass").highest == "C2"
    # C0 deselected or failing does not hide C1's pass: never "none" while a level passed.
    assert report("skipped: not selected (--levels)", "fail", "pass").highest == "C1"
    assert report("fail", "fail").highest is None
    assert highest_level([]) is None
    assert report("fail", "pass", "pass").to_json()["passed_levels"] == ["C0i", "C1"]


def test_require_ignores_skips_but_not_failures() -> None:
    assert report(*CPU_ONLY).passes_up_to("C1")
    assert report(*CPU_ONLY).passes_up_to("C4")  # skipped levels do not fail --require
    broken = report("pass", "pass", "fail")
    assert broken.passes_up_to("C0i")
    assert not broken.passes_up_to("C1")
    assert not report("fail", "pass", "pass").passes_up_to("C1")  # C0 counts for C1
    assert report("fail", "pass", "pass").passes_up_to("C0") is False
    liar = report(*CPU_ONLY[:6], "fail: 3 false claim(s)")
    assert liar.passes_up_to("C4")
    assert not liar.passes_up_to("C5")


def test_fidelity_gap() -> None:
    live = report(*CPU_ONLY)
    rebuilt = report("fail: 1/3 imports unresolved: yaml (pyyaml)", "pass", "fail: exit 1",
                     *CPU_ONLY[3:])
    f = fidelity(rebuilt, live)
    assert f["reaches_live_level"] is False
    assert f["live_highest"] == "C1"
    assert f["rebuilt_highest"] == "C0i"
    assert [g["level"] for g in f["gaps"]] == ["C0", "C1"]
    assert fidelity(live, live)["reaches_live_level"] is True


def test_fidelity_worse_even_when_both_fail() -> None:
    def c0(*missing: str) -> Report:
        return Report(target={}, levels=(LevelResult(
            "C0", "fail", "x", details={"missing": [{"module": m} for m in missing]}),
            LevelResult("C0i", "fail", "y", details={"failed": [{"module": "pkg.train"}]})))
    f = fidelity(c0("h5py", "yaml"), c0("h5py"))
    assert f["reaches_live_level"] is False
    assert f["gaps"] == [{"level": "C0", "live": "fail: x",
                          "rebuilt": "worse than live: yaml"}]
    assert fidelity(c0("h5py"), c0("h5py", "yaml"))["reaches_live_level"] is True


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
