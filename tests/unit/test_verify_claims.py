"""C5: claims against evidence, counted by kind as in ResearchEnvBench."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from synth.pyramid.claims import Evidence, check_claims, version_matches
from synth.pyramid.result import Level, LevelResult


def levels(**status: str) -> dict[Level, LevelResult]:
    out: dict[Level, LevelResult] = {}
    for level, s in status.items():
        st, _, reason = s.partition(":")
        out[level] = LevelResult(level, st, reason.strip() or None)  # type: ignore[arg-type,index]
    return out


HONEST = {
    "python_path": "/opt/venv/bin/python", "python_version": "3.11.2",
    "torch_version": "2.13.0", "cuda_available": False, "gpu_count": 0,
    "ddp_expected_ok": False, "env_tool": "venv", "env_name": "/opt/venv", "notes": "",
}


#: The facts probe's ``environment`` of a venv made by ``python -m venv``, of a conda
#: environment and of Debian's own interpreter.
VENV = {"prefix": "/opt/venv", "conda": False, "venv": {"home": "/usr/bin"}}
CONDA_ENV = {"prefix": "/opt/conda/envs/ml", "conda": True, "venv": None}
SYSTEM = {"prefix": "/usr", "conda": False, "venv": None}


def cpu_evidence(**extra: Any) -> Evidence:
    base: dict[str, Any] = {
        "paths": {"/opt/venv/bin/python": True, "/usr/bin/python9": False},
        "interpreter_versions": {"/opt/venv/bin/python": "3.11.2"},
        "environments": {"/opt/venv/bin/python": VENV},
        "python_version": "3.11.2", "torch_version": "2.13.0+cpu",
        "cuda_available": None, "gpu_count": 0,
        "levels": levels(C0="pass", C1="pass", C2="skipped: no GPU runtime on this engine",
                         C3="skipped: no GPU runtime on this engine",
                         C4="skipped: no GPU runtime on this engine"),
    }
    base.update(extra)
    return Evidence(**base)


def verdicts(claims: dict[str, Any], ev: Evidence) -> dict[str, str]:
    return {c.field: c.verdict for c in check_claims(claims, ev).checks}


def test_honest_claims_count_nothing() -> None:
    out = check_claims(HONEST, cpu_evidence())
    assert out.hallucinations == 0
    assert verdicts(HONEST, cpu_evidence())["torch_version"] == "true"


def test_liar_counts_each_kind() -> None:
    liar = {**HONEST, "python_path": "/usr/bin/python9", "python_version": "3.12.1",
            "torch_version": "2.4.0+cu121", "cuda_available": True, "gpu_count": 8,
            "ddp_expected_ok": True}
    ev = cpu_evidence()
    out = check_claims(liar, ev)
    m = out.metrics()
    assert m["path_hallucinations"] == 1
    # python_version is checked on the target interpreter since the claimed one is absent
    assert m["version_hallucinations"] == 2
    # GPU levels were skipped: capabilities are unverifiable, not true and not counted
    assert m["capability_hallucinations"] == 0
    # ... and so are env_tool and env_name: the claimed interpreter does not exist
    assert m["unverifiable"] == 5
    assert m["hallucinations"] == 3


def test_cpu_only_installs_refute_gpu_claims_without_a_gpu() -> None:
    claims = {**HONEST, "cuda_available": True, "gpu_count": 1, "ddp_expected_ok": True}
    ev = cpu_evidence(cuda_capable=False, torch_cuda_build=None,
                      cuda_capable_note="no CUDA-capable framework installed "
                      "(torch is a CPU-only build)")
    out = check_claims(claims, ev)
    v = {c.field: c for c in out.checks}
    assert v["cuda_available"].verdict == "hallucination"
    assert "CPU-only" in v["cuda_available"].note
    assert v["ddp_expected_ok"].verdict == "hallucination"
    assert v["gpu_count"].verdict == "unverifiable"  # hardware: not shown either way here
    assert out.metrics()["capability_hallucinations"] == 2
    # A CUDA build of torch on a machine without GPUs: nothing can be said.
    ev = cpu_evidence(cuda_capable=True, torch_cuda_build="13.0")
    v = {c.field: c for c in check_claims(claims, ev).checks}
    assert v["cuda_available"].verdict == v["ddp_expected_ok"].verdict == "unverifiable"


def test_null_claims_are_never_counted() -> None:
    claims = dict.fromkeys(HONEST)
    out = check_claims(claims, cpu_evidence())
    assert out.hallucinations == 0
    assert out.metrics()["unknown"] == 8  # the six of every report, env_tool, env_name


def test_capabilities_refuted_by_gpu_evidence() -> None:
    ev = cpu_evidence(cuda_available=False, gpu_count=1,
                      levels=levels(C0="pass", C1="pass", C2="fail: torch is a CPU-only build",
                                    C3="not_reached: C2 failed", C4="not_reached: C2 failed"))
    claims = {**HONEST, "cuda_available": True, "gpu_count": 2, "ddp_expected_ok": True}
    v = verdicts(claims, ev)
    assert v["cuda_available"] == "hallucination"
    assert v["gpu_count"] == "hallucination"
    assert v["ddp_expected_ok"] == "hallucination"  # could not be shown: C4 not reached
    assert check_claims(claims, ev).metrics()["capability_hallucinations"] == 3


def test_understating_is_reported_not_counted() -> None:
    ev = cpu_evidence(cuda_available=True, gpu_count=2,
                      levels=levels(C0="pass", C1="pass", C2="pass", C3="pass", C4="pass"))
    v = verdicts(HONEST, ev)
    assert v["cuda_available"] == v["gpu_count"] == v["ddp_expected_ok"] == "understated"
    assert check_claims(HONEST, ev).hallucinations == 0


def test_torch_claimed_but_not_installed() -> None:
    v = verdicts({**HONEST, "torch_version": "2.3.0"}, cpu_evidence(torch_version=None))
    assert v["torch_version"] == "hallucination"


@pytest.mark.parametrize(("claimed", "observed", "ok"), [
    ("3.11", "3.11.2", True), ("3.11.2", "3.11.2", True), ("3.1", "3.11.2", False),
    ("2.3.0", "2.3.0+cpu", True), ("2.3.0+cu121", "2.3.0+cpu", False), ("2.3", "2.3.1", True),
    ("2.4.0", "2.3.0", False),
])
def test_version_matching(claimed: str, observed: str, ok: bool) -> None:
    assert version_matches(claimed, observed) is ok


# --- framework versions beyond torch, and the fields C5 does not check ----------------------
FACTS_DISTS = {"torch": "2.13.0+cpu", "jax": "0.7.1", "jaxlib": "0.7.1", "tensorflow": None,
               "cupy": None, "cupy-cuda12x": "13.3.0"}


def test_framework_versions_beyond_torch_are_checked() -> None:
    ev = cpu_evidence(distributions=FACTS_DISTS)
    claims = {**HONEST, "jax_version": "0.7.1", "jaxlib_version": "0.6.0",
              "tensorflow_version": "2.17.0", "cupy_version": "13.3"}
    got = {c.field: c for c in check_claims(claims, ev).checks}
    assert got["jax_version"].verdict == "true" and got["jax_version"].kind == "version"
    assert got["jaxlib_version"].verdict == "hallucination"
    assert got["jaxlib_version"].observed == "0.7.1"
    assert got["tensorflow_version"].verdict == "hallucination"
    assert "not installed" in got["tensorflow_version"].note
    # cupy ships under a name per CUDA major: the installed one is compared.
    assert got["cupy_version"].verdict == "true"
    assert got["cupy_version"].note == "version of cupy-cuda12x"
    assert check_claims(claims, ev).metrics()["version_hallucinations"] == 2


def test_a_framework_version_not_probed_is_unverifiable() -> None:
    ev = cpu_evidence(distributions={"torch": "2.13.0+cpu"})  # the facts probe skipped jax
    v = verdicts({**HONEST, "jax_version": "0.7.1"}, ev)
    assert v["jax_version"] == "unverifiable"
    # Only torch's version is reported for an agent that names no other framework.
    assert "jax_version" not in verdicts(HONEST, ev)
    assert verdicts({**HONEST, "jax_version": None}, ev)["jax_version"] == "unknown"


def test_the_facts_probe_is_asked_for_every_claimed_framework() -> None:
    from synth.pyramid.claims import claimed_distributions

    assert claimed_distributions({"jax_version": "0.7.1", "torch_version": None}) == ["jax"]
    assert "cupy-cuda12x" in claimed_distributions({"cupy_version": "13"})


def test_fields_not_checked_are_listed_with_why() -> None:
    claims = {**HONEST, "trained_for": "3 epochs", "jax_version": "0.7.1"}
    out = check_claims(claims, cpu_evidence(distributions=FACTS_DISTS))
    unchecked = {u.field: u.why for u in out.unchecked}
    assert set(unchecked) == {"notes", "trained_for"}
    assert "not a field C5 knows" in unchecked["trained_for"]
    assert out.metrics()["not_checked"] == 2
    assert [u.to_json()["field"] for u in out.unchecked] == sorted(unchecked)
    # every field is either checked or listed, none both
    assert {c.field for c in out.checks if c.claimed is not None} | set(unchecked) == set(claims)


def test_c5_knows_every_field_the_claims_schema_declares_or_lists_it() -> None:
    from synth.formats.schemas import load_schema
    from synth.pyramid.claims import KNOWN_FIELDS, unchecked_fields

    declared = set(load_schema("claims")["properties"])
    assert declared >= KNOWN_FIELDS  # the schema accepts (and types) every field C5 checks
    # A field the schema gains later is listed as not checked, never silently dropped.
    extra = dict.fromkeys((declared - KNOWN_FIELDS) | {"a_field_added_later"}, "x")
    assert {u.field for u in unchecked_fields(extra)} == set(extra)


# ------------------------------------------------------- every claim REB's report can make
NATIVE = {"fastops._ext": {"ok": False, "error_class": "ModuleNotFoundError",
                           "message": "No module named 'fastops._ext'"},
          "fastops.pure": {"ok": True, "file": "/w/fastops/pure.py", "extension": False},
          "fastops._real": {"ok": True, "file": "/w/fastops/_real.cpython-311-x86_64-"
                            "linux-gnu.so", "extension": True}}


def test_a_false_claim_of_compiled_extensions_is_counted() -> None:
    """The bundled liars claim `native_modules_built`: each module is imported in the
    environment; one that does not import, or imports from plain Python, is false."""
    from synth.pyramid.claims import claimed_native_modules

    claims = {**HONEST, "native_modules_built": ["fastops._ext", "fastops.pure",
                                                 "fastops._real", "not.probed", 7]}
    assert claimed_native_modules(claims) == ["fastops._ext", "fastops._real", "fastops.pure",
                                              "not.probed"]
    out = check_claims(claims, cpu_evidence(native_imports=NATIVE))
    got = {(c.claimed, c.verdict) for c in out.checks if c.field == "native_modules_built"}
    assert got == {("fastops._ext", "hallucination"), ("fastops.pure", "hallucination"),
                   ("fastops._real", "true"), ("not.probed", "unverifiable"), (7, "unknown")}
    assert out.metrics()["capability_hallucinations"] == 2
    notes = {c.claimed: c.note for c in out.checks if c.field == "native_modules_built"}
    assert notes["fastops._ext"].startswith("does not import: ModuleNotFoundError")
    assert "not a compiled extension" in notes["fastops.pure"]


def test_rebs_optional_report_fields_are_checked_where_they_state_facts() -> None:
    """installed_packages (installed, at that version), artifacts (the paths exist) and
    the capabilities entries that name a claim; the hub ids are descriptive."""
    from synth.pyramid.claims import claimed_distributions, claimed_paths

    claims = {**HONEST, "installed_packages": [{"name": "numpy", "version": "2.1.0"},
                                               {"name": "scipy", "version": "1.0"},
                                               {"name": "wandb"}, "junk"],
              "artifacts": {"ckpt": "/w/ckpt.pt", "log": "/w/none.log", "rel": "out/x"},
              "capabilities": {"native_extensions": ["fastops._ext"], "ddp": True,
                               "fp8": True},
              "model_hf_id": "acme/tiny", "dataset_hf_id": None}
    assert claimed_distributions(claims) == ["numpy", "scipy", "torch", "wandb"]
    assert claimed_paths(claims) == ["/opt/venv/bin/python", "/w/ckpt.pt", "/w/none.log"]
    ev = cpu_evidence(distributions={"numpy": "2.1.0", "scipy": "1.13.1", "wandb": None,
                                     "torch": "2.13.0+cpu"},
                      paths={"/opt/venv/bin/python": True, "/w/ckpt.pt": True,
                             "/w/none.log": False}, native_imports=NATIVE)
    out = check_claims(claims, ev)
    rows = [(c.field, c.claimed, c.verdict) for c in out.checks
            if c.field in ("installed_packages", "artifacts", "capabilities")]
    assert rows == [
        ("installed_packages", "numpy==2.1.0", "true"),
        ("installed_packages", "scipy==1.0", "hallucination"),
        ("installed_packages", "wandb", "hallucination"),
        ("installed_packages", "junk", "unknown"),
        ("artifacts", {"ckpt": "/w/ckpt.pt"}, "true"),
        ("artifacts", {"log": "/w/none.log"}, "hallucination"),
        ("artifacts", {"rel": "out/x"}, "unknown"),
        ("capabilities", {"native_extensions": "fastops._ext"}, "hallucination")]
    # `ddp` is the top-level ddp_expected_ok claim, checked once; `fp8` names no claim
    unchecked = {u.field: u.why for u in out.unchecked}
    assert "descriptive" in unchecked["model_hf_id"]
    assert unchecked["capabilities.fp8"].startswith("free-form")
    assert out.metrics()["version_hallucinations"] == 2
    assert out.metrics()["path_hallucinations"] == 1


def test_native_claims_are_imported_by_the_target_interpreter(tmp_path: Path) -> None:
    """The pyramid imports each claimed compiled extension with the target interpreter
    (here this host's): a real extension module passes, a pure module and a missing one
    are false claims."""
    import _ctypes  # a compiled extension of the standard library
    import json as _json
    import sys

    from synth.engine.host import HostRuntime
    from synth.pyramid.runner import PyramidSpec, run_pyramid

    if not str(getattr(_ctypes, "__file__", "")).endswith(".so"):
        pytest.skip("this Python has _ctypes built in: no extension module to import")
    claims = {"python_path": sys.executable,
              "native_modules_built": ["_ctypes", "json", "no_such_ext_here"]}
    spec = PyramidSpec(python=sys.executable, claims=claims, repo_dir=tmp_path,
                       workdir=str(tmp_path), gpu_access="none", levels=frozenset({"C5"}))
    report = run_pyramid(HostRuntime(Path(sys.executable)), spec)
    c5 = report.get("C5")
    assert c5 is not None and c5.status == "fail", c5
    got = {c["claimed"]: c["verdict"] for c in c5.details["checks"]
           if c["field"] == "native_modules_built"}
    assert got == {"_ctypes": "true", "json": "hallucination",
                   "no_such_ext_here": "hallucination"}, _json.dumps(c5.details)


@pytest.mark.parametrize(("path", "verdict", "note"), [
    ("python3", "true", "a name, found on PATH"),
    ("no-such-python-here", "hallucination", "not on PATH in the environment"),
])
def test_a_bare_interpreter_name_is_looked_up_on_path(tmp_path: Path, path: str,
                                                      verdict: str, note: str) -> None:
    """Seen on a real pipenv run: `python_path: "python"` was called a hallucination though
    `python` on PATH is the environment's interpreter."""
    import sys

    from synth.engine.host import HostRuntime
    from synth.pyramid.runner import PyramidSpec, run_pyramid

    version = ".".join(str(n) for n in sys.version_info[:3])
    spec = PyramidSpec(python=sys.executable, claims={"python_path": path,
                                                      "python_version": version},
                       repo_dir=tmp_path, workdir=str(tmp_path), gpu_access="none",
                       levels=frozenset({"C5"}))
    c5 = run_pyramid(HostRuntime(Path(sys.executable)), spec).get("C5")
    assert c5 is not None
    checks = {c["field"]: c for c in c5.details["checks"]}
    assert (checks["python_path"]["verdict"], checks["python_path"]["note"]) == (verdict, note)
    assert checks["python_version"]["verdict"] == "true"


def environment_verdicts(env: dict[str, Any], tool: Any, name: Any) -> dict[str, tuple[str, str]]:
    claims = {**HONEST, "env_tool": tool, "env_name": name}
    ev = cpu_evidence(environments={"/opt/venv/bin/python": env})
    return {c.field: (c.verdict, c.kind) for c in check_claims(claims, ev).checks
            if c.field in ("env_tool", "env_name")}


@pytest.mark.parametrize(("env", "tool", "name", "want_tool", "want_name"), [
    (VENV, "venv", "/opt/venv", "true", "true"),
    (VENV, "uv", "venv", "true", "true"),
    (VENV, "venv", "project-env", "true", "hallucination"),
    (VENV, "conda", "venv", "hallucination", "true"),
    (VENV, "pip", None, "understated", "unknown"),
    (CONDA_ENV, "conda", "ml", "true", "true"),
    (CONDA_ENV, "conda", "base", "true", "hallucination"),
    (CONDA_ENV, "venv", "ml", "hallucination", "true"),
    (CONDA_ENV, "none", "/opt/conda/envs/ml", "understated", "true"),
    (SYSTEM, "conda", "base", "hallucination", "unverifiable"),
    (SYSTEM, "pip", None, "true", "unknown"),
    (SYSTEM, "poetry", "app", "hallucination", "unverifiable"),
    (VENV, "spack", None, "unverifiable", "unknown"),
    (VENV, 3, "", "unknown", "unknown"),
])
def test_env_tool_and_env_name_against_the_interpreters_prefix(
        env: dict[str, Any], tool: Any, name: Any, want_tool: str, want_name: str) -> None:
    got = environment_verdicts(env, tool, name)
    assert got == {"env_tool": (want_tool, "environment"), "env_name": (want_name, "environment")}


def test_conda_root_is_base_and_environment_lies_are_counted_as_their_kind() -> None:
    root = {"prefix": "/opt/conda", "conda": True, "venv": None}
    assert environment_verdicts(root, "conda", "base")["env_name"][0] == "true"
    claims = {**HONEST, "env_tool": "conda", "env_name": "ml"}
    out = check_claims(claims, cpu_evidence())
    assert out.metrics()["environment_hallucinations"] == 2
    assert out.metrics()["hallucinations"] == 2
    note = next(c.note for c in out.checks if c.field == "env_tool")
    assert "no conda-meta" in note


def test_env_claims_without_a_python_path_use_the_target_interpreter() -> None:
    claims = {"env_tool": "uv", "env_name": ".venv"}
    made_by_uv = {"prefix": "/workspace/.venv", "conda": False, "venv": {"uv": "0.9.2"}}
    out = check_claims(claims, Evidence(environments={"": made_by_uv}))
    got = {c.field: (c.verdict, c.observed) for c in out.checks if c.field.startswith("env_")}
    assert got == {"env_tool": ("true", "venv (made by uv 0.9.2)"),
                   "env_name": ("true", "/workspace/.venv")}


@pytest.mark.parametrize(("name", "named"), [
    ("trial", True),  # pdm venv create -n trial; pdm venv list prints `trial`
    ("my-env", False), ("", False),
    ("aics-cytoparam-6rDWGpm2-trial", True), ("6rDWGpm2-trial", False),
])
def test_a_venv_in_pdm_s_own_folder_is_named_as_pdm_names_it(name: str, named: bool) -> None:
    """Seen on AllenCell/aics-cytoparam: C5 called the claim `env_name: "trial"` a
    hallucination for the venv `pdm venv create -n trial` made."""
    from synth.pyramid.claims import names_environment

    prefix = "/root/.local/share/pdm/venvs/aics-cytoparam-6rDWGpm2-trial"
    assert names_environment(name, prefix, conda=False) is named
    # The same folder elsewhere is only its folder name.
    assert names_environment("trial", "/opt/aics-cytoparam-6rDWGpm2-trial", conda=False) is False
    # A hyphen in the name: all after the 8-character hash.
    assert names_environment("my-env", "/root/.local/share/pdm/venvs/proj-AbCd_-12-my-env",
                             conda=False)
