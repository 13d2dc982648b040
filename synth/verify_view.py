"""How a ``synth verify`` outcome is shown: ``verify.json`` (:func:`to_document`), the
markdown report (:func:`render_markdown`), the terminal table (:func:`print_table`) and the
``verification.json`` record left in a rebuilt artifact (:func:`verification_record`).

The renderers read the JSON document, never the typed outcome, so a ``verify.json`` read
back from disk renders the same way.
"""

from __future__ import annotations

import json
import platform
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from synth import __version__
from synth.verify_outcome import VerifyOutcome
from verify.result import LEVEL_TITLES, LEVELS, VERIFY_FORMAT


def to_document(outcome: VerifyOutcome) -> dict[str, Any]:
    """``verify.json`` for ``outcome`` (docs/verify.md, synth/schemas/verify.schema.json)."""
    target: dict[str, Any] = {"kind": outcome.target.kind, "path": str(outcome.target.path),
                              "task": outcome.target.name}
    if outcome.build is not None:
        target["artifact_dir"] = str(outcome.build.artifact_dir)
    doc: dict[str, Any] = {
        "format": VERIFY_FORMAT, "synth_version": __version__, "target": target,
        "require": outcome.options.require,
        "levels_selected": sorted(outcome.options.levels),
        "build": outcome.build.to_json() if outcome.build else None,
        "fidelity": outcome.fidelity.to_json() if outcome.fidelity else None,
        "fingerprint": outcome.fingerprint.to_json() if outcome.fingerprint else None,
    }
    if outcome.export is not None:
        doc["export"] = outcome.export.to_json()
    if outcome.artifact_check is not None:
        doc["artifact_check"] = outcome.artifact_check.to_json()
    doc["reports"] = {k: r.to_json() for k, r in outcome.reports.items()}
    doc["decides"] = outcome.decides
    doc["passed"] = outcome.passed
    if outcome.fidelity is not None and not outcome.fidelity.reaches_live_level:
        doc["fidelity_failed"] = "; ".join(outcome.fidelity.failures[:3])
    if outcome.scores:
        doc["scores"] = {name: dict(section) for name, section in sorted(outcome.scores.items())}
    return doc


_MARK = {"pass": "pass", "fail": "FAIL", "skipped": "skipped", "not_applicable": "n/a",
         "not_reached": "not reached"}


def cell(r: Mapping[str, Any] | None) -> str:
    if r is None:
        return ""
    text = _MARK.get(str(r.get("status")), str(r.get("status")))
    return f"{text}: {r['reason']}" if r.get("reason") else text


def _levels(doc: Mapping[str, Any], key: str) -> dict[str, Mapping[str, Any]]:
    report = doc["reports"].get(key) or {}
    return {r["level"]: r for r in report.get("levels", [])}


def report_columns(doc: Mapping[str, Any]) -> list[str]:
    return [k for k in ("rebuilt", "live", "host") if k in doc["reports"]]


def extra_lines(doc: Mapping[str, Any]) -> list[str]:
    """What a reader needs besides the table: missing modules, claims, fidelity, fingerprint."""
    lines: list[str] = []
    for key in report_columns(doc):
        levels = _levels(doc, key)
        lines += _c0_lines(key, levels.get("C0") or {})
        lines += _c0i_lines(key, levels.get("C0i") or {})
        lines += _c5_lines(key, levels.get("C5") or {})
    lines += _fidelity_lines(doc)
    check = doc.get("artifact_check") or {}
    if check.get("problems"):
        lines.append("artifact: MODIFIED since export, rebuilt anyway (--allow-modified): "
                     + "; ".join(check["problems"][:10]))
    export = doc.get("export")
    if export:
        lines.append(("reused the existing export " if export["reused"] else "exported ")
                     + f"{export['artifact_dir']} ({export['why']})")
    build = doc.get("build")
    if build:
        lines.append(f"rebuilt {build['image']} in {build['seconds']}s (no cache); "
                     f"log {build['log']}")
    return lines


def _c5_lines(key: str, c5: Mapping[str, Any]) -> list[str]:
    if c5.get("status") not in ("pass", "fail", "skipped") or not c5.get("metrics"):
        return []
    cm = c5["metrics"]
    lines = [f"{key} C5: {cm['hallucinations']} false claim(s) — path "
             f"{cm['path_hallucinations']}, version {cm['version_hallucinations']}, "
             f"capability {cm['capability_hallucinations']}; {cm['unverifiable']} "
             f"unverifiable, {cm['unknown']} unknown"]
    details = c5.get("details") or {}
    for check in details.get("checks", []):
        if check["verdict"] in ("hallucination", "unverifiable"):
            lines.append(f"  {check['verdict']}: {check['field']} = "
                         f"{json.dumps(check['claimed'])} (observed "
                         f"{json.dumps(check['observed'])}) {check['note']}".rstrip())
    # Field names are the agent's: shown quoted unless they are plain names.
    unchecked = [str(u["field"]) if str(u["field"]).isidentifier() else json.dumps(u["field"])
                 for u in details.get("not_checked", [])]
    if unchecked:
        lines.append(f"  not checked: {', '.join(unchecked)}")
    return lines


def _fidelity_lines(doc: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    fid = doc.get("fidelity")
    if fid:
        verdict = ("reaches the live image's level and agrees with it" if
                   fid["reaches_live_level"] else "does NOT match the live image")
        lines.append(f"fidelity: the rebuilt image {verdict} (highest level passed: live "
                     f"{fid['live_highest'] or 'none passed'}, rebuilt "
                     f"{fid['rebuilt_highest'] or 'none passed'})")
        for gap in fid["gaps"]:
            lines.append(f"  gap {gap['level']}: live {gap['live']}; rebuilt {gap['rebuilt']}")
    fp = doc.get("fingerprint")
    if fp:
        if fp.get("status") == "compared":
            unexplained = fp.get("unexplained", [])
            lines.append(
                f"fingerprint (live vs rebuilt): {len(unexplained)} unexplained "
                f"difference(s), {len(fp.get('explained', []))} explained; packages "
                f"{'equal' if fp['packages_equal'] else 'DIFFER'}, native .so "
                f"{'equal' if fp['native_equal'] else 'DIFFER'}, contents "
                f"{'equal' if fp['content_equal'] else 'differ'}")
            lines.extend(f"  DIFFERS {line}" for line in unexplained[:40])
            if len(unexplained) > 40:
                lines.append(f"  … and {len(unexplained) - 40} more in verify.json")
        else:
            lines.append(f"fingerprint: {fp.get('status')}: {fp.get('reason')}")
    return lines


def _c0_lines(key: str, c0: Mapping[str, Any]) -> list[str]:
    m = c0.get("metrics") or {}
    classes = m.get("classes") or {}
    apart = ", ".join(f"{v.get('missing', 0)} {k.replace('_', ' ')}" for k, v in
                      classes.items() if k != "required" and v.get("missing"))
    lines = [] if not m else [
        f"{key} C0: {m.get('missing_statements', 0)}/{m.get('import_statements', 0)} required "
        f"import statements unresolved (synth missing_statement_ratio "
        f"{m.get('missing_statement_ratio', 0)}, allowed {m.get('max_missing_ratio', 0)}); "
        f"ResearchEnvBench missing top-level modules "
        f"{m.get('researchenvbench_missing_top_modules', 0)}/"
        f"{m.get('researchenvbench_top_modules', 0)} "
        f"(ratio {m.get('researchenvbench_missing_ratio', 0)}); {m.get('files_in_scope', 0)}"
        f"/{m.get('files', 0)} files in scope, scanned with {m.get('scanner')}"
        + (f"; not failing: {apart} missing" if apart else "")]
    details = c0.get("details") or {}
    for miss in details.get("missing", []):
        lines.append(f"  missing {miss['module']} -> {_hint(miss)} "
                     f"(at {', '.join(miss['locations'][:3])})")
    for miss in details.get("optional_missing", [])[:10]:
        lines.append(f"  {miss.get('class', 'optional').replace('_', ' ')}: {miss['module']} "
                     f"-> {_hint(miss)} (at {', '.join(miss['locations'][:2])})")
    return lines


def _hint(miss: Mapping[str, Any]) -> str:
    source = miss.get("distribution_source") or "guess"
    if source == "guess":
        return f"no known distribution (perhaps `{miss['distribution']}`, a guess)"
    return f"install {miss['distribution']} ({source})"


def _c0i_lines(key: str, c0i: Mapping[str, Any]) -> list[str]:
    m = c0i.get("metrics") or {}
    if not m:
        return []
    opt = m.get("optional_failed", 0)
    lines = [f"{key} C0i: {m.get('ok', 0)}/{m.get('modules', 0)} modules import"
             + (f"; {opt} fail only for lack of an optional extra" if opt else "")]
    for r in (c0i.get("details") or {}).get("failed", [])[:10]:
        where = f" at {r['where']}" if r.get("where") else ""
        lines.append(f"  {r['module']}: {r.get('error_class')}: "
                     f"{str(r.get('message'))[:160]}{where}")
    for r in (c0i.get("details") or {}).get("optional_failed", [])[:10]:
        lines.append(f"  optional ({r.get('optional')}, not failing): {r['module']}: "
                     f"{r.get('error_class')}: {str(r.get('message'))[:160]}")
    pip = (c0i.get("details") or {}).get("pip_check") or {}
    if pip.get("ran") and pip.get("exit_code"):
        first = (pip.get("output") or "").strip().splitlines()[:3]
        lines.append(f"  pip check (a finding, not a verdict): {'; '.join(first)}")
    return lines


def verdict_line(doc: Mapping[str, Any]) -> str:
    """The last line: the verdict on --require, and every level that passed on its own."""
    key = doc["decides"]
    report = doc["reports"][key]
    passed = report.get("passed_levels") or [
        r["level"] for r in report.get("levels", []) if r.get("status") == "pass"]
    failed = [r["level"] for r in report.get("levels", []) if r.get("status") == "fail"
              and LEVELS.index(r["level"]) <= LEVELS.index(doc["require"])]
    word = "PASSED" if doc["passed"] else "FAILED"
    head = (f"{word}: the {key} target passes every applicable level up to {doc['require']}"
            if not failed else
            f"{word}: the {key} target fails {', '.join(failed)} (required up to "
            f"{doc['require']})")
    if not failed and doc.get("fidelity_failed"):
        head = f"FAILED: the rebuilt image differs from the live one ({doc['fidelity_failed']})"
    return head + (f" (levels passed: {', '.join(passed)}; highest {report.get('highest')})"
                   if passed else " (no level passed)")


def render_markdown(doc: Mapping[str, Any]) -> str:
    cols = report_columns(doc)
    out = [f"# synth verify — {doc['target']['task']}", "",
           f"Target: {doc['target']['kind']} `{doc['target']['path']}`", ""]
    for key in cols:
        t = doc["reports"][key]["target"]
        where = t.get("image") or t.get("runtime")
        out.append(f"- **{key}**: `{where}`, python `{t.get('python')}`")
    out += ["", "| level | what | " + " | ".join(cols) + " |",
            "|---|---|" + "---|" * len(cols)]
    for level in LEVELS:
        cells = [cell(_levels(doc, k).get(level)).replace("|", "\\|") for k in cols]
        out.append(f"| {level} | {LEVEL_TITLES[level]} | " + " | ".join(cells) + " |")
    out += ["", verdict_line(doc), ""]
    extra = extra_lines(doc)
    if extra:
        out += ["```", *extra, "```", ""]
    return "\n".join(out)


def print_table(doc: Mapping[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from synth import console

    cols = report_columns(doc)
    table = Table(title=f"synth verify: {escape(str(doc['target']['task']))}",
                  show_lines=False)
    table.add_column("level")
    table.add_column("what")
    for key in cols:
        table.add_column(key, overflow="fold")
    colors = {"pass": "green", "fail": "red", "not_reached": "red", "skipped": "yellow",
              "not_applicable": "dim"}
    for level in LEVELS:
        row = [level, LEVEL_TITLES[level]]
        for key in cols:
            r = _levels(doc, key).get(level)
            color = colors.get(str(r.get("status")) if r else "", "")
            text = escape(cell(r))
            row.append(f"[{color}]{text}[/]" if color else text)
        table.add_row(*row)
    console.out.print(table)
    for line in extra_lines(doc):
        console.out.print(line, markup=False, highlight=False)
    style = "bold green" if doc["passed"] else "bold red"
    console.out.print(f"[{style}]{escape(verdict_line(doc))}[/]")


def verification_record(doc: Mapping[str, Any]) -> dict[str, Any]:
    """What verify leaves in the artifact folder: levels, verdict, date and the machine."""
    rebuilt = doc["reports"].get("rebuilt") or {}
    return {
        "format": 1,
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "synth_version": __version__,
        "docker_version": _docker_version(),
        "architecture": platform.machine(),
        "gpu_driver": _gpu_driver(),
        "require": doc["require"],
        "passed": doc["passed"],
        "verdict": verdict_line(doc),
        "image": (doc.get("build") or {}).get("image"),
        "levels": {r["level"]: r["status"] for r in rebuilt.get("levels", [])},
        "highest": rebuilt.get("highest"),
        "fidelity": (doc.get("fidelity") or {}).get("reaches_live_level"),
        "allow_modified": bool((doc.get("artifact_check") or {}).get("problems")),
    }


def _command_output(argv: list[str]) -> str | None:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _docker_version() -> str | None:
    return _command_output(["docker", "version", "--format", "{{.Server.Version}}"])


def _gpu_driver() -> str:
    out = _command_output(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    return out.splitlines()[0] if out else "none"


