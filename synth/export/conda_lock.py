"""The files that recreate a conda prefix: its conda lock and the installer that reads it.

- ``conda-<prefix>.lock``: conda's ``@EXPLICIT`` format (what ``conda list --explicit
  --sha256`` writes, and ``conda create --file``, ``mamba`` and ``micromamba`` read), one
  ``url#sha256`` line per package, sorted by name: made from the plan alone, byte-identical
  for the same run.
- ``conda-installer.lock``: py-rattler, hash-pinned like the uv of ``installer.lock``; the
  image installs it into a throwaway folder of the build with ``pip --require-hashes``.
- ``conda-install.py`` (``templates/``): fetches each archive of the lock, checks its
  digest and has py-rattler link them all into the prefix, with no solve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from msgspec.structs import replace

from synth.errors import LockError
from synth.export.build_lock import _compile
from synth.export.lock import Lock, LockedPin, LockTarget, parse_compiled, render_lock
from synth.formats.plan import BuildPlan, CondaEnvPlan, PythonEnvPlan

#: The py-rattler the image recreates conda prefixes with (abi3 wheels for CPython >= 3.10).
RATTLER_VERSION = "0.28.0"
#: The Python its wheel is locked for: the oldest its abi3 wheel runs on.
RATTLER_PYTHON = "3.10"
CONDA_INSTALLER_LOCK = "conda-installer.lock"
CONDA_INSTALL_SCRIPT = "conda-install.py"


def render_conda_lock(conda: CondaEnvPlan, plan: BuildPlan) -> str:
    """``conda.lock_file``'s text: conda's explicit header, then ``url#digest`` lines."""
    lines = [
        "# This file may be used to create an environment using:",
        "# $ conda create --prefix <prefix> --file <this file>",
        f"# platform: {conda.platform}",
        f"# {conda.lock_file} for the conda prefix {conda.prefix} (task {plan.task}): every "
        "package, fetched from its URL",
        "# and checked against its sha256 (md5 where conda-meta had none); no solve.",
        f"# channels: {' '.join(conda.channels)}",
    ]
    if conda.requested:
        lines.append(f"# requested: {' '.join(conda.requested)}")
    lines += [f"# Regenerate: {plan.regenerate_command}", "@EXPLICIT"]
    lines += [f"{p.url}#{p.sha256 or p.md5}"
              for p in sorted(conda.packages, key=lambda p: (p.name, p.version, p.build))]
    return "\n".join(lines) + "\n"


def lock_rattler(env: PythonEnvPlan, target: LockTarget) -> LockedPin:
    """py-rattler's pin with its hashes, from the environment's index."""
    rattler_target = dataclasses.replace(target, python_version=RATTLER_PYTHON)
    plain = replace(env, extra_index_urls=(), find_links=())
    proc = _compile(plain, rattler_target, [f"py-rattler=={RATTLER_VERSION}"])
    got = parse_compiled(proc.stdout).get("py-rattler") if proc.returncode == 0 else None
    if not got or not got[1]:
        raise LockError(f"Could not lock the conda installer py-rattler=={RATTLER_VERSION} "
                        f"from {env.index_url}:\n{proc.stderr.strip()[-2000:]}",
                        hint="Was the index reachable (pass --ca-bundle behind a TLS proxy)?")
    return LockedPin(name="py-rattler", version=got[0], hashes=got[1])


def render_conda_installer_lock(lock: Lock, plan: BuildPlan) -> str:
    """py-rattler's pin with its hashes: what the image recreates conda prefixes with."""
    assert lock.conda_installer is not None
    header = [
        f"{CONDA_INSTALLER_LOCK} (task {plan.task}): the py-rattler that recreates the conda "
        "prefixes from their conda locks;",
        "installed with pip --require-hashes --no-deps into a throwaway folder of the build.",
        f"Regenerate: {plan.regenerate_command}",
    ]
    env = replace(lock.env, extra_index_urls=(), find_links=())
    return render_lock(Lock(env=env, pins=(lock.conda_installer,), locker=lock.locker), header)


def conda_files(plan: BuildPlan, locks: Sequence[Lock], script: str) -> dict[str, str]:
    """Every conda file of the artifact, by name (``script``: conda-install.py's text)."""
    if not plan.conda:
        return {}
    files = {c.lock_file: render_conda_lock(c, plan) for c in plan.conda}
    files[CONDA_INSTALL_SCRIPT] = script
    installer = next((lk for lk in locks if lk.conda_installer), None)
    if installer is None:
        raise LockError("The plan recreates conda prefixes but no lock carries the "
                        "py-rattler that installs them.")
    files[CONDA_INSTALLER_LOCK] = render_conda_installer_lock(installer, plan)
    return files
