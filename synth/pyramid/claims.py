"""C5: the agent's claims (``claims.json``) against the probes' evidence.

Counted as in ResearchEnvBench, by kind:

* **path** — ``python_path`` names an interpreter that does not exist;
* **version** — ``python_version`` or a framework's version (``torch_version``,
  ``jax_version``, ``jaxlib_version``, ``tensorflow_version``, ``cupy_version``) differs from
  what is installed, or names a framework that is not installed;
* **capability** — ``cuda_available``, ``gpu_count`` or ``ddp_expected_ok`` claimed beyond
  what the evidence shows, or claimed where the level that would show it failed or was not
  reached; also, without any GPU, ``cuda_available`` where no installed framework can use
  CUDA at all (none installed, or CPU-only builds) and ``ddp_expected_ok`` where torch is
  missing or a CPU-only build; a module of ``native_modules_built`` (the compiled
  extensions the agent says it built) that does not import in the environment, or imports
  from a file that is not a compiled extension.

* **environment** — ``env_tool`` names a kind of environment the interpreter is not in
  (``conda`` where its prefix has no ``conda-meta/``; ``venv``, ``uv`` or ``poetry`` where
  it has no ``pyvenv.cfg``), or ``env_name`` is not the name of the conda environment or
  virtual environment it is in (the prefix's last folder, the prefix itself, ``base`` for
  a conda root). ``pip`` or ``none`` where the interpreter *is* in a conda environment or
  a venv is understated.

Every other claim ResearchEnvBench's ``report.json`` can make is checked where it states a
fact: ``installed_packages`` (``{"name", "version"}`` items: installed, at that version;
version kind), ``artifacts`` (each absolute path it names exists; path kind) and the
entries of ``capabilities`` that name one of the claims above (``cuda``,
``cuda_available``, ``gpu_count``, ``ddp``, ``ddp_expected_ok``, ``multi_gpu``,
``native_modules_built``, ``native_extensions``), checked as that claim.

``null`` means "unknown" and is never counted. A capability whose level was *skipped* here
(no GPU runtime, too few GPUs) or does not apply is ``unverifiable``: neither true nor false.
Claiming *less* than the evidence shows (``understated``) is reported but not counted.
Every other field (``notes``, the hub ids, and any extra field) is listed as *not checked*,
with why.

This module is the one list of the claims fields C5 knows; synth's ``claims.schema.json`` is
checked against it by a test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .result import Level, LevelResult


@dataclass(frozen=True)
class BadClaims:
    """A claims.json that exists but cannot be used (not JSON, not in its schema, too
    large): C5 fails with ``reason``, every other level is unchanged."""

    reason: str


#: The agent's claims: the object, None when it wrote none, or why they cannot be used.
Claims: TypeAlias = Mapping[str, Any] | BadClaims | None

Verdict = Literal["true", "hallucination", "unverifiable", "understated", "unknown"]
Kind = Literal["path", "version", "capability", "environment"]

#: A framework's version claim -> the distributions that provide it (the first installed
#: one is compared; cupy ships under a name per CUDA major).
FRAMEWORK_VERSIONS: dict[str, tuple[str, ...]] = {
    "torch_version": ("torch",),
    "jax_version": ("jax",),
    "jaxlib_version": ("jaxlib",),
    "tensorflow_version": ("tensorflow", "tensorflow-cpu"),
    "cupy_version": ("cupy", "cupy-cuda13x", "cupy-cuda12x", "cupy-cuda11x"),
}

CLAIM_KINDS: dict[str, Kind] = {
    "python_path": "path",
    "python_version": "version",
    **dict.fromkeys(FRAMEWORK_VERSIONS, "version"),
    "cuda_available": "capability",
    "gpu_count": "capability",
    "ddp_expected_ok": "capability",
    "native_modules_built": "capability",
    "installed_packages": "version",
    "artifacts": "path",
    "capabilities": "capability",
    "env_tool": "environment",
    "env_name": "environment",
}

#: Fields of the claims schema that C5 does not check, and why.
DESCRIPTIVE_FIELDS: dict[str, str] = {
    "notes": "free text",
    "dataset_hf_id": "descriptive (the hub id of the data set the agent prepared); what the "
                     "probes download is the task's, not the agent's",
    "model_hf_id": "descriptive (the hub id of the model the agent prepared); what the "
                   "probes download is the task's, not the agent's",
}
#: Keys of ``capabilities`` that name a checked claim (key -> the claim it is checked as).
CAPABILITY_ALIASES: dict[str, str] = {
    "cuda": "cuda_available", "cuda_available": "cuda_available", "gpu_count": "gpu_count",
    "ddp": "ddp_expected_ok", "ddp_expected_ok": "ddp_expected_ok",
    "multi_gpu": "ddp_expected_ok", "native_modules_built": "native_modules_built",
    "native_extensions": "native_modules_built",
}

#: Every field the claims schema declares (synth/formats/schemas/claims.schema.json).
KNOWN_FIELDS: frozenset[str] = frozenset(CLAIM_KINDS) | frozenset(DESCRIPTIVE_FIELDS)


def claimed_distributions(claims: Mapping[str, Any]) -> list[str]:
    """The distributions whose installed version the facts probe must read for ``claims``."""
    named = {str(p.get("name")) for p in _packages(claims) if p.get("name")}
    return sorted({d for name, dists in FRAMEWORK_VERSIONS.items()
                   if claims.get(name) is not None for d in dists} | named)


def _packages(claims: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    items = claims.get("installed_packages")
    return [i for i in items if isinstance(i, Mapping)] if isinstance(items, list) else []


def _capabilities(claims: Mapping[str, Any]) -> Mapping[str, Any]:
    caps = claims.get("capabilities")
    return caps if isinstance(caps, Mapping) else {}


def claimed_native_modules(claims: Mapping[str, Any]) -> list[str]:
    """The compiled extensions the agent says it built (``native_modules_built``, and the
    ``capabilities`` entries that name them): each is imported in the environment."""
    lists = [claims.get("native_modules_built"),
             *(v for k, v in _capabilities(claims).items()
               if CAPABILITY_ALIASES.get(k) == "native_modules_built")]
    return sorted({m for lst in lists if isinstance(lst, list) for m in lst
                   if isinstance(m, str) and m})


def claimed_paths(claims: Mapping[str, Any]) -> list[str]:
    """Every path a claim names (``python_path``, absolute ``artifacts`` values)."""
    arts = claims.get("artifacts")
    values = list(arts.values()) if isinstance(arts, Mapping) else []
    python = claims.get("python_path")
    found = {v for v in values if isinstance(v, str) and v.startswith("/")}
    return sorted(found | ({str(python)} if python else set()))


@dataclass(frozen=True)
class Evidence:
    """What the probes showed about the target environment."""

    #: path -> exists, for every path a claim names.
    paths: Mapping[str, bool] = field(default_factory=dict)
    #: interpreter path -> its version (only interpreters that exist and ran).
    interpreter_versions: Mapping[str, str] = field(default_factory=dict)
    #: The version of the target interpreter the pyramid ran under.
    python_version: str | None = None
    #: torch's installed version in the target environment as ``torch.__version__`` reports
    #: it (its build's local part included, ``2.5.0+cu124``); None: not installed.
    torch_version: str | None = None
    #: distribution -> installed version (None: not installed), for every distribution the
    #: facts probe read; a distribution left out was not probed.
    distributions: Mapping[str, str | None] = field(default_factory=dict)
    #: module -> its import in the environment (``ok``, ``file``, ``extension``,
    #: ``error_class``, ``message``), for every module a claim says was compiled.
    native_imports: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Did any framework see a GPU (C2's probe); None when C2's probe did not run.
    cuda_available: bool | None = None
    #: GPUs the frameworks (or, lacking them, the driver) saw; None when unknown.
    gpu_count: int | None = None
    #: Could any installed framework use CUDA at all (False: none, or only CPU-only builds;
    #: None: unknown)? Read from metadata and files, so known even where C2 cannot run.
    cuda_capable: bool | None = None
    #: Why not, when ``cuda_capable`` is False.
    cuda_capable_note: str = ""
    #: interpreter path -> what its prefix is (the facts probe's ``environment``:
    #: ``prefix``, ``conda``, ``venv``), for the claimed interpreter; ``""``: the target's.
    environments: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
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
class Unchecked:
    """A claims field C5 did not check, and why."""

    field: str
    claimed: Any
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "claimed": self.claimed, "why": self.why}


@dataclass(frozen=True)
class ClaimsOutcome:
    checks: tuple[ClaimCheck, ...]
    unchecked: tuple[Unchecked, ...] = ()

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
            "environment_hallucinations": self.count("environment"),
            "checked": sum(1 for c in self.checks if c.verdict in ("true", "hallucination",
                                                                    "understated")),
            "unverifiable": self.count(verdict="unverifiable"),
            "unknown": self.count(verdict="unknown"),
            "understated": self.count(verdict="understated"),
            "not_checked": len(self.unchecked),
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


Add = Callable[[str, Any, Any, Verdict, str], None]


def check_claims(claims: Mapping[str, Any], ev: Evidence) -> ClaimsOutcome:
    """Every field C5 knows, checked against ``ev``; the others listed as not checked."""
    checks: list[ClaimCheck] = []

    def add(name: str, claimed: Any, observed: Any, verdict: Verdict, note: str = "") -> None:
        checks.append(ClaimCheck(name, CLAIM_KINDS[name], claimed, observed, verdict, note))

    _check_path(claims, ev, add)
    _check_python_version(claims, ev, add)
    for name, dists in FRAMEWORK_VERSIONS.items():
        # torch_version is one of ResearchEnvBench's fields: always reported, as the others;
        # the other frameworks' versions only when the agent named them.
        if name == "torch_version" or name in claims:
            _check_framework_version(name, dists, claims.get(name), ev, add)
    _check_cuda(claims.get("cuda_available"), ev, add)
    _check_gpu_count(claims.get("gpu_count"), ev, add)
    _check_ddp(claims.get("ddp_expected_ok"), ev, add)
    if "native_modules_built" in claims:
        _check_native("native_modules_built", claims["native_modules_built"], ev, add)
    _check_reb_extras(claims, ev, add)
    _check_environment(claims, ev, add)
    return ClaimsOutcome(tuple(checks), unchecked_fields(claims))


def unchecked_fields(claims: Mapping[str, Any]) -> tuple[Unchecked, ...]:
    """The fields present in ``claims`` that C5 does not check, sorted by name (and the
    entries of ``capabilities`` that name no checked claim)."""
    out = []
    for name in sorted(set(claims) - set(CLAIM_KINDS)):
        why = DESCRIPTIVE_FIELDS.get(name, "not a field C5 knows (not in the claims schema)")
        out.append(Unchecked(name, claims[name], why))
    for key, value in sorted(_capabilities(claims).items()):
        if key not in CAPABILITY_ALIASES:
            out.append(Unchecked(f"capabilities.{key}", value,
                                 "free-form capability: names no claim C5 can check"))
    return tuple(out)


def _check_path(claims: Mapping[str, Any], ev: Evidence, add: Add) -> None:
    path = claims.get("python_path")
    if path is None:
        add("python_path", None, None, "unknown", "")
        return
    exists = ev.paths.get(str(path))
    if exists is None:
        add("python_path", path, None, "unverifiable", "path was not probed")
    else:
        bare = "/" not in str(path)
        add("python_path", path, exists, "true" if exists else "hallucination",
            ("a name, found on PATH" if bare else "") if exists else
            "not on PATH in the environment" if bare else "no such file in the environment")


def _check_python_version(claims: Mapping[str, Any], ev: Evidence, add: Add) -> None:
    pyver, path = claims.get("python_version"), claims.get("python_path")
    if pyver is None:
        add("python_version", None, None, "unknown", "")
        return
    observed = ev.interpreter_versions.get(str(path)) if path else None
    source = f"{path}" if observed else "the target interpreter"
    observed = observed or ev.python_version
    if observed is None:
        add("python_version", pyver, None, "unverifiable", "no interpreter ran")
        return
    ok = version_matches(str(pyver), observed)
    add("python_version", pyver, observed, "true" if ok else "hallucination",
        f"version of {source}")


def installed_version(ev: Evidence, dists: tuple[str, ...]) -> tuple[bool, str | None, str]:
    """(probed, the installed version or None, the distribution it came from) for the first
    of ``dists`` that is installed. torch's is ``ev.torch_version`` where set: what
    ``torch.__version__`` reports, whose local part (``+cu132``) the metadata of PyPI's
    wheels lacks."""
    if dists == ("torch",) and (ev.torch_version is not None
                                or "torch" not in ev.distributions):
        return True, ev.torch_version, "torch"
    probed = False
    for dist in dists:
        if dist in ev.distributions:
            probed = True
            version = ev.distributions[dist]
            if version is not None:
                return True, version, dist
    return probed, None, dists[0]


def _check_framework_version(name: str, dists: tuple[str, ...], claimed: Any, ev: Evidence,
                             add: Add) -> None:
    probed, observed, dist = installed_version(ev, dists)
    if claimed is None:
        add(name, None, observed, "unknown", "")
    elif not probed:
        add(name, claimed, None, "unverifiable", f"{' / '.join(dists)} not probed")
    elif observed is None:
        add(name, claimed, None, "hallucination", f"{' / '.join(dists)} is not installed")
    else:
        ok = version_matches(str(claimed), observed)
        add(name, claimed, observed, "true" if ok else "hallucination",
            "" if dist == dists[0] else f"version of {dist}")


def _check_cuda(cuda: Any, ev: Evidence, add: Add) -> None:
    c2 = ev.levels.get("C2")
    if cuda is None:
        add("cuda_available", None, ev.cuda_available, "unknown", "")
    elif cuda and not (c2 is not None and c2.ran) and ev.cuda_capable is False:
        # No GPU needed to refute this: nothing installed could ever use CUDA.
        add("cuda_available", cuda, False, "hallucination", ev.cuda_capable_note)
    else:
        add("cuda_available", cuda, ev.cuda_available,
            *_capability(bool(cuda), ev.cuda_available, c2))


def _check_gpu_count(count: Any, ev: Evidence, add: Add) -> None:
    c2 = ev.levels.get("C2")
    if count is None or not isinstance(count, int) or isinstance(count, bool):
        add("gpu_count", count, ev.gpu_count, "unknown",
            "" if count is None else "not an integer; not counted")
    elif c2 is not None and c2.ran and ev.gpu_count is not None:
        verdict: Verdict = ("true" if count == ev.gpu_count else
                            "hallucination" if count > ev.gpu_count else "understated")
        add("gpu_count", count, ev.gpu_count, verdict, "")
    elif count == 0:
        add("gpu_count", 0, ev.gpu_count, "true" if not ev.gpu_count else "understated", "")
    elif c2 is not None and c2.status == "not_reached":
        add("gpu_count", count, ev.gpu_count, "hallucination",
            f"could not be shown: C2 {_level_says(c2)}")
    else:
        add("gpu_count", count, ev.gpu_count, "unverifiable", f"C2 {_level_says(c2)}")


def _check_ddp(ddp: Any, ev: Evidence, add: Add) -> None:
    c4 = ev.levels.get("C4")
    if ddp is None:
        add("ddp_expected_ok", None, None, "unknown", "")
        return
    observed = (c4.status == "pass") if c4 is not None and c4.ran else None
    if ddp and observed is None and (ev.torch_version is None or ev.torch_cuda_build is None):
        why = ("torch is not installed" if ev.torch_version is None
               else f"torch {ev.torch_version} is a CPU-only build")
        add("ddp_expected_ok", ddp, False, "hallucination",
            f"DDP over NCCL needs a CUDA build of torch: {why}")
    else:
        add("ddp_expected_ok", ddp, observed, *_capability(bool(ddp), observed, c4))


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


def _check_native(name: str, modules: Any, ev: Evidence, add: Add) -> None:
    """Each claimed compiled extension imported in the environment and compared: one that
    does not import, or imports from a plain Python file, is a false claim."""
    if modules is None:
        add(name, None, None, "unknown", "")
        return
    if not isinstance(modules, list):
        add(name, modules, None, "unknown", "not a list of module names; not counted")
        return
    for module in modules:
        got = ev.native_imports.get(module) if isinstance(module, str) else None
        if got is None:
            add(name, module, None, "unverifiable" if isinstance(module, str) else "unknown",
                "not imported here" if isinstance(module, str) else "not a module name")
        elif not got.get("ok"):
            add(name, module, False, "hallucination",
                f"does not import: {got.get('error_class')}: {str(got.get('message'))[:200]}")
        elif not got.get("extension"):
            add(name, module, got.get("file"), "hallucination",
                f"imports from {got.get('file')}: not a compiled extension")
        else:
            add(name, module, got.get("file"), "true", "a compiled extension that imports")


def _check_packages(items: Any, ev: Evidence, add: Add) -> None:
    if not isinstance(items, list):
        add("installed_packages", items, None, "unknown", "not a list; not counted")
        return
    for item in items:
        pkg = item.get("name") if isinstance(item, Mapping) else None
        version = item.get("version") if isinstance(item, Mapping) else None
        said = f"{pkg}=={version}" if version else str(pkg)
        if not isinstance(pkg, str) or pkg not in ev.distributions:
            add("installed_packages", item, None, "unknown" if not isinstance(pkg, str)
                else "unverifiable", "no name" if not isinstance(pkg, str) else "not probed")
            continue
        seen = ev.distributions[pkg]
        if seen is None:
            add("installed_packages", said, None, "hallucination", f"{pkg} is not installed")
        elif version is None or version_matches(str(version), seen):
            add("installed_packages", said, f"{pkg}=={seen}", "true", "")
        else:
            add("installed_packages", said, f"{pkg}=={seen}", "hallucination", "")


def _check_artifacts(arts: Any, ev: Evidence, add: Add) -> None:
    if not isinstance(arts, Mapping):
        add("artifacts", arts, None, "unknown", "not an object; not counted")
        return
    for key, path in sorted(arts.items()):
        exists = ev.paths.get(path) if isinstance(path, str) else None
        if exists is None:
            add("artifacts", {key: path}, None, "unknown",
                "not an absolute path; not counted")
        else:
            add("artifacts", {key: path}, exists, "true" if exists else "hallucination",
                "" if exists else "no such file in the environment")


def _as_capability(add: Add, key: str) -> Add:
    """``add`` for a claim made as ``capabilities.<key>``."""
    def under(_name: str, claimed: Any, observed: Any, verdict: Verdict, note: str) -> None:
        add("capabilities", {key: claimed}, observed, verdict, note)
    return under


def _check_capabilities(caps: Any, claims: Mapping[str, Any], ev: Evidence,
                        add: Add) -> None:
    """``capabilities`` entries that name a claim, checked as it (once: a top-level field
    of the same claim is the one checked)."""
    if not isinstance(caps, Mapping):
        add("capabilities", caps, None, "unknown", "not an object; not counted")
        return
    for key, value in sorted(caps.items()):
        claim = CAPABILITY_ALIASES.get(key)
        if claim is None or claims.get(claim) is not None:
            continue
        under = _as_capability(add, key)
        if claim == "native_modules_built":
            _check_native(claim, value, ev, under)
        else:
            {"cuda_available": _check_cuda, "gpu_count": _check_gpu_count,
             "ddp_expected_ok": _check_ddp}[claim](value, ev, under)


def _check_reb_extras(claims: Mapping[str, Any], ev: Evidence, add: Add) -> None:
    """The optional fields of REB's report that state facts."""
    if "installed_packages" in claims and claims["installed_packages"] is not None:
        _check_packages(claims["installed_packages"], ev, add)
    if "artifacts" in claims and claims["artifacts"] is not None:
        _check_artifacts(claims["artifacts"], ev, add)
    if "capabilities" in claims and claims["capabilities"] is not None:
        _check_capabilities(claims["capabilities"], claims, ev, add)


#: ``env_tool`` values that make a virtual environment (a prefix with ``pyvenv.cfg``).
VENV_TOOLS = frozenset({"venv", "uv", "poetry", "virtualenv", "pipenv", "pdm"})
#: ``env_tool`` values that name no environment manager.
NO_ENV_TOOLS = frozenset({"pip", "none", "system"})


def _environment_of(claims: Mapping[str, Any], ev: Evidence) -> Mapping[str, Any] | None:
    """The probed environment of the claimed interpreter, else of the target one."""
    path = claims.get("python_path")
    if isinstance(path, str) and path in ev.environments:
        return ev.environments[path]
    return ev.environments.get("") if not path else None


def environment_kind(env: Mapping[str, Any]) -> str:
    """``conda``, ``venv (made by uv 0.9.2)``, ``venv`` or ``system``."""
    if env.get("conda"):
        return "conda"
    venv = env.get("venv")
    if isinstance(venv, Mapping):
        for maker in ("uv", "virtualenv"):
            if venv.get(maker):
                return f"venv (made by {maker} {venv[maker]})"
        return "venv"
    return "system"


def _check_environment(claims: Mapping[str, Any], ev: Evidence, add: Add) -> None:
    """``env_tool`` and ``env_name`` against the prefix of the interpreter the claims name."""
    tool, name = claims.get("env_tool"), claims.get("env_name")
    if "env_tool" not in claims and "env_name" not in claims:
        return
    env = _environment_of(claims, ev)
    kind = environment_kind(env) if env is not None else None
    prefix = str(env.get("prefix") or "") if env is not None else ""
    if tool is None:
        add("env_tool", None, kind, "unknown", "")
    elif not isinstance(tool, str):
        add("env_tool", tool, kind, "unknown", "not a string; not counted")
    elif env is None or kind is None:
        add("env_tool", tool, None, "unverifiable",
            "the interpreter's environment was not probed")
    else:
        add("env_tool", tool, kind, *_tool_verdict(tool.strip().lower(), kind, prefix))
    if name is None:
        add("env_name", None, prefix or None, "unknown", "")
    elif not isinstance(name, str) or not name.strip():
        add("env_name", name, prefix or None, "unknown", "not a name; not counted")
    elif env is None:
        add("env_name", name, None, "unverifiable",
            "the interpreter's environment was not probed")
    elif kind == "system":
        add("env_name", name, prefix, "unverifiable",
            "the interpreter is in no conda environment or venv: nothing has that name")
    elif names_environment(name.strip(), prefix, conda=kind == "conda"):
        add("env_name", name, prefix, "true", "")
    else:
        add("env_name", name, prefix, "hallucination",
            f"the interpreter's environment is {prefix} ({kind})")


def _tool_verdict(tool: str, kind: str, prefix: str) -> tuple[Verdict, str]:
    if tool in ("conda", "mamba", "micromamba"):
        return (("true", "") if kind == "conda" else
                ("hallucination", f"{prefix} has no conda-meta/: not a conda environment"))
    if tool in VENV_TOOLS:
        if kind.startswith("venv"):
            return "true", ""
        return "hallucination", (f"{prefix} has no pyvenv.cfg: not a virtual environment"
                                 + (" (a conda environment)" if kind == "conda" else ""))
    if tool in NO_ENV_TOOLS:
        if kind == "system":
            return "true", ""
        what = "conda" if kind == "conda" else "virtual"
        return "understated", f"the interpreter is in a {what} environment, {prefix}"
    return "unverifiable", "not a tool C5 knows"


def names_environment(name: str, prefix: str, *, conda: bool) -> bool:
    """Whether ``name`` names the environment at ``prefix``: its last folder (``.venv``,
    ``myenv`` of ``/opt/conda/envs/myenv``), the prefix itself, ``base`` for a conda
    root (a prefix not inside an ``envs`` folder), or the name pdm gave a venv of its own
    folder (``pdm venv create -n trial`` makes ``…/pdm/venvs/<project>-<hash>-trial``)."""
    prefix = prefix.rstrip("/") or "/"
    parent, _, folder = prefix.rpartition("/")
    if name.rstrip("/") == prefix or name == folder:
        return True
    if parent.endswith("/pdm/venvs") and name and folder.endswith(f"-{name}"):
        return _PDM_PROJECT.fullmatch(folder[:-len(name) - 1]) is not None
    return conda and name == "base" and prefix.rsplit("/", 2)[-2:-1] != ["envs"]


#: What comes before the name of a venv in pdm's own folder: ``<project>-<hash>``, the hash
#: 8 characters of URL-safe base64.
_PDM_PROJECT = re.compile(r".+-[A-Za-z0-9_-]{8}")
