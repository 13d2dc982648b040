"""synth minimize's pure parts: the parts of a plan, leaving them out, the search."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from msgspec import structs

from synth.cli.minimize import DEFAULT_BUDGET as CLI_BUDGET
from synth.distill.leave_out import Part, leave_out, parts_of
from synth.errors import UsageError
from synth.formats.plan import BuildPlan, DistillReport, read_plan_document
from synth.verify.minimize import DEFAULT_BUDGET, BudgetSpent, Trial, render_markdown, search

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic" / "plan.json"


def golden_plan() -> tuple[BuildPlan, DistillReport]:
    return read_plan_document(json.loads(GOLDEN.read_text()), str(GOLDEN))


def test_the_parts_of_a_plan_leave_the_environments_own_tooling_be() -> None:
    plan, _ = golden_plan()
    assert [str(p) for p in parts_of(plan)] == [
        "env:OMP_NUM_THREADS", "apt:build-essential", "apt:gcc", "apt:git", "python:numpy",
        "python:torch", "python:demo"]
    every = [str(p) for p in parts_of(plan, tooling=True)]
    assert {"env:PATH", "env:VIRTUAL_ENV", "python:pip"} <= set(every)


def test_leaving_out_removes_the_part_what_builds_it_and_says_so() -> None:
    plan, report = golden_plan()
    out, rep = leave_out(plan, report, [Part.parse("python:demo"), Part.parse("apt:git"),
                                        Part.parse("env:OMP_NUM_THREADS"),
                                        Part.parse("python:Torch")])
    assert [s.distribution for s in out.native] == []
    assert [n for n, _ in out.apt.pins] == ["build-essential", "gcc"]
    assert [n for n, _ in out.env] == ["PATH", "VIRTUAL_ENV"]
    assert [n for n, _ in out.envs[0].pins] == ["numpy", "pip"]
    assert rep.warnings[-1] == ("left out on request (synth export --without / synth minimize):"
                                " apt:git, env:OMP_NUM_THREADS, python:Torch, python:demo")
    assert leave_out(plan, report, []) == (plan, report)


def test_leaving_out_a_tools_own_environment_takes_all_of_it_and_never_the_primary() -> None:
    """``prefix:PATH``: a second environment (a tool's venv) goes whole, with its native
    steps, carried files and PATH entry; the primary one cannot be left out."""
    from synth.formats.plan import CarriedFile

    plan, report = golden_plan()
    tool = structs.replace(plan.envs[0], python="/opt/poetry/bin/python", prefix="/opt/poetry",
                           lock_file="requirements-opt-poetry.lock",
                           pins=(("poetry", "2.5.1"),))
    step = structs.replace(plan.native[0], ref="audit 9", distribution="plugin==1.0",
                           argv=("/opt/poetry/bin/pip", "install", "/workspace/plugin"))
    plan = structs.replace(
        plan, envs=(*plan.envs, tool), native=(*plan.native, step),
        carried=(CarriedFile("/opt/poetry/lib/python3.11/site-packages/x.py", "a" * 64, "x"),),
        env=tuple((n, "/opt/poetry/bin:" + v if n == "PATH" else v) for n, v in plan.env))
    second = ("packages went into a second interpreter: /opt/poetry/bin/python (1 pinned) "
              "besides the primary /opt/venv/bin/python; code run with /opt/venv/bin/python "
              "does not see them (the artifact makes it too; a tool's own environment the "
              "research code never runs with is left out with `synth export --without "
              "prefix:/opt/poetry`)")
    report = structs.replace(report, warnings=(*report.warnings, second))
    out, rep = leave_out(plan, report, [Part.parse("prefix:/opt/poetry/")])
    assert [e.prefix for e in out.envs] == ["/opt/venv"]
    assert [s.ref for s in out.native] == [plan.native[0].ref]
    assert out.carried == ()
    assert dict(out.env)["PATH"].split(":")[:2] == ["/opt/venv/bin", "/usr/local/sbin"]
    assert rep.warnings[-1].endswith("prefix:/opt/poetry")
    assert second not in rep.warnings  # it described an environment the artifact lacks now
    # Leaving a distribution out of it instead counts its pins again.
    _, rep = leave_out(plan, report, [Part.parse("python:poetry")])
    assert second not in rep.warnings and second.replace("(1 pinned)", "(0 pinned)") in \
        rep.warnings
    with pytest.raises(UsageError, match="that is the primary environment"):
        leave_out(plan, report, [Part.parse("prefix:/opt/venv")])
    with pytest.raises(UsageError, match="the plan has no prefix:/opt/none"):
        leave_out(plan, report, [Part.parse("prefix:/opt/none")])


def test_leaving_out_the_system_environment_keeps_the_image_s_programs() -> None:
    """``prefix:/usr`` (the system Python, a second environment here): its pins, its
    interpreter's steps and site files go; /usr/bin stays on PATH and a step or file of
    another program under /usr stays."""
    from synth.formats.plan import CarriedFile

    plan, report = golden_plan()
    system = structs.replace(plan.envs[0], python="/usr/bin/python3", prefix="/usr",
                             kind="system", lock_file="requirements-usr.lock",
                             pins=(("poetry", "2.5.1"),))
    own = structs.replace(plan.native[0], ref="audit 8", distribution="plugin==1.0",
                          argv=("/usr/bin/python3", "-m", "pip", "install", "/workspace/p"))
    make = structs.replace(plan.native[0], ref="audit 9", distribution=None,
                           argv=("/usr/bin/make", "-C", "/workspace/ext"))
    site = "/usr/local/lib/python3.11/dist-packages/x.py"
    plan = structs.replace(
        plan, envs=(*plan.envs, system), native=(*plan.native, own, make),
        carried=(CarriedFile(site, "a" * 64, "x"),
                 CarriedFile("/usr/local/share/data.bin", "b" * 64, "d")))
    out, _rep = leave_out(plan, report, [Part.parse("prefix:/usr")])
    assert [e.prefix for e in out.envs] == ["/opt/venv"]
    assert "/usr/bin" in dict(out.env)["PATH"].split(":")
    assert [s.ref for s in out.native] == [plan.native[0].ref, "audit 9"]
    assert [c.path for c in out.carried] == ["/usr/local/share/data.bin"]


@pytest.mark.parametrize("text", ["numpy", "conda:numpy", "python:", "apt: "])
def test_a_part_is_kind_and_name(text: str) -> None:
    with pytest.raises(UsageError, match="expected python:NAME"):
        Part.parse(text)


def test_a_part_the_plan_lacks_is_an_error() -> None:
    plan, report = golden_plan()
    with pytest.raises(UsageError, match="the plan has no python:scipy"):
        leave_out(plan, report, [Part.parse("python:scipy")])


def _parts(*names: str) -> list[Part]:
    return [Part("python", n) for n in names]


def fake_trial(needed: set[str], budget: int = 100):  # type: ignore[no-untyped-def]
    calls: list[tuple[str, ...]] = []

    def trial(parts: Sequence[Part]) -> Trial:
        if len(calls) >= budget:
            raise BudgetSpent
        key = tuple(sorted(p.name for p in parts))
        calls.append(key)
        return Trial(key, not needed & set(key), "fake", {"C1": "pass"}, 100 - len(key), 1.0)
    return trial, calls


def test_the_search_keeps_exactly_what_is_needed() -> None:
    trial, calls = fake_trial({"b", "e"})
    found = search(_parts("a", "b", "c", "d", "e", "f"), trial)
    assert sorted(p.name for p in found.removed) == ["a", "c", "d", "f"]
    assert not found.undecided
    assert calls[0] == ("a", "b", "c", "d", "e", "f")  # everything at once first
    assert len(calls) < 2 * 6


def test_everything_unneeded_takes_one_trial_and_nothing_unneeded_still_ends() -> None:
    trial, calls = fake_trial(set())
    assert len(search(_parts("a", "b", "c"), trial).removed) == 3 and len(calls) == 1
    trial, calls = fake_trial({"a", "b", "c"})
    assert search(_parts("a", "b", "c"), trial).removed == []
    assert search([], trial).removed == []


def test_a_spent_budget_leaves_the_rest_undecided() -> None:
    trial, calls = fake_trial({"b"}, budget=2)
    found = search(_parts("a", "b", "c", "d"), trial)
    assert calls == [("a", "b", "c", "d"), ("a", "b")]  # both rejected, then no budget
    assert found.removed == [] and [p.name for p in found.undecided] == ["a", "b", "c", "d"]
    trial, calls = fake_trial({"b"}, budget=3)
    found = search(_parts("a", "b", "c", "d"), trial)
    assert [p.name for p in found.removed] == ["a"]
    assert [p.name for p in found.undecided] == ["b", "c", "d"]


def test_the_report_names_what_went_what_stayed_and_what_it_saved() -> None:
    doc = {"run": "/r/20261205-x", "rebuilds": 3, "budget": 16, "complete": True,
           "undecided": [], "removed": ["python:tabulate"], "kept": ["python:pyyaml", "python:six"],
           "needed": ["python:pyyaml"], "required": ["python:six"],
           "artifact": "/r/minimize/artifact",
           "original": {"image_size": 216_000_000, "build_seconds": 6.4,
                        "levels": {"C0": "pass", "C1": "pass", "C2": "not_applicable"}},
           "steps": [{"removed": ["python:tabulate"], "image_size": 215_700_000,
                      "saved_bytes": 300_000, "build_seconds": 5.9}]}
    md = render_markdown(doc)
    assert "levels passed: C0, C1." in md
    assert "| python:tabulate | 215.7 MB | 0.3 MB | 5.9 s |" in md
    assert "## Needed\n\nA trial without each failed:\n\n`python:pyyaml`" in md
    assert "## Required by what is kept\n\nNot tried: a distribution kept requires each." in md
    assert CLI_BUDGET == DEFAULT_BUDGET


def test_with_a_requirements_graph_a_dependency_goes_only_with_what_needs_it() -> None:
    trial, calls = fake_trial({"numpy"})
    requires = {"rich": ["markdown-it-py", "Pygments"], "markdown_it_py": ["mdurl"],
                "pandas": ["numpy"], "kept-tool": ["six"]}
    found = search(_parts("rich", "markdown-it-py", "mdurl", "pygments", "pandas", "numpy",
                          "six", "tabulate"), trial, requires)
    assert [p.name for p in found.removed] == ["rich", "pandas", "tabulate", "markdown-it-py",
                                               "pygments", "mdurl"]
    # every trial removes only leaves (the same set asked again is answered from the
    # trials already run, never rebuilt); six, required by what is kept, is never tried
    assert list(dict.fromkeys(calls)) == [
        ("pandas", "rich", "tabulate"),
        ("markdown-it-py", "numpy", "pandas", "pygments", "rich", "tabulate"),
        ("markdown-it-py", "pandas", "rich", "tabulate"),
        ("markdown-it-py", "pandas", "pygments", "rich", "tabulate"),
        ("markdown-it-py", "mdurl", "pandas", "pygments", "rich", "tabulate")]
    assert not found.undecided and "six" not in str(calls)
    assert [p.name for p in found.needed] == ["numpy"]


def test_finished_trials_are_read_back_and_a_corrupt_line_is_named(tmp_path: Path) -> None:
    from synth.errors import VerifyError
    from synth.verify.minimize import read_trials

    log = tmp_path / "trials.jsonl"
    assert read_trials(log) == {}
    trial = Trial(("python:tabulate",), True, "kept out", {"C1": "pass"}, 10, 1.5)
    log.write_text(json.dumps(trial.to_json()) + "\n\n")
    assert read_trials(log) == {("python:tabulate",): trial}
    log.write_text(json.dumps(trial.to_json()) + "\n{\"without\": [\n")
    with pytest.raises(VerifyError, match=r"trials.jsonl:2: not a trial of synth minimize"):
        read_trials(log)
    log.write_text("[1, 2]\n")
    with pytest.raises(VerifyError, match=r"trials.jsonl:1: not a trial"):
        read_trials(log)
