"""The final state of a session container: diff, Debian packages, Python envs, env vars.

Pure functions (parsing, classification, choosing the primary interpreter) are separate
from the few that exec in the container, so the former are unit-tested without Docker.
Every command here runs without the audit hook (no ``BASH_ENV``) and writes nothing into
the container (Python probes run with ``-c`` and ``PYTHONDONTWRITEBYTECODE``).
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from synth.engine.base import EngineContainer as Container
from synth.errors import RunError
from synth.formats.state import (
    APT_STATE_FORMAT,
    DIFF_STATE_FORMAT,
    ENV_STATE_FORMAT,
    PROVENANCE_STATE_FORMAT,
    PYTHON_STATE_FORMAT,
)
from synth.record.agents import WORKDIR
from synth.util.noise import ENV_FILES, noise_reason

# ------------------------------------------------------------------ docker diff

def classify_diff(changes: Iterable[tuple[str, str]]) -> dict[str, Any]:
    real: list[dict[str, str]] = []
    noise: list[dict[str, str]] = []
    for kind, path in sorted(changes, key=lambda c: (c[1], c[0])):
        reason = noise_reason(path)
        if reason is None:
            real.append({"kind": kind, "path": path})
        else:
            noise.append({"kind": kind, "path": path, "reason": reason})
    return {"format": DIFF_STATE_FORMAT, "changes": real, "noise": noise}


# ------------------------------------------------------------------------ dpkg

DPKG_QUERY = ["dpkg-query", "-W", "-f", "${db:Status-Status}\t${Package}\t${Version}\n"]
APT_MANUAL = ["apt-mark", "showmanual"]


def parse_dpkg(text: str) -> dict[str, str]:
    pkgs: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] == "installed":
            pkgs[parts[1]] = parts[2]
    return dict(sorted(pkgs.items()))


def apt_state(
    base: Mapping[str, str], final: Mapping[str, str],
    base_manual: Iterable[str], final_manual: Iterable[str],
    debs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    added = {k: v for k, v in final.items() if k not in base}
    removed = {k: v for k, v in base.items() if k not in final}
    changed = {k: [base[k], v] for k, v in final.items() if k in base and base[k] != v}
    manual = sorted(set(final_manual) - set(base_manual))
    return {
        "format": APT_STATE_FORMAT,
        "base": dict(sorted(base.items())),
        "final": dict(sorted(final.items())),
        "added": dict(sorted(added.items())),
        "changed": dict(sorted(changed.items())),
        "removed": dict(sorted(removed.items())),
        "manual": manual,
        **(dict(debs) if debs is not None else {}),
    }


def apt_pins(base: Mapping[str, str], final: Mapping[str, str]) -> dict[str, str]:
    """The packages an artifact pins: added or changed against the base, final versions."""
    return {k: v for k, v in final.items() if base.get(k) != v}


@dataclass(frozen=True)
class DpkgSnapshot:
    packages: dict[str, str]
    manual: list[str]


def dpkg_snapshot(container: Container) -> DpkgSnapshot:
    res = container.exec(DPKG_QUERY, timeout=120)
    if not res.ok:
        raise RunError(f"dpkg-query failed in the session container: {res.output.strip()[-300:]}")
    manual = container.exec(APT_MANUAL, timeout=120)
    return DpkgSnapshot(
        parse_dpkg(res.stdout),
        sorted(manual.stdout.split()) if manual.ok else [],
    )


# ------------------------------------------------------- .deb content hashes

#: ``'URI' local-name size SHA256:hex``, one line per .deb (``apt-get download --print-uris``).
_PRINT_URI_RE = re.compile(r"^'([^']+)' (\S+) (\d+) SHA256:([0-9a-f]{64})$")
DPKG_ARCH = ["dpkg-query", "-W", "-f", "${Package}\t${Architecture}\n"]


def parse_print_uris(text: str) -> dict[str, dict[str, Any]]:
    """``name -> {sha256, size, mirror, filename}`` from ``apt-get download --print-uris``.

    The URI is apt's own (the mirror root joined with the index's ``Filename:``); it is
    split at ``/pool/`` into the mirror and the unquoted pool path."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        m = _PRINT_URI_RE.match(line.strip())
        if not m:
            continue
        uri, local, size, sha = m.groups()
        root, sep, rest = uri.partition("/pool/")
        if not sep:
            continue
        out[local.split("_", 1)[0]] = {
            "sha256": sha, "size": int(size), "mirror": root,
            "filename": "pool/" + urllib.parse.unquote(rest),
        }
    return out


def deb_records(container: Container, pins: Mapping[str, str]) -> dict[str, Any]:
    """What each pinned .deb must hash to, from apt's own indexes in the container.

    ``{"debs": {name: {version, arch, sha256, size, mirror, filename}}, "debs_missing":
    [names apt's lists do not know at that version]}``. Read with ``apt-get download
    --print-uris``, which downloads nothing; when the agent removed the lists (or the
    version left them) a package is named in ``debs_missing`` with its architecture only."""
    arch_res = container.exec(DPKG_ARCH, timeout=120)
    arches: dict[str, str] = {}
    for line in arch_res.stdout.splitlines():
        name, _, arch = line.partition("\t")
        arches.setdefault(name, arch.strip())
    specs = [f"{n}={v}" for n, v in sorted(pins.items())]
    found: dict[str, dict[str, Any]] = {}
    lists = container.exec(["sh", "-c", "ls /var/lib/apt/lists/ | grep -c _Packages"],
                           timeout=60)
    if specs and lists.stdout.strip() not in ("", "0"):
        res = container.exec(["apt-get", "download", "--print-uris", *specs], timeout=300)
        found = parse_print_uris(res.stdout)
        if not res.ok:  # one unknown version fails them all: ask one by one
            for spec in specs:
                one = container.exec(["apt-get", "download", "--print-uris", spec], timeout=60)
                found.update(parse_print_uris(one.stdout) if one.ok else {})
    debs: dict[str, Any] = {}
    missing: list[str] = []
    for name, version in sorted(pins.items()):
        rec = found.get(name)
        if rec is None:
            missing.append(name)
            continue
        debs[name] = {"version": version, "arch": arches.get(name, ""), **rec}
    return {"debs": debs, "debs_missing": missing}


# ---------------------------------------------------------------- environment

_ENV_SCRIPT = (
    "for f in " + " ".join(ENV_FILES) + '; do [ -f "$f" ] || continue; '
    'printf "\\0\\0FILE %s\\0\\0" "$f"; cat "$f"; done'
)
_ASSIGN_RE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def read_env_files(container: Container) -> dict[str, str]:
    res = container.exec(["bash", "--norc", "--noprofile", "-c", _ENV_SCRIPT], timeout=60)
    files: dict[str, str] = {}
    for chunk in res.stdout.split("\0\0FILE ")[1:]:
        name, _, body = chunk.partition("\0\0")
        files[name] = body
    return files


def parse_env_assignments(path: str, text: str) -> dict[str, str]:
    """``NAME=value`` lines: ``export`` ones anywhere, bare ones in /etc/environment."""
    found: dict[str, str] = {}
    bare_ok = path == "/etc/environment"
    for line in text.splitlines():
        m = _ASSIGN_RE.match(line)
        if not m or (not bare_ok and not line.lstrip().startswith("export")):
            continue
        name, value = m.group(1), m.group(2).strip()
        try:
            words = shlex.split(value, comments=True)
            value = words[0] if len(words) == 1 else value
        except ValueError:
            pass
        found[name] = value
    return found


def env_state(base: Mapping[str, str], final: Mapping[str, str]) -> dict[str, Any]:
    def assignments(files: Mapping[str, str]) -> dict[str, tuple[str, str]]:
        out: dict[str, tuple[str, str]] = {}
        for path in files:
            for name, value in parse_env_assignments(path, files[path]).items():
                out[name] = (value, path)
        return out

    before, after = assignments(base), assignments(final)
    persisted = {n: v for n, (v, _) in after.items() if before.get(n, (None,))[0] != v}
    return {
        "format": ENV_STATE_FORMAT,
        "persisted": dict(sorted(persisted.items())),
        "sources": {n: after[n][1] for n in sorted(persisted)},
    }


# ---------------------------------------------------------------------- python

#: Prints candidate interpreters, one per line; duplicates are resolved by the probe.
_DISCOVER_SCRIPT = r"""
for p in /usr/bin/python3 /usr/local/bin/python3 /usr/bin/python3.[0-9]* \
         /usr/local/bin/python3.[0-9]*; do
  case "$p" in *-config|*m) continue ;; esac
  [ -x "$p" ] && [ -f "$p" ] && echo "venvless $p"
done
find /opt /root /workspace /usr/local /home -maxdepth 6 -name pyvenv.cfg \
     -not -path '*/site-packages/*' 2>/dev/null | while read -r f; do
  d=${f%/pyvenv.cfg}
  for b in "$d/bin/python" "$d/bin/python3"; do [ -x "$b" ] && { echo "venv $b"; break; }; done
done
for d in /root/.local/share/uv/python/*/ /opt/uv/python/*/ /usr/local/share/uv/python/*/; do
  [ -x "${d}bin/python3" ] && echo "uv ${d}bin/python3"
done
find / -maxdepth 5 -type d -name conda-meta -not -path '/proc/*' -not -path '/sys/*' \
     2>/dev/null | while read -r m; do
  [ -x "${m%/conda-meta}/bin/python" ] && echo "conda ${m%/conda-meta}/bin/python"
done
for d in /root/.pyenv/versions/*/ /opt/pyenv/versions/*/; do
  [ -x "${d}bin/python" ] && echo "pyenv ${d}bin/python"
done
true
"""


def probe_source() -> str:
    return (resources.files("synth.pyramid.probes") / "python_env.py").read_text("utf-8")


def interpreter_kind(hint: str, info: Mapping[str, Any], path: str) -> str:
    prefix = str(info.get("prefix", ""))
    if hint == "conda" or "/conda-meta" in path:
        return "conda"
    if hint == "uv" or "/uv/python/" in path or "/uv/python/" in prefix + "/":
        return "venv" if info.get("prefix") != info.get("base_prefix") else "uv"
    if hint == "pyenv" or "/.pyenv/" in path:
        return "venv" if info.get("prefix") != info.get("base_prefix") else "pyenv"
    if info.get("prefix") != info.get("base_prefix") or hint == "venv":
        return "venv"
    return "system"


def created_by_agent(path: str, prefix: str, added: set[str]) -> bool:
    return path in added or prefix in added


def conda_prefix(found: Any, added: set[str]) -> dict[str, Any] | None:
    """The probe's conda packages of a prefix, each marked ``in_base`` when its conda-meta
    record was not added in the session (``docker diff``): the base image had it."""
    if not isinstance(found, dict) or not isinstance(found.get("packages"), list):
        return None
    prefix = str(found.get("prefix", ""))
    packages = []
    for rec in found["packages"]:
        if isinstance(rec, dict):
            meta = f"{prefix}/conda-meta/{rec.get('meta_file')}"
            packages.append({**{k: v for k, v in rec.items() if k != "meta_file"},
                             "in_base": meta not in added})
    activation = [[str(k), str(v)] for k, v in (found.get("activation") or [])]
    return {"prefix": prefix, "packages": packages, "requested": found.get("requested") or [],
            "activation": activation}


def python_interpreters(
    container: Container, added_paths: set[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every interpreter found, described by the stdlib probe; and errors met."""
    res = container.exec(["bash", "--norc", "--noprofile", "-c", _DISCOVER_SCRIPT], timeout=120)
    candidates: list[tuple[str, str]] = []
    for line in res.stdout.splitlines():
        hint, _, path = line.partition(" ")
        if path and (hint, path) not in candidates:
            candidates.append((hint, path))
    source = probe_source()
    seen: set[tuple[str, str]] = set()
    out: list[dict[str, Any]] = []
    errors: list[str] = []
    for hint, path in candidates:
        probe = container.exec(
            [path, "-c", source], env={"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": ""},
            workdir="/", timeout=120,
        )
        try:
            info = json.loads(probe.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            errors.append(f"{path}: probe failed (exit {probe.exit_code}): "
                          f"{probe.output.strip()[-300:]}")
            continue
        key = (str(info.get("realpath")), str(info.get("prefix")))
        if key in seen:
            continue
        seen.add(key)
        prefix = str(info.get("prefix"))
        out.append({
            "path": path,
            "kind": interpreter_kind(hint, info, path),
            "version": info.get("version"),
            "implementation": info.get("implementation"),
            "prefix": prefix,
            "base_prefix": info.get("base_prefix"),
            "realpath": info.get("realpath"),
            "sys_path": info.get("path", []),
            "created_by_agent": created_by_agent(path, prefix, added_paths),
            "distributions": info.get("distributions", []),
            "error": info.get("error"),
            **({"conda": conda} if (conda := conda_prefix(info.get("conda"), added_paths))
               else {}),
        })
    out.sort(key=lambda i: i["path"])
    return out, errors


#: Where tools keep the environments they run from (``uvx``, ``uv tool install``, pipx).
_TOOL_ENV_PARTS = ("/.cache/", "/.local/share/uv/tools/", "/.local/pipx/", "/.local/share/pipx/")


def tool_environment(prefix: str) -> bool:
    """Whether ``prefix`` is a tool's environment: in a cache folder or a tool manager's."""
    return any(part in prefix.rstrip("/") + "/" for part in _TOOL_ENV_PARTS)


def holds_project(interp: Mapping[str, Any]) -> bool:
    """Whether the repository (at the session's working folder) is installed into
    ``interp``: a distribution whose ``direct_url.json`` names a folder there."""
    for d in interp.get("distributions") or []:
        url = (d.get("direct_url") or {}).get("url") if isinstance(d, Mapping) else None
        if isinstance(url, str) and (url == f"file://{WORKDIR}"
                                     or url.startswith(f"file://{WORKDIR}/")):
            return True
    return False


def choose_primary(
    interpreters: Sequence[Mapping[str, Any]], claimed_python: str | None
) -> str | None:
    """The interpreter the research code is meant to run under (see docs/formats.md)."""
    if claimed_python:
        claimed = claimed_python.rstrip("/")
        for i in interpreters:
            names = {i.get("path"), i.get("realpath"), i.get("prefix")}
            if claimed in names or claimed.removesuffix("/bin/python") in names \
                    or claimed.removesuffix("/bin/python3") in names:
                return str(i["path"])
    created = [i for i in interpreters if i.get("created_by_agent") and i.get("kind") != "system"]
    # A tool's own environment (uvx's cache, uv tool, pipx, poetry's own venv) is not the
    # research code's; one the repository itself is installed into is (poetry's venvs are
    # in its cache folder).
    created = [i for i in created if holds_project(i)
               or not tool_environment(str(i.get("prefix") or i["path"]))] or created
    if created:
        best = max(created, key=lambda i: (holds_project(i), len(i.get("distributions") or []),
                                           str(i["path"])))
        return str(best["path"])
    for want in ("/usr/bin/python3", "/usr/local/bin/python3"):
        for i in interpreters:
            if i.get("path") == want:
                return want
    systems = [i for i in interpreters if i.get("kind") == "system"]
    if systems:
        return str(systems[0]["path"])
    return str(interpreters[0]["path"]) if interpreters else None


def python_state(
    interpreters: list[dict[str, Any]], claimed_python: str | None, errors: Sequence[str] = ()
) -> dict[str, Any]:
    return {
        "format": PYTHON_STATE_FORMAT,
        "interpreters": interpreters,
        "primary": choose_primary(interpreters, claimed_python),
        "errors": list(errors),
    }


# ------------------------------------------------------------------ provenance

#: setuid/setgid regular files on the root filesystem.
SETUID_FIND = ["find", "/", "-xdev", "-type", "f", "-perm", "/6000"]


def setuid_files(container: Container) -> list[str]:
    res = container.exec(SETUID_FIND, timeout=300)
    return sorted(line for line in res.stdout.splitlines() if line.startswith("/"))


def _times(container: Container, argv: list[str], args: list[str], chunk: int
           ) -> dict[str, float]:
    """``path -> mtime`` from the ``%.3Y %n`` lines ``argv + args`` prints, in chunks."""
    out: dict[str, float] = {}
    for start in range(0, len(args), chunk):
        res = container.exec([*argv, *args[start:start + chunk]], timeout=300)
        for line in res.stdout.splitlines():
            t, _, path = line.partition(" ")
            try:
                out[path] = float(t)
            except ValueError:
                continue
    return out


def _stat_times(container: Container, paths: list[str]) -> dict[str, float]:
    """``path -> mtime`` (the path itself, never a link's target), for paths that exist."""
    return _times(container, ["stat", "-c", "%.3Y %n", "--"], paths, 500)


def _glob_times(container: Container, patterns: list[str]) -> dict[str, float]:
    script = 'for p in "$@"; do for f in $p; do [ -e "$f" ] && stat -c "%.3Y %n" -- "$f"; ' \
             'done; done; true'
    return _times(container, ["bash", "--norc", "--noprofile", "-c", script, "times"],
                  patterns, 200)


def provenance_state(
    container: Container,
    changes: list[tuple[str, str]],
    apt: Mapping[str, Any] | None,
    interpreters: list[dict[str, Any]] | None,
    base_setuid: list[str] | None,
) -> dict[str, Any]:
    """When each change happened (mtimes read in the container) and which setuid/setgid
    files the agent added: the evidence export uses to name changes no audited command
    explains (``state/provenance.json``)."""
    real = sorted(p for k, p in changes if k in ("A", "C") and noise_reason(p) is None)
    files = _stat_times(container, real)
    pkgs = sorted(set((apt or {}).get("added") or {}) | set((apt or {}).get("changed") or {}))
    lists = _glob_times(container, [f"/var/lib/dpkg/info/{p}.list /var/lib/dpkg/info/{p}:*.list"
                                    for p in pkgs])
    apt_times: dict[str, float] = {}
    for path, t in lists.items():
        name = path.rsplit("/", 1)[-1].removesuffix(".list").split(":", 1)[0]
        apt_times[name] = max(t, apt_times.get(name, 0.0))
    dists: dict[str, dict[str, float]] = {}
    for interp in interpreters or []:
        locations = sorted({str(d.get("location")) for d in interp.get("distributions") or []
                            if d.get("location")})
        found = _glob_times(container, [f"{loc}/*.dist-info {loc}/*.egg-info"
                                        for loc in locations])
        times: dict[str, float] = {}
        for path, t in found.items():
            stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            name = stem.split("-", 1)[0].replace("_", "-").replace(".", "-").lower()
            times[name] = max(t, times.get(name, 0.0))
        dists[str(interp.get("path"))] = dict(sorted(times.items()))
    final_setuid = setuid_files(container)
    return {
        "format": PROVENANCE_STATE_FORMAT,
        "file_times": dict(sorted(files.items())),
        "apt_times": dict(sorted(apt_times.items())),
        "dist_times": dict(sorted(dists.items())),
        "setuid": sorted(set(final_setuid) - set(base_setuid or [])),
        "setuid_known": base_setuid is not None,
    }
