"""The image's final ``ENV``: what the agent persisted, and the primary venv on PATH."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from synth.config import CA_ENV_NAMES
from synth.distill.common import Notes
from synth.distill.load import LoadedRun
from synth.formats.plan import PythonEnvPlan
from synth.formats.state import Interpreter

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def carried_variables(persisted: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """The variables the agent persisted in start-up files that the image's ``ENV`` carries
    (never a secret or the CA path), and a warning for each left out. The live image's
    probes run with the same ones (synth.verify.command), as the agent's shells had them."""
    env: dict[str, str] = {}
    warnings: list[str] = []
    for k, v in sorted(persisted.items()):
        if "***" in v or k in CA_ENV_NAMES:
            warnings.append(f"persisted variable {k} holds a secret or the CA path; "
                            "not carried into the image")
            continue
        env[k] = v
    return env, warnings


def conda_activation(interpreters: Iterable[Interpreter], prefix: str
                     ) -> tuple[tuple[str, str], ...]:
    """What the conda prefix's ``etc/conda/activate.d`` scripts set (never a secret or the
    CA path): ``conda activate`` would, so the image's ``ENV`` does, and verify's probes of
    the live image run with them too (synth.verify.command)."""
    conda = next((i.conda for i in interpreters if i.conda and i.conda.prefix == prefix),
                 None)
    if conda is None:
        return ()
    return tuple((k, v) for k, v in conda.activation if k not in CA_ENV_NAMES and "***" not in v)


def final_env(run: LoadedRun, env_plans: Sequence[PythonEnvPlan], notes: Notes
              ) -> tuple[tuple[str, str], ...]:
    """Persisted variables (never a secret or the CA path), then ``VIRTUAL_ENV`` (a conda
    prefix: ``CONDA_PREFIX`` and what its activation scripts set) and ``PATH`` for a
    primary environment, each unless the agent persisted its own."""
    env, warnings = carried_variables(run.persisted_env)
    notes.warnings += warnings
    primary = env_plans[0] if env_plans else None
    if primary and primary.kind != "system":
        # What activation sets: conda's CONDA_PREFIX, a venv's VIRTUAL_ENV.
        env.setdefault("CONDA_PREFIX" if primary.kind == "conda" else "VIRTUAL_ENV",
                       primary.prefix)
        for name, value in conda_activation(run.interpreters, primary.prefix):
            env.setdefault(name, value)
        if "PATH" not in env:
            env["PATH"] = f"{primary.prefix}/bin:{DEFAULT_PATH}"
    return tuple(sorted(env.items()))
