"""ResearchEnvBench's task profile (:mod:`synth.profiles`): what the core does differently for
a task imported from REB, and what REB's files add to ``verify`` and ``bench``. Registered as
the ``reb`` entry point of the ``synth.plugins`` group."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from synth.engine.base import Engine, EngineContainer, Mount
from synth.formats.verify import VerifyDocument
from synth.plugins.reb import assets, jobs, probes, scoring, session
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
        scripts = site.task_dir / "reb" / "benchmark_scripts" if site.task_dir else None
        folder = ([Mount(scripts.resolve(), probes.SCRIPTS_MOUNT)]
                  if scripts is not None and scripts.is_dir() else [])
        return [*session.report_mount(site.claims), *folder]

    def assets(self, engine: Engine, site: ProbeSite,
               say: Say) -> AbstractContextManager[Install | None]:
        return assets.assets_for(engine, site.image, site.task_dir, workdir=site.workdir,
                                 cache_dir=site.assets_cache, offline=site.assets_offline,
                                 claims=site.claims, say=say)

    def before_probes(self, container: EngineContainer, site: ProbeSite) -> None:
        probes.before_probes(container, site.workdir)

    def after_probes(self, container: EngineContainer, report: Report,
                     site: ProbeSite) -> Report:
        return probes.after_probes(container, report, site.workdir)

    def score(self, name: str, outcome: Any, engine: Engine | None,
              say: Say) -> dict[str, Any]:
        return scoring.score_verification(outcome, engine, say)

    def bench_cell(self, doc: VerifyDocument, task_dir: Path, record: Mapping[str, Any],
                   files: Mapping[str, str], cell_dir: Path) -> None:
        # Every cell as a REB job (cells/<cell>/reb/): one run id per bench, the results
        # folder's name (cells/<cell> is two levels under it), the agent as the baseline;
        # C5 by REB's rules where REB's validator did not run (no container here for C0).
        text = files.get("claims.json")
        stages = scoring.reb_stages(doc, scoring.claims_of_text(text), pyright=False)
        jobs.bench_job(doc, task_dir, record, text, cell_dir / "reb",
                       run_id=cell_dir.parent.parent.name, overrides=stages)


PROFILE = RebProfile()
