"""The image's final ``ENV``: what the agent persisted, and the primary venv on PATH."""

from __future__ import annotations

from collections.abc import Sequence

from synth.config import CA_ENV_NAMES
from synth.distill.common import Notes
from synth.distill.load import LoadedRun
from synth.model import PythonEnvPlan

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def final_env(run: LoadedRun, env_plans: Sequence[PythonEnvPlan], notes: Notes
              ) -> tuple[tuple[str, str], ...]:
    """Persisted variables (never a secret or the CA path), then ``VIRTUAL_ENV`` and
    ``PATH`` for a primary venv unless the agent persisted its own."""
    env: dict[str, str] = {}
    for k, v in sorted(run.persisted_env.items()):
        if "***" in v or k in CA_ENV_NAMES:
            notes.warnings.append(f"persisted variable {k} holds a secret or the CA path; "
                                  "not carried into the image")
            continue
        env[k] = v
    primary = env_plans[0] if env_plans else None
    if primary and primary.kind != "system":
        env.setdefault("VIRTUAL_ENV", primary.prefix)
        if "PATH" not in env:
            env["PATH"] = f"{primary.prefix}/bin:{DEFAULT_PATH}"
    return tuple(sorted(env.items()))
