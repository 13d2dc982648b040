"""``summary.json`` and ``summary.md``: pass rates per agent and level, live vs rebuilt,
fidelity and time per stage, from the latest record of each cell.

A level's pass rate counts the cells where it was decided: ``pass`` over ``pass`` +
``fail`` + ``not_reached``, plus cells that reached no verdict at all (the run, export or
rebuild broke: a failure, as ResearchEnvBench counts a setup that did not work) at the
levels some other cell decided. Levels ``not_applicable`` or ``skipped`` leave the
denominator. Crashed cells are counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from statistics import mean
from typing import Any

LEVELS = ("C0", "C0i", "C1", "C2", "C3", "C4", "C5")
TARGETS = ("rebuilt", "live")
STAGES = ("run", "export", "build", "verify")
SUMMARY_FORMAT = 1


def _rate(passed: int, decided: int) -> float | None:
    return round(passed / decided, 4) if decided else None


def level_counts(records: Iterable[Mapping[str, Any]], target: str,
                 level: str) -> dict[str, Any]:
    counts = {"pass": 0, "fail": 0, "not_reached": 0, "no_verdict": 0,
              "not_applicable": 0, "skipped": 0}
    for rec in records:
        levels = ((rec.get("verify") or {}).get("levels") or {}).get(target)
        if not levels:
            counts["no_verdict"] += 1
            continue
        status = levels.get(level, "no_verdict")
        counts[status if status in counts else "no_verdict"] += 1
    decided = counts["pass"] + counts["fail"] + counts["not_reached"]
    if decided:  # a level no cell decided (not applicable to the task) stays undecided
        decided += counts["no_verdict"]
    return {**counts, "decided": decided, "rate": _rate(counts["pass"], decided)}


def _agent_summary(recs: list[Mapping[str, Any]]) -> dict[str, Any]:
    done = [r for r in recs if r.get("status") == "done"]
    fid = [(r.get("verify") or {}).get("reaches_live_level") for r in done]
    fid_known = [f for f in fid if f is not None]
    fp = [(r.get("verify") or {}).get("fingerprint_equal") for r in done]
    fp_known = [f for f in fp if f is not None]
    times = {s: [float(r["times"][s]) for r in done
                 if isinstance((r.get("times") or {}).get(s), int | float)] for s in STAGES}
    passed = [bool((r.get("verify") or {}).get("passed")) for r in done]
    return {
        "cells": len(recs), "done": len(done), "crashed": len(recs) - len(done),
        "passed": sum(passed), "pass_rate": _rate(sum(passed), len(done)),
        "levels": {t: {lv: level_counts(done, t, lv) for lv in LEVELS} for t in TARGETS},
        "fidelity": {"compared": len(fid_known), "reaches": sum(fid_known),
                     "rate": _rate(sum(fid_known), len(fid_known))},
        "fingerprint_equal": {"compared": len(fp_known), "equal": sum(fp_known)},
        "export_incomplete": sum(1 for r in done if (r.get("export") or {}).get("incomplete")),
        "mean_seconds": {s: round(mean(v), 2) if v else None for s, v in times.items()},
    }


def summarize(records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The summary of the latest record per cell (``ResultsFolder.latest()``)."""
    recs = sorted(records.values(), key=lambda r: str(r["cell"]))
    agents = sorted({str(r["agent"]) for r in recs})
    tasks = sorted({str(r["task"]) for r in recs})
    return {
        "format": SUMMARY_FORMAT,
        "cells": len(recs),
        "done": sum(1 for r in recs if r.get("status") == "done"),
        "crashed": sum(1 for r in recs if r.get("status") != "done"),
        "tasks": tasks,
        "agents": {a: _agent_summary([r for r in recs if r["agent"] == a]) for a in agents},
        "by_task": {t: {a: [_cell_line(r) for r in recs
                            if r["task"] == t and r["agent"] == a] for a in agents}
                    for t in tasks},
    }


def _cell_line(rec: Mapping[str, Any]) -> dict[str, Any]:
    v = rec.get("verify") or {}
    failed = (rec.get("run") or {}).get("failed_statements")
    return {"cell": rec["cell"], "status": rec.get("status"), "passed": v.get("passed"),
            "highest": v.get("highest") or {}, "error": rec.get("error")
            or v.get("error") or (rec.get("export") or {}).get("error")
            or (f"{failed} statement(s) of the agent failed" if failed else None)}


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.0f}%"


def level_table(summary: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The pass-rate table (rebuilt / live per level): its header and rows, for both the
    markdown and the HTML report."""
    header = ["agent", "cells", *LEVELS, "passed", "fidelity"]
    rows = []
    for name, a in summary["agents"].items():
        cells = [f"{_pct(a['levels']['rebuilt'][lv]['rate'])} / "
                 f"{_pct(a['levels']['live'][lv]['rate'])}" for lv in LEVELS]
        count = f"{a['done']}" + (f" (+{a['crashed']} crashed)" if a["crashed"] else "")
        rows.append([name, count, *cells, _pct(a["pass_rate"]), _pct(a["fidelity"]["rate"])])
    return header, rows


def time_table(summary: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = [[name, *("—" if a["mean_seconds"][s] is None else f"{a['mean_seconds'][s]:.1f}"
                     for s in STAGES)] for name, a in summary["agents"].items()]
    return ["agent", *STAGES], rows


def cell_table(summary: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    rows = []
    for task, per_agent in summary["by_task"].items():
        for agent, lines in per_agent.items():
            for c in lines:
                note = (c["error"] or "").replace("\n", " ")[:120]
                rows.append([task, agent, c["cell"], str(c["status"]),
                             c["highest"].get("rebuilt") or "—",
                             c["highest"].get("live") or "—", note])
    return ["task", "agent", "cell", "status", "rebuilt", "live", "note"], rows


def intro(summary: Mapping[str, Any]) -> str:
    return (f"{summary['cells']} cells ({summary['done']} done, {summary['crashed']} "
            f"crashed) over {len(summary['tasks'])} task(s): {', '.join(summary['tasks'])}.")


UNDECIDED = "`—`: the level was not decided in any cell (not applicable, or skipped)."
#: The report's tables, in order: (title, rows function).
TABLES = (("Pass rate per level (rebuilt / live)", level_table),
          ("Mean seconds per stage", time_table), ("Cells", cell_table))


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows)]


def render_markdown(summary: Mapping[str, Any]) -> str:
    out = ["# synth bench — summary", "", intro(summary)]
    for title, table in TABLES:
        out += ["", f"## {title}", "", *_md_table(*table(summary))]
        if table is level_table:
            out += ["", UNDECIDED]
    return "\n".join(out) + "\n"
