"""The archives of the interpreters uv downloaded in the run (or substituted for pyenv's
builds), and the file that pins them.

Distill names each build (``cpython-3.11.2-linux-x86_64-gnu``) and where the run's uv was
told to look (synth.distill.managed_python). Here the export asks uv (the one that locks,
:func:`uv.find_uv_bin`) which archive that build is, with the same downloads list and
mirror, downloads it once to learn its sha256 (kept in the bundle cache, so ``--bundle``
does not download it again), checks that it is an interpreter's archive and, where the live
image is at hand, that its interpreter is byte for byte the one the run installed (a uv of
another version may name another release for the same build). The list, the mirror and so
the URL come from what the run's commands named: only http(s) is asked, a path is the
container's, and nothing but an interpreter's archive reaches the artifact.

- ``managed-python.lock``: one line per interpreter: ``sha256 URL PREFIX [LINK…]``.
- ``install-managed-python.py`` (``templates/``): fetches each archive (or takes it from
  the bundle), checks its sha256 and unpacks it at PREFIX, then makes the links.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

from msgspec.structs import replace
from uv import find_uv_bin

from synth.config import Settings
from synth.distill.managed_python import made_from
from synth.errors import ExportError
from synth.export.build_lock import uv_version
from synth.export.bundle import archive_name, fetch_hashed
from synth.export.live_facts import LiveImage
from synth.export.lock import clean_env
from synth.formats.plan import MANAGED_PYTHON_LOCK, BuildPlan, ManagedPython

INSTALL_MANAGED_PYTHON = "install-managed-python.py"
#: python-build-standalone's archives are tens of MB (a full debug build a few hundred).
MAX_ARCHIVE_BYTES = 1 << 30


def resolve_pythons(plan: BuildPlan, settings: Settings, live: LiveImage | None, *,
                    allow_missing: bool = False) -> BuildPlan:
    """``plan`` with the URL and sha256 of each downloaded interpreter's archive. One that
    cannot be resolved stops the export, unless ``allow_missing``: its venvs are then made
    from the base's ``python3``, and ``plan.missing`` says so."""
    resolved = []
    for p in plan.pythons:
        try:
            resolved.append(_resolve(p, settings, live))
        except ExportError as exc:
            if not allow_missing:
                raise ExportError(exc.message, hint=(exc.hint or "") + " --allow-missing "
                                  "exports it anyway, the venvs made from the base's "
                                  "python3, and says so at the top of the report.",
                                  path=exc.path) from exc
            plan = _without(plan, p, exc.message)
    return replace(plan, pythons=tuple(resolved))


_WHAT = {"uv": "uv-managed Python", "pyenv": "substitute for pyenv's Python"}


def _without(plan: BuildPlan, p: ManagedPython, why: str) -> BuildPlan:
    """``plan`` making the venvs of ``p`` from the base's ``python3`` instead."""
    envs = tuple(replace(e, create=("python3", *e.create[1:])) if made_from(e, p) else e
                 for e in plan.envs)
    return replace(plan, envs=envs, missing=(
        *plan.missing, f"the {_WHAT[p.tool]} {p.key} at {p.prefix} (its venvs are made "
        f"from the base's python3 instead): {why}"))


def _resolve(p: ManagedPython, settings: Settings, live: LiveImage | None) -> ManagedPython:
    url = download_url(p, settings)
    if not _is_http(url):
        raise ExportError(f"uv names {url} as the archive of {p.key}: only an http(s) URL is "
                          "fetched (a file's path is the container's, not this machine's).",
                          hint="Serve the archive over http(s).")
    archive_name(url)  # vendor/python/<name> with --bundle: a plain name, checked first
    path, sha256 = fetch_hashed(url, settings, MAX_ARCHIVE_BYTES)
    _check_archive(p, url, path, live if live is not None and live.ref is not None else None)
    return replace(p, url=url, sha256=sha256)


def _is_http(url: str) -> bool:
    return url.startswith(("http://", "https://"))


#: The exporting user's own uv settings for where interpreters come from, used where the
#: run named none (a mirror on a machine that does not reach python-build-standalone's).
USER_SETTINGS = ("UV_PYTHON_DOWNLOADS_JSON_URL", "UV_PYTHON_INSTALL_MIRROR")


def download_url(p: ManagedPython, settings: Settings) -> str:
    """The archive uv downloads for ``p.key``, asked with the run's downloads list and
    mirror (``uv python list --only-downloads``), else with the exporting user's."""
    for what, value in (("downloads list", p.downloads_json_url), ("mirror", p.mirror)):
        if value and not _is_http(value):  # what the agent named, read on this machine
            raise ExportError(f"The run's uv was given the {what} {value}: a path in the "
                              "container, which this machine does not read; only an http(s) "
                              f"URL is asked for the archive of {p.key}.",
                              hint="Serve it over http(s) in the run.")
    argv = [find_uv_bin(), "python", "list", "--only-downloads", "--all-versions",
            "--output-format", "json", "--no-config"]
    if p.downloads_json_url:
        argv += ["--python-downloads-json-url", p.downloads_json_url]
    env = clean_env(settings.ca_bundle,
                    keep=() if p.downloads_json_url or p.mirror else USER_SETTINGS)
    if p.mirror:
        env["UV_PYTHON_INSTALL_MIRROR"] = p.mirror
    hint = (f"synth asks its own uv for the archive of {p.key}"
            + (f" from the downloads list {p.downloads_json_url}" if p.downloads_json_url
               else "") + (f" on the mirror {p.mirror}" if p.mirror else "")
            + ": that must be reachable from this machine"
            + ("" if p.downloads_json_url or p.mirror else " (UV_PYTHON_INSTALL_MIRROR or "
               "UV_PYTHON_DOWNLOADS_JSON_URL in this environment name another source)")
            + ".")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"uv could not list Python downloads: {exc}", hint=hint) from exc
    try:
        entries = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        entries = None
    if not isinstance(entries, list):
        raise ExportError(f"uv could not list Python downloads for {p.key} "
                          f"(exit {proc.returncode}): {proc.stderr.strip()[-1000:]}", hint=hint)
    url = next((e.get("url") for e in entries
                if isinstance(e, dict) and e.get("key") == p.key), None)
    if not isinstance(url, str) or not url:
        raise ExportError(f"uv {uv_version()} names no download for the run's interpreter "
                          f"{p.key} ({p.prefix})"
                          + (": the run's uv had it from another list." if p.tool == "uv"
                             else ": python-build-standalone has no build of that version."),
                          hint=hint)
    return url


def _check_archive(p: ManagedPython, url: str, archive: Path, live: LiveImage | None) -> None:
    """The archive is an interpreter's (a tar with ``python/bin/python3.X``), and with the
    live image at hand, that executable is the live one, byte for byte. Anything else is
    refused: the URL came from what the run named, and only an interpreter's archive may
    reach the artifact (``--bundle`` copies it in)."""
    name = f"bin/python{'.'.join(p.version.split('.')[:2])}"
    try:
        with tarfile.open(archive, "r:*") as tar:
            member = tar.extractfile(f"python/{name}")
            packed = member.read() if member is not None else None
    except (tarfile.TarError, KeyError, OSError, EOFError):
        packed = None
    if packed is None:
        raise ExportError(f"{url} (named for {p.key}) is not an interpreter's archive this "
                          f"export can read: no python/{name} in a tar.",
                          hint="uv's python-build-standalone builds are .tar.gz archives "
                          "with the interpreter under python/.")
    if p.tool != "uv":  # a substitution: another build of the same version, by design
        return
    running = live.container().read_file(f"{p.prefix}/{name}") if live is not None else None
    if running is not None and running != packed:
        raise ExportError(
            f"The archive uv names for {p.key} ({url}) holds another {name} than the one the "
            f"run installed at {p.prefix}: a uv of another version names another release.",
            hint="Export with the uv version the run used, or point the run's downloads "
            "list at the release it installed.", path=p.prefix)


def render_managed_python_lock(plan: BuildPlan) -> str:
    """``managed-python.lock``: ``sha256 URL PREFIX [LINK…]`` per interpreter, a LINK
    either a path made a link to PREFIX or ``PATH=TARGET``, a link to a file in it."""
    lines = [
        f"# {MANAGED_PYTHON_LOCK} (task {plan.task}): the python-build-standalone builds "
        "uv downloaded in the run, or substituted for pyenv's builds,",
        f"# each unpacked at PREFIX from its archive, checked against its sha256, by "
        f"{INSTALL_MANAGED_PYTHON}; each LINK is made a link to PREFIX, each PATH=TARGET a "
        "link to TARGET, a file in it.",
        f"# Regenerate: {plan.regenerate_command}",
        "# sha256 URL PREFIX [LINK | PATH=TARGET ...]",
    ]
    for p in plan.pythons:
        if not p.url or not p.sha256:
            raise ExportError(f"The archive of the interpreter {p.key} was not resolved.")
        words = (p.sha256, p.url, p.prefix, *p.links, *(f"{a}={b}" for a, b in p.executables))
        if any(not w or any(ch.isspace() for ch in w) for w in words):
            raise ExportError(f"The interpreter {p.key}'s URL or paths hold a blank, which "
                              f"{MANAGED_PYTHON_LOCK} cannot write: {words!r}.")
        lines.append(" ".join(words))
    return "\n".join(lines) + "\n"


def managed_python_files(plan: BuildPlan, script: str) -> dict[str, str]:
    """The lock and its installer (``script``: its text), when the plan has interpreters."""
    if not plan.pythons:
        return {}
    return {MANAGED_PYTHON_LOCK: render_managed_python_lock(plan),
            INSTALL_MANAGED_PYTHON: script}
