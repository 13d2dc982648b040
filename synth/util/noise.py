"""Which paths of a container's ``docker diff`` are noise (caches, logs, runtime state).

Pure: the session's snapshot and export's distillation both ask it.
"""

from __future__ import annotations

import re

#: Start-up files whose exported variables persist into later shells, in the order shells
#: read them: the session reads them at the run's start and end (state/env.json), and
#: distillation treats a redirect into one of them (or any file of /etc/profile.d/) as
#: persisting a variable.
ENV_FILES: tuple[str, ...] = (
    "/etc/environment",
    "/etc/profile",
    "/etc/profile.d/*.sh",
    "/etc/bash.bashrc",
    "/root/.profile",
    "/root/.bash_profile",
    "/root/.bashrc",
)
ENV_DIR = "/etc/profile.d/"


def is_env_file(path: str) -> bool:
    """Whether writing ``path`` (absolute, normalised) persists variables into later shells."""
    return path in ENV_FILES or path.startswith(ENV_DIR)


#: (path prefix, reason) — a change at or below the prefix is noise. Order: first match.
NOISE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("/synth", "synth's own mounts and claims file"),
    ("/opt/scimlopsbench", "REB's report path, a second name of the claims file"),
    ("/root/.cache", "cache"),
    ("/root/.local/state", "tools' logs and state (XDG state home: pdm's, pipx's logs)"),
    ("/var/cache", "cache"),
    ("/var/lib/apt/lists", "apt lists"),
    ("/var/log", "log"),
    ("/tmp", "temporary files"),
    ("/var/tmp", "temporary files"),
    ("/run", "runtime state"),
    ("/proc", "runtime state"),
    ("/dev", "runtime state"),
    ("/etc/hostname", "container runtime"),
    ("/etc/hosts", "container runtime"),
    ("/etc/resolv.conf", "container runtime"),
    ("/etc/mtab", "container runtime"),
    ("/root/.bash_history", "shell history"),
    ("/root/.python_history", "shell history"),
    ("/root/.wget-hsts", "cache"),
    ("/root/.lesshst", "shell history"),
)
_CACHE_DIR_RE = re.compile(r"(^|/)\.cache(/|$)")
#: Folders of a repository that are never its source: bytecode and tools' caches, which
#: differ between machines. Never copied into an artifact's ``source/``, never in its
#: patch, never compared by the fingerprint (an agent's ``pytest`` writes
#: ``.pytest_cache``).
SOURCE_CACHES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})


def is_source_cache(rel: str) -> bool:
    """Whether a path relative to the repository is bytecode or lies in a tool's cache."""
    return (any(p in SOURCE_CACHES for p in rel.split("/"))
            or rel.endswith((".pyc", ".pyo")))


def noise_reason(path: str) -> str | None:
    """Why a ``docker diff`` path is noise, or None when it is a real change."""
    name = path.rsplit("/", 1)[-1]
    if "/__pycache__" in path + "/" or name.endswith((".pyc", ".pyo")):
        return "__pycache__"
    if _CACHE_DIR_RE.search(path):
        return "cache"
    for prefix, reason in NOISE_PREFIXES:
        if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
            return reason
    return None

__all__ = ["NOISE_PREFIXES", "SOURCE_CACHES", "is_source_cache", "noise_reason"]
