"""How a ``synth verify`` result is shown: the markdown report (:func:`render_markdown`)
and the terminal table (:func:`print_table`).

The renderers read the document (:class:`synth.formats.verify.VerifyDocument`), never the
outcome, so a ``verify.json`` read back from disk (:func:`synth.formats.store.read_verify`)
renders the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from synth.formats.verify import VerifyDocument
from synth.pyramid.result import LEVEL_TITLES, LEVELS, LevelResult, passed_levels
from synth.ui import console

_MARK = {"pass": "pass", "fail": "FAIL", "skipped": "skipped", "not_applicable": "n/a",
         "not_reached": "not reached"}


def cell(r: LevelResult | None) -> str:
    if r is None:
        return ""
    text = _MARK.get(r.status, r.status)
    return f"{text}: {r.reason}" if r.reason else text


def _levels(doc: VerifyDocument, key: str) -> dict[str, LevelResult]:
    report = doc.reports.get(key)
    return {r.level: r for r in report.levels} if report is not None else {}


def report_columns(doc: VerifyDocument) -> list[str]:
    return [k for k in ("rebuilt", "live", "host") if k in doc.reports]


def extra_lines(doc: VerifyDocument) -> list[str]:
    """What a reader needs besides the table: missing modules, claims, fidelity, fingerprint."""
    lines: list[str] = []
    for key in report_columns(doc):
        levels = _levels(doc, key)
        lines += _c0_lines(key, levels.get("C0"))
        lines += _c0i_lines(key, levels.get("C0i"))
        lines += _c5_lines(key, levels.get("C5"))
    lines += _fidelity_lines(doc)
    lines += [f"risk: {r}" for r in doc.risks]
    if doc.artifact_check is not None and doc.artifact_check.problems:
        lines.append("artifact: MODIFIED since export, rebuilt anyway (--allow-modified): "
                     + "; ".join(doc.artifact_check.problems[:10]))
    export = doc.export
    if export is not None:
        lines.append(("reused the existing export " if export.reused else "exported ")
                     + f"{export.artifact_dir} ({export.why})")
    build = doc.build
    if build is not None:
        how = "no cache" if build.no_cache in (None, True) else "with the build cache"
        lines.append(f"rebuilt {build.image} in {build.seconds}s ({how}); log {build.log}")
    return lines


def _c5_lines(key: str, c5: LevelResult | None) -> list[str]:
    if c5 is None or c5.status not in ("pass", "fail", "skipped") or not c5.metrics:
        return []
    cm = c5.metrics
    lines = [f"{key} C5: {cm['hallucinations']} false claim(s) — path "
             f"{cm['path_hallucinations']}, version {cm['version_hallucinations']}, "
             f"capability {cm['capability_hallucinations']}, environment "
             f"{cm.get('environment_hallucinations', 0)}; {cm['unverifiable']} "
             f"unverifiable, {cm['unknown']} unknown"]
    details = c5.details
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


def _live_fails(doc: VerifyDocument) -> list[str]:
    """Levels the live image fails as well as the rebuilt one: the setup itself never got
    there, whatever the artifact does (the agent's setup, or the repository's own code:
    the level's failures say which)."""
    live, rebuilt = _levels(doc, "live"), _levels(doc, "rebuilt")
    both = [lv for lv, r in live.items()
            if r.status == "fail" and getattr(rebuilt.get(lv), "status", None) == "fail"]
    if not both:
        return []
    return [f"the live environment itself fails {', '.join(both)}, so the rebuild cannot "
            "pass it either: the run's setup never got there (the agent's setup or the "
            "repository's own code: see the failures above, and the run's failed statements "
            "with `synth runs show`)"]


def _fidelity_lines(doc: VerifyDocument) -> list[str]:
    lines: list[str] = []
    fid = doc.fidelity
    if fid is not None:
        verdict = ("reaches the live image's level and agrees with it" if
                   fid.reaches_live_level else "does NOT match the live image")
        lines.append(f"fidelity: the rebuilt image {verdict} (highest level passed: live "
                     f"{fid.live_highest or 'none passed'}, rebuilt "
                     f"{fid.rebuilt_highest or 'none passed'})")
        for gap in fid.gaps:
            lines.append(f"  gap {gap.level}: live {gap.live}; rebuilt {gap.rebuilt}")
    lines += _live_fails(doc)
    fp = doc.fingerprint
    if fp is not None:
        if fp.status == "compared":
            unexplained, raw = fp.unexplained or (), fp.raw
            native = ("equal" if raw["native_equal"] else "the same code (debug info "
                      "differs)" if raw.get("native_code_equal") else "DIFFER")
            lines.append(
                f"fingerprint (live vs rebuilt): {len(unexplained)} unexplained "
                f"difference(s), {len(fp.explained or ())} explained; packages "
                f"{'equal' if raw['packages_equal'] else 'DIFFER'}, native .so "
                f"{native}, contents {'equal' if raw['content_equal'] else 'differ'}")
            lines.extend(f"  DIFFERS {line}" for line in unexplained[:40])
            if len(unexplained) > 40:
                lines.append(f"  … and {len(unexplained) - 40} more in verify.json")
        else:
            lines.append(f"fingerprint: {fp.status}: {fp.reason}")
    return lines


def _c0_lines(key: str, c0: LevelResult | None) -> list[str]:
    m = c0.metrics if c0 is not None else {}
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
    details = c0.details if c0 is not None else {}
    for miss in details.get("missing", []):
        lines.append(f"  missing {miss['module']} -> {_hint(miss)} "
                     f"(at {', '.join(miss['locations'][:3])})")
    for miss in details.get("optional_missing", [])[:10]:
        lines.append(f"  {miss.get('class', 'optional').replace('_', ' ')}: {miss['module']} "
                     f"-> {_hint(miss)} (at {', '.join(miss['locations'][:2])})")
    return lines


_NO_MODULE = re.compile(r"No module named '([^']+)'")


def _hint(miss: Mapping[str, Any]) -> str:
    """What to do about a module C0 did not resolve: a package whose import raised (a
    missing shared library, a missing dependency of its ``__init__``) is there already;
    installing it again is not the answer."""
    error = str(miss.get("error") or "")[:200]
    if miss.get("status") == "errored":
        return f"present, but importing its package raised {error}"
    other = _NO_MODULE.search(error)
    module = str(miss.get("module", ""))
    if other and not (module == other[1] or module.startswith(other[1] + ".")):
        return f"its package is present, but importing it needs {other[1]} ({error})"
    source = miss.get("distribution_source") or "guess"
    if source == "guess":
        return (f"no distribution on record provides it (perhaps `{miss['distribution']}`: "
                "the import's own name, a guess)")
    return f"install {miss['distribution']} ({source})"


def _c0i_lines(key: str, c0i: LevelResult | None) -> list[str]:
    m = c0i.metrics if c0i is not None else {}
    if c0i is None or not m:
        return []
    apart = [r.get("optional") for r in c0i.details.get("optional_failed", [])]
    why = {"extra": "for lack of an optional extra",
           "script": "on a bare import of a file beside them (a script's, not an install's)"}
    lines = [f"{key} C0i: {m.get('ok', 0)}/{m.get('modules', 0)} modules import"
             + "".join(f"; {apart.count(k)} fail only {w}" for k, w in why.items()
                       if k in apart)]
    for r in c0i.details.get("failed", [])[:10]:
        where = f" at {r['where']}" if r.get("where") else ""
        lines.append(f"  {r['module']}: {r.get('error_class')}: "
                     f"{str(r.get('message'))[:160]}{where}")
    for r in c0i.details.get("optional_failed", [])[:10]:
        lines.append(f"  optional ({r.get('optional')}, not failing): {r['module']}: "
                     f"{r.get('error_class')}: {str(r.get('message'))[:160]}")
    pip = c0i.details.get("pip_check") or {}
    if pip.get("ran") and pip.get("exit_code"):
        first = (pip.get("output") or "").strip().splitlines()[:3]
        lines.append(f"  pip check (a finding, not a verdict): {'; '.join(first)}")
    return lines


def verdict_line(doc: VerifyDocument) -> str:
    """The last line: the verdict on --require, and every level that passed on its own."""
    key, report, require = doc.decides, doc.deciding, doc.require
    passed = passed_levels(report.levels)
    failed = [r.level for r in report.levels if r.status == "fail"
              and LEVELS.index(r.level) <= LEVELS.index(require)]
    word = "PASSED" if doc.passed else "FAILED"
    head = (f"{word}: the {key} target passes every applicable level up to {require}"
            if not failed else
            f"{word}: the {key} target fails {', '.join(failed)} (required up to {require})")
    if not failed and doc.fidelity_failed:
        head = f"FAILED: the rebuilt image differs from the live one ({doc.fidelity_failed})"
    return head + (f" (levels passed: {', '.join(passed)}; highest {report.highest})"
                   if passed else " (no level passed)")


def render_markdown(doc: VerifyDocument) -> str:
    cols = report_columns(doc)
    out = [f"# synth verify — {doc.target.task}", "",
           f"Target: {doc.target.kind} `{doc.target.path}`", ""]
    for key in cols:
        t = doc.reports[key].target
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


def print_table(doc: VerifyDocument) -> None:
    from rich.table import Table

    escape = console.literal
    cols = report_columns(doc)
    table = Table(title=f"synth verify: {escape(str(doc.target.task))}",
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
            color = colors.get(r.status if r else "", "")
            text = escape(cell(r))
            row.append(f"[{color}]{text}[/]" if color else text)
        table.add_row(*row)
    console.out.print(table)
    for line in extra_lines(doc):
        console.show(line)
    style = "bold green" if doc.passed else "bold red"
    console.out.print(f"[{style}]{escape(verdict_line(doc))}[/]")
