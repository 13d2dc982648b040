"""An artifact's ``export-report.json`` (docs/export.md): every audited command with its
decision, and what the plan could not explain or reproduce. Made from the plan and the
distill report (:meth:`ExportReport.of`); ``export-report.md`` says the same for people.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal

from synth.formats.base import Count, Part, RunId
from synth.formats.manifest import BundleSummary
from synth.formats.plan import BuildPlan, CarriedFile, CommandOutcome, DistillReport

#: The newest export-report.json format this synth reads and writes.
EXPORT_REPORT_FORMAT: Final = 1


def decision_counts(outcomes: Iterable[CommandOutcome]) -> dict[str, int]:
    """How many commands were kept, folded and dropped."""
    counts = {"kept": 0, "folded": 0, "dropped": 0}
    for o in outcomes:
        counts[o.decision] = counts.get(o.decision, 0) + 1
    return counts


class DecisionCounts(Part, frozen=True):
    kept: Count
    folded: Count
    dropped: Count


class ReportSource(Part, frozen=True):
    """The export report's ``source``: how ``source/`` differs from the task's commit."""

    commit: str | None = None
    dirty: bool | None = None
    patch: str | None = None
    changed: tuple[str, ...] = ()
    not_carried: tuple[str, ...] = ()


class ExportReport(Part, frozen=True, kw_only=True):
    """``export-report.json``."""

    format: Literal[1]
    task: str
    run_id: RunId
    #: The command that regenerates the artifact.
    command: str
    counts: DecisionCounts
    commands: tuple[CommandOutcome, ...]
    unexplained: tuple[str, ...]
    not_reproducible: tuple[str, ...]
    warnings: tuple[str, ...]
    incomplete: tuple[str, ...] = ()
    risks: tuple[str, ...] = ()
    unaudited: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    carried: tuple[CarriedFile, ...] = ()
    source: ReportSource = ReportSource()
    #: With ``--bundle`` only (absent otherwise).
    bundle: BundleSummary | None = None

    @classmethod
    def of(cls, plan: BuildPlan, report: DistillReport,
           bundle: BundleSummary | None = None) -> ExportReport:
        src = plan.source
        return cls(
            format=EXPORT_REPORT_FORMAT, task=plan.task, run_id=plan.run_id,
            command=plan.regenerate_command,
            counts=DecisionCounts(**decision_counts(report.outcomes)),
            commands=report.outcomes, unexplained=report.unexplained,
            not_reproducible=report.not_reproducible, warnings=report.warnings,
            incomplete=report.incomplete, risks=report.risks, unaudited=report.unaudited,
            missing=plan.missing, carried=plan.carried,
            source=ReportSource(src.commit, src.dirty, src.patch, src.changed, src.not_carried),
            bundle=bundle)

    def encodable(self) -> dict[str, Any]:
        """The document, ``bundle`` left out when there is none."""
        return {name: getattr(self, name) for name in self.__struct_fields__
                if name != "bundle" or self.bundle is not None}
