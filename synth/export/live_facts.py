"""Facts about the run's final state that only its live image holds (I/O).

``state/*.json`` says which packages and distributions the session ended with; the export
also needs what they *contain*: the final ``/workspace`` (the agent's edits to the
research code), the paths Debian packages own (``/var/lib/dpkg/info/*.list``), every
installed distribution's files checked against its RECORD (the fingerprint probe), the
files two distributions both install, ``pip check``, the sha256 of downloaded files, and
the bytes of the files the artifact carries.

All come from one container of the live image with the network off, opened once per export
(:class:`LiveImage`) on first use and removed when the export ends. Without an engine or a
live image the facts are empty and the export says what it could not check.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from synth.engine.base import ContainerSpec, Engine, EngineContainer
from synth.engine.fingerprint import fingerprint
from synth.errors import ExportError, SynthError
from synth.formats.fingerprint import Fingerprint

WORKDIR = "/workspace"
#: The stdlib-only probe that lists .pth files, startup modules and ld.so.preload.
CODE_LOADING_PROBE = (Path(__file__).resolve().parent.parent / "pyramid" / "probes"
                      / "code_loading.py")
DPKG_LISTS = "cat /var/lib/dpkg/info/*.list 2>/dev/null; true"

#: Run under the environment's interpreter: ``{file: [distribution, …]}`` for every file
#: that two or more installed distributions list (stdlib only, Python >= 3.8).
OVERLAP_PROBE = r"""
import json, os, sys
from importlib import metadata
owners = {}
for dist in metadata.distributions():
    name = (dist.metadata["Name"] or "?")
    for f in dist.files or ():
        p = str(f)
        if p.endswith((".pyc", ".pyo")) or "__pycache__" in p or ".dist-info/" in p \
                or ".egg-info/" in p or p.startswith(".."):
            continue
        path = os.path.normpath(os.path.join(str(dist.locate_file("")), p))
        owners.setdefault(path, set()).add(name)
print(json.dumps({k: sorted(v) for k, v in sorted(owners.items()) if len(v) > 1}))
"""


@dataclass(frozen=True)
class LiveFacts:
    """What the live image says; empty where it could not be asked (``errors`` say why)."""

    #: The engine's tar archive of the final ``/workspace`` (a host temp file), if read.
    workspace_tar: Path | None = None
    #: Every path a Debian package owns (``dpkg -L`` of all packages).
    dpkg_paths: frozenset[str] = frozenset()
    #: The primary interpreter's fingerprint (RECORD checks per distribution).
    fingerprint: Fingerprint | None = None
    #: Files two or more distributions of the primary interpreter install.
    overlaps: dict[str, list[str]] = field(default_factory=dict)
    #: ``pip check``'s complaint lines (empty: no conflicts, or not run).
    pip_check: tuple[str, ...] = ()
    pip_check_ran: bool = False
    #: What makes code run at start, from ``pyramid/probes/code_loading.py`` (None: not
    #: asked or it failed).
    code_loading: dict[str, Any] | None = None
    errors: tuple[str, ...] = ()


class LiveImage:
    """The run's live image during one export: one container, network off, started on first
    use and removed when the ``with`` ends; every caller reads the same container.

    :meth:`container` raises the reason it cannot be had (no engine, the image gone), the
    same error on every call; ``ref`` is None for a run that committed no live image, and
    each caller says in its own words what that costs it."""

    def __init__(self, engine: Engine, ref: str | None) -> None:
        self.engine = engine
        self.ref = ref or None
        self._stack = ExitStack()
        self._container: EngineContainer | None = None
        self._error: SynthError | None = None

    def __enter__(self) -> LiveImage:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stack.close()

    def container(self) -> EngineContainer:
        if self._container is not None:
            return self._container
        if self._error is not None:
            raise self._error
        if self.ref is None:
            raise ExportError("The run has no live image.")
        spec = ContainerSpec(image=self.ref, network=False, labels={"synth.temporary": "1"})
        try:
            self._container = self._stack.enter_context(self.engine.container(spec))
        except SynthError as exc:
            self._error = exc
            raise
        return self._container


#: Synth's own probes leave no ``__pycache__`` behind in what ``--include`` copies later.
_NO_BYTECODE = {"PYTHONDONTWRITEBYTECODE": "1"}


def _lines(live: LiveImage, argv: Sequence[str]) -> list[str]:
    """What ``argv`` prints in the live image, a line each; none where there is no live
    image or it cannot be asked."""
    if live.ref is None:
        return []
    try:
        return live.container().exec(list(argv)).stdout.splitlines()
    except SynthError:
        return []


def download_hashes(live: LiveImage, wanted: Sequence[str]) -> dict[str, str]:
    """sha256 of the files downloads left in the final state, from the live image; empty
    where it cannot be read (the downloads are then reported, not replayed)."""
    out: dict[str, str] = {}
    for line in _lines(live, ["sha256sum", "--", *wanted]) if wanted else ():
        digest, _, path = line.partition("  ")
        if len(digest) == 64 and path in wanted:
            out[path] = digest
    return out


def link_targets(live: LiveImage, paths: Sequence[str]) -> dict[str, str]:
    """The target of each of ``paths`` that is a symbolic link in the live image, as
    written; empty where it cannot be read (the links are then unexplained). ``paths``
    are plain (no blank): ``find`` prints one per line."""
    out: dict[str, str] = {}
    argv = ["find", *paths, "-maxdepth", "0", "-type", "l", "-printf", "%p\t%l\n"]
    for line in _lines(live, argv) if paths else ():
        path, tab, target = line.partition("\t")
        if tab and path in paths:
            out[path] = target
    return out


def _pip_check(c: EngineContainer, python: str) -> tuple[tuple[str, ...], bool]:
    env = {"PIP_DISABLE_PIP_VERSION_CHECK": "1", **_NO_BYTECODE}
    res = c.exec([python, "-m", "pip", "check"], env=env, timeout=300)
    if "No module named pip" in res.output:
        res = c.exec(["python3", "-m", "pip", "--python", python, "check"], env=env,
                     timeout=300)
    if res.ok:
        return (), True
    lines = tuple(ln.strip() for ln in res.stdout.splitlines()
                  if ln.strip() and ("requires" in ln or "has requirement" in ln
                                     or "not supported" in ln))
    return lines, bool(lines)


def _ask(c: EngineContainer, python: str, tmp: Path) -> tuple[LiveFacts, list[str]]:
    errors: list[str] = []
    tar = tmp / "workspace.tar" if c.save_archive(WORKDIR, tmp / "workspace.tar") else None
    dpkg = c.exec(["bash", "-c", DPKG_LISTS], timeout=300)
    paths = frozenset(p for p in dpkg.stdout.splitlines() if p.startswith("/"))
    fp = None
    try:
        fp = fingerprint(c, python, WORKDIR)
    except SynthError as exc:
        errors.append(f"fingerprint of the live image: {exc.message}")
    overlap = c.exec([python, "-c", OVERLAP_PROBE], env=_NO_BYTECODE, timeout=300)
    overlaps: dict[str, list[str]] = {}
    if overlap.ok:
        overlaps = json.loads(overlap.stdout or "{}")
    else:
        errors.append(f"file overlap probe failed: {overlap.output.strip()[-200:]}")
    check, ran = _pip_check(c, python)
    loading = c.exec([python, "-c", CODE_LOADING_PROBE.read_text(encoding="utf-8")],
                     env=_NO_BYTECODE, timeout=300)
    code_loading = None
    if loading.ok:
        code_loading = json.loads(loading.stdout or "{}")
    else:
        errors.append(f"code-loading probe failed: {loading.output.strip()[-200:]}")
    return LiveFacts(workspace_tar=tar, dpkg_paths=paths, fingerprint=fp, overlaps=overlaps,
                     pip_check=check, pip_check_ran=ran, code_loading=code_loading), errors


def gather(live: LiveImage, python: str, tmp: Path) -> LiveFacts:
    """Ask the run's live image; never raises for an engine or image that is not there."""
    if live.ref is None:
        return LiveFacts(errors=("the run has no live image",))
    try:
        facts, errors = _ask(live.container(), python, tmp)
    except (SynthError, OSError, ValueError) as exc:
        msg = exc.message if isinstance(exc, SynthError) else str(exc)
        return LiveFacts(errors=(f"the live image could not be read: {msg}",))
    return replace(facts, errors=tuple(errors)) if errors else facts
