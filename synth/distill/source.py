"""Where the artifact's research code comes from: the task's repository, copied or cloned."""

from __future__ import annotations

from synth.distill.common import Notes
from synth.distill.load import LoadedRun
from synth.formats.plan import SourcePlan
from synth.util.urls import without_credentials

#: Where the source lives in the image (the session's working folder).
SOURCE_DEST = "/workspace"


def source_plan(run: LoadedRun, notes: Notes) -> SourcePlan:
    repo = run.repo
    if repo is None:
        notes.warnings.append("the task file is gone: the artifact carries no source; "
                              "COPY your repository to /workspace yourself")
        return SourcePlan(kind="none", dest=SOURCE_DEST)
    if repo.url:
        return SourcePlan(kind="url", dest=SOURCE_DEST, url=without_credentials(repo.url),
                          commit=repo.commit)
    return SourcePlan(kind="path", dest=SOURCE_DEST)
