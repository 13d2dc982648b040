"""What `synth runs list` and `synth runs show` print: enough to tell runs apart.

The display side only: runs are read with synth.record.rundir's loader; a run that does not
load is skipped with a warning, never a crash. Each run gains its agent's label, its claims
status after C5 (when `synth verify` checked them), the latest verify verdict per level and
the size of its images where the engine answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from synth.config import Settings
from synth.engine.base import Engine
from synth.errors import InputFileError, SynthError
from synth.formats.store import (
    VERIFICATION,
    VERIFY_DOCUMENT,
    VERIFY_FAILURE,
    ArtifactDir,
    read_verify,
    read_verify_failure,
)
from synth.formats.verification import VerificationRecord
from synth.formats.verify import VerifyDocument, VerifyFailure
from synth.record.rundir import describe_run, effective_status, find_run, list_runs, read_run

#: A size lookup: image ref -> bytes, or None where the engine does not know it.
SizeOf = Callable[[str], int | None]
_SHORT = {"pass": "pass", "fail": "FAIL", "skipped": "skip", "not_applicable": "n/a",
          "not_reached": "not-reached"}


def agent_label(agent: Mapping[str, Any] | None) -> str:
    """`replay:good.sh`, `exec:my-agent`, `shell`, or the preset a run names."""
    if not agent:
        return "-"
    kind = str(agent.get("kind") or "?")
    if agent.get("preset"):
        return f"{kind}:{agent['preset']}"
    if agent.get("script"):
        return f"{kind}:{Path(str(agent['script'])).name}"
    argv = agent.get("argv") or []
    if argv:
        return f"{kind}:{Path(str(argv[0])).name}"
    return kind


def latest_verify(run_dir: Path) -> VerifyDocument | None:
    """The run's verify.json (`synth verify RUN` writes it to <run>/verify/), if there is
    one the store reads (a refused one is not shown: `synth diff` says why)."""
    path = run_dir / "verify" / VERIFY_DOCUMENT.rel
    try:
        return read_verify(path)
    except InputFileError:
        return None


def later_verification(run_dir: Path) -> VerificationRecord | None:
    """The run's export's ``verification.json`` where it is newer than the run's own verify
    records (``<run>/verify/``): a ``synth verify RUN --rebuild -o DIR`` wrote its verify.json
    elsewhere, and the run's export the record of that rebuild. None otherwise."""
    try:
        record = ArtifactDir(run_dir / "export").verification()
    except (SynthError, OSError):
        return None
    if record is None:
        return None
    try:
        when = datetime.strptime(record.date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    own = [run_dir / "verify" / kind.rel for kind in (VERIFY_DOCUMENT, VERIFY_FAILURE)]
    mtimes = [p.stat().st_mtime for p in own if p.is_file()]
    # verify.json is written a moment after verification.json, by the same verify.
    if mtimes and when.timestamp() <= max(mtimes) + 1:
        return None
    return record


def latest_failure(run_dir: Path) -> VerifyFailure | None:
    """The run's verify-failed.json: present where its latest ``synth verify --rebuild``
    stopped before a verdict (the artifact did not build); None where there is none or it
    is refused."""
    try:
        return read_verify_failure(run_dir / "verify" / VERIFY_FAILURE.rel)
    except InputFileError:
        return None


def failure_row(failure: VerifyFailure | None) -> dict[str, Any] | None:
    """What ``runs list --json`` says of a failed rebuild (``verify_failed``)."""
    if failure is None:
        return None
    return {"status": failure.status, "kind": failure.error.kind,
            "message": failure.error.message, "hint": failure.error.hint, "log": failure.log}


def verify_levels(doc: VerifyDocument) -> tuple[str, dict[str, str]]:
    """(report name, level -> status) of the report that decided the verdict."""
    report = doc.reports.get(doc.decides)
    return doc.decides, {r.level: r.status for r in report.levels} if report else {}


def claims_status(run: Mapping[str, Any], verify_doc: VerifyDocument | None) -> str:
    """`valid`/`absent`… as recorded, or `3 false` once C5 found false claims."""
    recorded = str((run.get("claims") or {}).get("status") or "-")
    if verify_doc is None:
        return recorded
    report = verify_doc.reports.get(verify_doc.decides)
    c5 = report.get("C5") if report is not None else None
    metrics = c5.metrics if c5 is not None else {}
    if "hallucinations" not in metrics:
        return recorded
    false = int(metrics["hallucinations"])
    if false:
        return f"{false} false"
    return f"{recorded}, 0 false" if recorded == "valid" else recorded


def view(run_dir: Path, size_of: SizeOf | None = None) -> dict[str, Any]:
    """One run for display; raises SynthError or ValueError if run.json does not load."""
    run = read_run(run_dir)
    doc = latest_verify(run_dir)
    row: dict[str, Any] = {
        "run_dir": str(run_dir),
        "run_id": run.get("run_id", run_dir.name),
        "task": (run.get("task") or {}).get("name", run_dir.parent.name),
        "agent": agent_label(run.get("agent")),
        "status": effective_status(run, run_dir),
        "audit_verified": (run.get("audit") or {}).get("verified"),
        "started": run.get("started"),
        "violations": len(run.get("violations") or []),
        "failed_statements": len(run.get("failed_statements") or []),
        "limit_hits": sorted({str(h.get("kind")) for h in run.get("limit_hits") or []
                              if isinstance(h, dict)}),
        "claims": claims_status(run, doc),
        "verify": None,
        "verify_failed": failure_row(latest_failure(run_dir)),
        "images": {},
    }
    if doc is not None:
        key, levels = verify_levels(doc)
        row["verify"] = {"report": key, "passed": doc.passed, "levels": levels,
                         "fidelity_failed": doc.fidelity_failed}
    later = later_verification(run_dir)
    if later is not None:  # a verify --rebuild -o elsewhere, after the run's own record
        row["verify_failed"] = None
        row["verify"] = {"report": "rebuilt", "passed": later.passed,
                         "levels": dict(later.levels),
                         "fidelity_failed": "differs" if later.fidelity is False else None,
                         "from": f"export/{VERIFICATION.rel}"}
    refs = {"live": (run.get("live_image") or {}).get("ref"),
            "rebuilt": doc.build.image if doc is not None and doc.build else None}
    if size_of is not None:
        for name, ref in refs.items():
            if ref and (size := size_of(str(ref))) is not None:
                row["images"][name] = {"ref": ref, "size": size}
    return row


def views(run_dirs: list[Path], size_of: SizeOf | None,
          warn: Callable[[str], None]) -> list[dict[str, Any]]:
    rows = []
    for d in run_dirs:
        try:
            rows.append(view(d, size_of))
        except (SynthError, ValueError, TypeError, AttributeError) as exc:
            warn(f"skipped {d}: {exc}")
    return rows


@dataclass(frozen=True)
class RunList:
    """``synth runs list``'s outcome: one row per run that loads, a message per skipped one."""

    rows: list[dict[str, Any]]
    skipped: list[str]

    def to_json(self) -> dict[str, Any]:
        return {"runs": self.rows, "skipped": self.skipped}


def image_sizes(engine: Engine) -> SizeOf:
    """Image sizes as ``engine`` knows them; None for an image it does not know, and for
    every image where no engine answers."""
    def size_of(ref: str) -> int | None:
        try:
            return int(engine.image_inspect(ref).get("Size") or 0) or None
        except SynthError:
            return None

    return size_of


def list_runs_view(settings: Settings, task: str | None, warn: Callable[[str], None],
                   engine: Engine | None = None) -> RunList:
    """Every recorded run (of ``task``), oldest first; ``warn`` hears of each skipped one;
    ``engine`` gives the images' sizes (none without it)."""
    dirs = list_runs(settings, task)
    skipped: list[str] = []

    def skip(message: str) -> None:
        skipped.append(message)
        warn(message)

    return RunList(views(dirs, image_sizes(engine) if engine else None, skip), skipped)


@dataclass(frozen=True)
class RunShow:
    """``synth runs show``'s outcome: the run as rundir describes it, and its view."""

    info: dict[str, Any]
    row: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {**self.info, "view": self.row}


def show_run_view(settings: Settings, run_ref: str | None,
                  engine: Engine | None = None) -> RunShow:
    """The run ``run_ref`` names (default the latest); ``engine`` as for the list."""
    run_dir = find_run(settings, run_ref)
    return RunShow(describe_run(run_dir), view(run_dir, image_sizes(engine) if engine else None))


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1000
    return f"{size:.1f}GB"  # pragma: no cover - the loop returns


def verdict_text(row: Mapping[str, Any]) -> str:
    """The latest verdict, then its levels: ``PASSED C0=pass …`` or ``FAILED C0=pass …``,
    with ``fidelity=DIFFERS`` where the rebuilt image differs from the live one (a verdict
    that fails with every level passing); ``BUILD-FAILED`` (``ERROR``) where the latest
    rebuild stopped before one."""
    failed = row.get("verify_failed")
    if failed:
        return str(failed["status"]).upper()
    v = row.get("verify")
    if not v:
        return "-"
    levels = " ".join(f"{lv}={_SHORT.get(st, st)}" for lv, st in sorted(v["levels"].items()))
    fidelity = " fidelity=DIFFERS" if v.get("fidelity_failed") else ""
    return f"{'PASSED' if v.get('passed') else 'FAILED'} {levels}{fidelity}"


def verify_text(row: Mapping[str, Any]) -> str:
    v = row.get("verify")
    if row.get("verify_failed"):
        return f"verify={verdict_text(row)}"
    return f"verify[{v['report']}] {verdict_text(row)}" if v else "verify=-"


def list_line(row: Mapping[str, Any]) -> str:
    sizes = " ".join(f"{k}={human_size(i['size'])}" for k, i in sorted(row["images"].items()))
    status = str(row["status"] or "-") + (f"({row['failed_statements']} failed)"
                                          if row.get("failed_statements") else "")
    return (f"{row['task']}/{row['run_id']}  {status:<11} {row['agent']:<18} "
            f"violations={row['violations']} claims={row['claims']}  {verify_text(row)}"
            + ("  audit=UNVERIFIED" if row.get("audit_verified") is False else "")
            + (f"  LIMIT-HIT={','.join(row['limit_hits'])}" if row.get("limit_hits") else "")
            + (f"  {sizes}" if sizes else ""))


def show_lines(row: Mapping[str, Any]) -> list[str]:
    """What `runs show` adds to rundir.format_run: label, checked claims, verdicts, sizes."""
    failed = row.get("verify_failed")
    lines = [f"agent-as   {row['agent']}", f"claims-now {row['claims']}",
             f"verify     {verdict_text(row)}"
             + (f"  ({row['verify']['report']})" if row.get("verify") and not failed else "")]
    if failed:
        first = str(failed["message"]).strip().splitlines()[:1] or [""]
        lines.append(f"           {failed['kind']}: {first[0]}"
                     + (f" (log: {failed['log']})" if failed.get("log") else ""))
        if failed.get("hint"):
            lines.append(f"           hint: {failed['hint']}")
    lines += [f"image      {name} {i['ref']} {human_size(i['size'])}"
              for name, i in sorted(row["images"].items())]
    return lines
