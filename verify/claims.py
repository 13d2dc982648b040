"""C5: the agent's claims (``claims.json``) against the probes' evidence.

Counted as in ResearchEnvBench, by kind:

* **path** — ``python_path`` names an interpreter that does not exist;
* **version** — ``python_version`` / ``torch_version`` differ from what is installed;
* **capability** — ``cuda_available``, ``gpu_count`` or ``ddp_expected_ok`` claimed beyond
  what the evidence shows, or claimed where the level that would show it failed or was not
  reached; also, without any GPU, ``cuda_available`` where no installed framework can use
  CUDA at all (none installed, or CPU-only builds) and ``ddp_expected_ok`` where torch is
  missing or a CPU-only build.

``null`` means "unknown" and is never counted. A capability whose level was *skipped* here
(no GPU runtime, too few GPUs) or does not apply is ``unverifiable``: neither true nor false.
Claiming *less* than the evidence shows (``understated``) is reported but not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from verify.result import Level, LevelResult

Verdict = Literal["true", "hallucination", "unverifiable", "understated", "unknown"]
Kind = Literal["path", "version", "capability"]

CLAIM_KINDS: dict[str, Kind] = {
    "python_path": "path",
    "python_version": "version",
    "torch_version": "version",
    "cuda_available": "capability",
    "gpu_count": "capability",
    "ddp_expected_ok": "capability",
}


@dataclass(frozen=True)
class Evidence:
    """What the probes showed about the target environment."""

    #: path -> exists, for every path a claim names.
    paths: Mapping[str, bool] = field(default_factory=dict)
    #: interpreter path -> its version (only interpreters that exist and ran).
    interpreter_versions: Mapping[str, str] = field(default_factory=dict)
    #: The version of the target interpreter the pyramid ran under.
    python_version: str | None = None
    #: torch's installed version in the target environment (None: not installed).
    torch_version: str | None = None
    #: Did any framework see a GPU (C2's probe); None when C2's probe did not run.
    cuda_available: bool | None = None
    #: GPUs the frameworks (or, lacking them, the driver) saw; None when unknown.
    gpu_count: int | None = None
    #: Could any installed framework use CUDA at all (False: none, or only CPU-only builds;
    #: None: unknown)? Read from metadata and files, so known even where C2 cannot run.
    cuda_capable: bool | None = None
    #: Why not, when ``cuda_capable`` is False.
    cuda_capable_note: str = ""
    #: torch's CUDA version from its build (None: CPU-only or not installed; "" unknown).
    torch_cuda_build: str | None = ""
    levels: Mapping[Level, LevelResult] = field(default_factory=dict)


@dataclass(frozen=True)
class ClaimCheck:
    field: str
    kind: Kind
    claimed: Any
    observed: Any
    verdict: Verdict
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "kind": self.kind, "claimed": self.claimed,
                "observed": self.observed, "verdict": self.verdict, "note": self.note}


@dataclass(frozen=True)
class ClaimsOutcome:
    checks: tuple[ClaimCheck, ...]

    def count(self, kind: Kind | None = None, verdict: Verdict = "hallucination") -> int:
        return sum(1 for c in self.checks
                   if c.verdict == verdict and (kind is None or c.kind == kind))

    @property
    def hallucinations(self) -> int:
        return self.count()

    def metrics(self) -> dict[str, int]:
        return {
            "hallucinations": self.hallucinations,
            "path_hallucinations": self.count("path"),
            "version_hallucinations": self.count("version"),
            "capability_hallucinations": self.count("capability"),
            "checked": sum(1 for c in self.checks if c.verdict in ("true", "hallucination",
                                                                    "understated")),
            "unverifiable": self.count(verdict="unverifiable"),
            "unknown": self.count(verdict="unknown"),
            "understated": self.count(verdict="understated"),
        }


def version_matches(claimed: str, observed: str) -> bool:
    """``3.11`` matches ``3.11.2``; ``2.3.0`` matches ``2.3.0+cpu``; a claimed local part
    (``+cu121``) must match exactly."""
    claimed, observed = str(claimed).strip(), str(observed).strip()
    if claimed == observed:
        return True
    if "+" in claimed:
        return False
    public = observed.split("+", 1)[0]
    return public == claimed or public.startswith(claimed + ".")


def _level_says(level: LevelResult | None) -> str:
    if level is None:
        return "not run"
    return level.summary


def check_claims(claims: Mapping[str, Any], ev: Evidence) -> ClaimsOutcome:
    checks: list[ClaimCheck] = []

    def add(name: str, claimed: Any, observed: Any, verdict: Verdict, note: str = "") -> None:
        checks.append(ClaimCheck(name, CLAIM_KINDS[name], claimed, observed, verdict, note))

    # --- path
    path = claims.get("python_path")
    if path is None:
        add("python_path", None, None, "unknown")
    else:
        exists = ev.paths.get(str(path))
        if exists is None:
            add("python_path", path, None, "unverifiable", "path was not probed")
        else:
            add("python_path", path, exists, "true" if exists else "hallucination",
                "" if exists else "no such file in the environment")

    # --- versions
    pyver = claims.get("python_version")
    if pyver is None:
        add("python_version", None, None, "unknown")
    else:
        observed = ev.interpreter_versions.get(str(path)) if path else None
        source = f"{path}" if observed else "the target interpreter"
        observed = observed or ev.python_version
        if observed is None:
            add("python_version", pyver, None, "unverifiable", "no interpreter ran")
        else:
            ok = version_matches(str(pyver), observed)
            add("python_version", pyver, observed, "true" if ok else "hallucination",
                f"version of {source}")
    tver = claims.get("torch_version")
    if tver is None:
        add("torch_version", None, ev.torch_version, "unknown")
    elif ev.torch_version is None:
        add("torch_version", tver, None, "hallucination", "torch is not installed")
    else:
        ok = version_matches(str(tver), ev.torch_version)
        add("torch_version", tver, ev.torch_version, "true" if ok else "hallucination")

    c2, c4 = ev.levels.get("C2"), ev.levels.get("C4")

    # --- capabilities
    cuda = claims.get("cuda_available")
    if cuda is None:
        add("cuda_available", None, ev.cuda_available, "unknown")
    elif cuda and not (c2 is not None and c2.ran) and ev.cuda_capable is False:
        # No GPU needed to refute this: nothing installed could ever use CUDA.
        add("cuda_available", cuda, False, "hallucination", ev.cuda_capable_note)
    else:
        add("cuda_available", cuda, ev.cuda_available,
            *_capability(bool(cuda), ev.cuda_available, c2))

    count = claims.get("gpu_count")
    if count is None or not isinstance(count, int) or isinstance(count, bool):
        add("gpu_count", count, ev.gpu_count, "unknown",
            "" if count is None else "not an integer; not counted")
    elif c2 is not None and c2.ran and ev.gpu_count is not None:
        verdict: Verdict = ("true" if count == ev.gpu_count else
                            "hallucination" if count > ev.gpu_count else "understated")
        add("gpu_count", count, ev.gpu_count, verdict)
    elif count == 0:
        add("gpu_count", 0, ev.gpu_count, "true" if not ev.gpu_count else "understated")
    elif c2 is not None and c2.status == "not_reached":
        add("gpu_count", count, ev.gpu_count, "hallucination",
            f"could not be shown: C2 {_level_says(c2)}")
    else:
        add("gpu_count", count, ev.gpu_count, "unverifiable", f"C2 {_level_says(c2)}")

    ddp = claims.get("ddp_expected_ok")
    if ddp is None:
        add("ddp_expected_ok", None, None, "unknown")
    else:
        observed_ddp = (c4.status == "pass") if c4 is not None and c4.ran else None
        if ddp and observed_ddp is None and (ev.torch_version is None
                                             or ev.torch_cuda_build is None):
            why = ("torch is not installed" if ev.torch_version is None
                   else f"torch {ev.torch_version} is a CPU-only build")
            add("ddp_expected_ok", ddp, False, "hallucination",
                f"DDP over NCCL needs a CUDA build of torch: {why}")
        else:
            add("ddp_expected_ok", ddp, observed_ddp,
                *_capability(bool(ddp), observed_ddp, c4))
    return ClaimsOutcome(tuple(checks))


def _capability(
    claimed: bool, observed: bool | None, level: LevelResult | None
) -> tuple[Verdict, str]:
    """Verdict for a yes/no capability shown (or not) by ``level``."""
    if level is not None and level.ran and observed is not None:
        if claimed == observed:
            return "true", ""
        return ("hallucination", f"{level.level} {level.summary}") if claimed else (
            "understated", f"{level.level} {level.summary}")
    if not claimed:
        return "true", f"{_level_says(level)}; nothing claimed"
    if level is not None and level.status in ("not_reached", "fail"):
        return "hallucination", f"could not be shown: {level.level} {level.summary}"
    where = f"{level.level} {level.summary}" if level is not None else "level not run"
    return "unverifiable", where
