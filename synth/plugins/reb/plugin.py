"""ResearchEnvBench's task profile (:mod:`synth.profiles`): what the core does differently for
a task imported from REB, and what REB's files add to ``verify`` and ``bench``. Registered as
the ``reb`` entry point of the ``synth.plugins`` group."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from synth.engine.base import Engine, EngineContainer, Mount
from synth.formats.model import VerifyDocument
from synth.plugins.reb import assets, probes, results, scoring, session
from synth.plugins.reb.profile import profile_errors, task_profile
from synth.profiles import BaseProfile, Install, ProbeSite, Say
from synth.pyramid.result import Report


class RebProfile(BaseProfile):
    """A task folder ``synth task import-reb`` wrote (it holds ``reb/manifest-entry.json``)."""

    name = "reb"
    scorings = ("reb",)

    def owns(self, task_dir: Path | None) -> bool:
        return task_profile(task_dir) == "reb"

    def session_setup(self, container: EngineContainer) -> None:
        session.offer_report_path(container)

    def claims_paths(self) -> tuple[str, ...]:
        return (session.REPORT_PATH,)

    def claims_errors(self, claims: Any) -> list[str]:
        return profile_errors(claims, "reb")

    def probe_mounts(self, site: ProbeSite) -> list[Mount]:
        return session.report_mount(site.claims)

    def assets(self, engine: Engine, site: ProbeSite,
               say: Say) -> AbstractContextManager[Install | None]:
        return assets.assets_for(engine, site.image, site.task_dir, workdir=site.workdir,
                                 cache_dir=site.assets_cache, offline=site.assets_offline,
                                 claims=site.claims, say=say)

    def before_probes(self, container: EngineContainer, site: ProbeSite) -> None:
        probes.clear_stage_results(container, site.workdir)

    def after_probes(self, container: EngineContainer, report: Report,
                     site: ProbeSite) -> Report:
        return probes.read_stage_skips(container, report, site.workdir)

    def score(self, name: str, outcome: Any, engine: Engine | None,
              say: Say) -> dict[str, Any]:
        return scoring.score_verification(outcome, engine, say)

    def bench_cell(self, doc: VerifyDocument, task_dir: Path, record: Mapping[str, Any],
                   files: Mapping[str, str], cell_dir: Path) -> None:
        # REB's per-stage results beside synth's own for every cell, and a REB job folder
        # for a cell of a task imported from REB.
        results.write_results(doc, str(record["task"]), cell_dir)
        scoring.bench_job(doc, task_dir, record, files.get("claims.json"), cell_dir / "reb")


PROFILE = RebProfile()
