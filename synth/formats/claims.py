"""``claims.json``: the agent's self-report, ResearchEnvBench ``report.json`` compatible
(docs/formats.md). Written by the agent, so it has no ``format``; extra fields are allowed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta

from synth.formats.base import Count, Document, Part

#: Where the agent writes it in the session's container (carried out when the session ends).
CONTAINER_CLAIMS = "/synth/claims.json"


class Claims(Document, frozen=True, kw_only=True):
    """The agent's self-report. Every known field is optional and may be null (unknown);
    extra fields are allowed. These fields are synth's one declaration of them (C5's own
    list, ``synth.pyramid.claims``, which imports no synth, is checked against the schema
    made from them). ``raw`` is the document as the agent wrote it, extra fields and all (C5
    and REB's ``report.json`` get it whole)."""

    python_path: str | None = None
    python_version: str | None = None
    torch_version: str | None = None
    jax_version: str | None = None
    jaxlib_version: str | None = None
    tensorflow_version: str | None = None
    cupy_version: str | None = None
    cuda_available: bool | None = None
    gpu_count: Count | None = None
    ddp_expected_ok: bool | None = None
    env_tool: str | None = None
    env_name: str | None = None
    notes: str | tuple[str, ...] | None = None
    #: The compiled extension modules the agent says it built (importable names); C5
    #: imports each in the environment.
    native_modules_built: tuple[str, ...] | None = None
    # REB's optional report fields.
    dataset_hf_id: str | None = None
    model_hf_id: str | None = None
    installed_packages: tuple[dict[str, Any], ...] | None = None
    capabilities: dict[str, Any] | None = None
    artifacts: dict[str, Any] | None = None

    @property
    def extra(self) -> dict[str, Any]:
        """The fields the claims schema does not declare (an agent may add its own)."""
        return {k: v for k, v in self.raw.items() if k not in self.__struct_fields__}


class RebReport(Part, frozen=True, kw_only=True):
    """ResearchEnvBench's report.json contract (tools/env_setup_runner/report_schema.json):
    every field present; python_path an interpreter path; env_tool one of REB's tools;
    notes a string or null. The ``reb`` profile of the claims schema (``$defs.reb``), applied
    to tasks imported from REB (synth.plugins.reb.profile); its required fields are REB's,
    in REB's order."""

    python_path: Annotated[str, Meta(min_length=1)]
    python_version: Any
    torch_version: Any
    cuda_available: Any
    gpu_count: Any
    ddp_expected_ok: Any
    env_tool: Literal["conda", "uv", "pip", "poetry", "venv", "none"]
    env_name: Any
    notes: str | None
    artifacts: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    dataset_hf_id: str | None = None
    installed_packages: tuple[dict[str, Any], ...] | None = None
    model_hf_id: str | None = None
