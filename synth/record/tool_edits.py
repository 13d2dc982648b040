"""Source changes a project tool made to its own files (pure): ``uv add tabulate`` edits the
project's ``pyproject.toml`` and ``uv.lock`` as intended, which is not the research code
edited by the agent (a violation).

A change of ``/workspace`` is explained by a project tool only where all of these hold:

* the path is a manifest or lock file the tool owns, in the folder the command ran in
  (``pyproject.toml`` and ``uv.lock`` for ``uv add``/``remove``, ``uv.lock`` for ``uv
  lock`` and for ``uv sync``/``run``, which lock again where the lock is stale; poetry's
  and pdm's likewise; ``Pipfile`` and ``Pipfile.lock`` for ``pipenv install
  PKG``/``uninstall``, ``Pipfile.lock`` for ``pipenv lock`` and a plain ``pipenv
  install``), and it was modified (not deleted); never under ``--frozen``, ``--locked``,
  ``--frozen-lockfile``, ``--deploy`` or ``--ignore-pipfile``;
* the command is an audited simple command (a hook record, or an execve of
  ``--trace-exec``) that exited 0, and the audit was verified and confirmed it;
* the file's final modification time falls within that command (a second's slack either
  side): the tool wrote it last;
* no other audited command names the file except to read it (``cat``, ``grep``, ``diff``…):
  a ``sed -i``, an ``echo >>``, an editor keeps the change a violation.

A hand edit made with no audited command before the tool ran (a script writing the file)
cannot be told from the tool's own edit; one made after it changes the time and stays a
violation.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from synth.util.wrappers import unwrapped

WORKSPACE = "/workspace"
#: Each tool's verbs that write its files, and the files each writes.
_WRITES: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    # uv sync and uv run lock again first where uv.lock is stale (not with --frozen/--locked)
    "uv": {"add": ("pyproject.toml", "uv.lock"), "remove": ("pyproject.toml", "uv.lock"),
           "lock": ("uv.lock",), "sync": ("uv.lock",), "run": ("uv.lock",)},
    "poetry": {"add": ("pyproject.toml", "poetry.lock"),
               "remove": ("pyproject.toml", "poetry.lock"), "lock": ("poetry.lock",),
               "update": ("poetry.lock",)},
    # pdm install locks again where pdm.lock is stale (not with --frozen-lockfile)
    "pdm": {"add": ("pyproject.toml", "pdm.lock"), "remove": ("pyproject.toml", "pdm.lock"),
            "lock": ("pdm.lock",), "install": ("pdm.lock",), "update": ("pdm.lock",)},
    # a plain pipenv install locks again where Pipfile.lock is stale (not with --deploy or
    # --ignore-pipfile); with packages it edits the Pipfile too
    "pipenv": {"install": ("Pipfile", "Pipfile.lock"), "uninstall": ("Pipfile", "Pipfile.lock"),
               "lock": ("Pipfile.lock",), "update": ("Pipfile.lock",)},
}
#: Options under which a verb leaves the lock as it is.
_KEEPS_LOCK = frozenset({"--frozen", "--locked", "--frozen-lockfile", "--deploy",
                         "--ignore-pipfile"})
#: Programs that name a file only to read it.
_READERS = frozenset({"cat", "less", "more", "head", "tail", "grep", "egrep", "fgrep", "rg",
                      "diff", "wc", "ls", "stat", "file", "md5sum", "sha256sum", "test", "["})
#: Seconds of slack between a command's recorded start/end and a file's mtime.
SLACK = 1.0
_SIMPLE = frozenset({"bash-hook", "exec-trace"})


def _argv(record: Mapping[str, Any]) -> list[str]:
    """The words of a simple command's record, wrappers and ``X=1`` prefixes left out."""
    argv = record.get("argv")
    if not argv:
        try:
            argv = shlex.split(str(record.get("command") or ""))
        except ValueError:
            return []
    words = [str(w) for w in argv]
    while words and _assignment(words[0]):
        words = words[1:]
    return list(unwrapped(words))


def _assignment(word: str) -> bool:
    return "=" in word and not word.startswith(("-", "/"))


def written_files(argv: Sequence[str]) -> tuple[str, str, tuple[str, ...]] | None:
    """``(tool, verb, files)`` where ``argv`` is a project tool's command that may write its
    own files (a plain ``pipenv install``, ``uv sync``/``run`` and ``pdm install`` only the
    lock, which they write again where it is stale; none with ``--frozen``, ``--locked``
    and the like)."""
    if not argv:
        return None
    tool = posixpath.basename(argv[0])
    verbs = _WRITES.get(tool)
    folder_options = _FOLDER_OPTIONS.get(tool, frozenset())
    words = [w for i, w in enumerate(argv[1:], 1)
             if not w.startswith("-") and argv[i - 1] not in folder_options]
    if verbs is None or not words or words[0] not in verbs:
        return None
    if _KEEPS_LOCK.intersection(argv[1:]):
        return None
    if tool == "pipenv" and words[0] == "install" and len(words) < 2:
        return tool, "install", ("Pipfile.lock",)  # the lock, written again where stale
    return tool, words[0], verbs[words[0]]


#: Each tool's options that name the project's folder (``uv --directory sub add x``).
_FOLDER_OPTIONS = {"uv": frozenset({"--directory", "--project"}),
                   "poetry": frozenset({"-C", "--directory", "-P", "--project"}),
                   "pdm": frozenset({"-p", "--project"})}


def project_folder(argv: Sequence[str], cwd: str) -> str:
    """The folder whose files a tool command writes: ``cwd``, or the folder its option
    names (relative to ``cwd``)."""
    options = _FOLDER_OPTIONS.get(posixpath.basename(argv[0]) if argv else "", frozenset())
    for i, word in enumerate(argv[1:], 1):
        name, eq, value = word.partition("=")
        if name in options and (eq or i + 1 < len(argv)):
            return posixpath.normpath(posixpath.join(cwd, value if eq else argv[i + 1]))
    return cwd


def _names(record: Mapping[str, Any], name: str) -> bool:
    """The record names the file ``name`` other than to read it."""
    text = str(record.get("command") or "") + " " + " ".join(map(str, record.get("argv") or ()))
    if name not in text:
        return False
    argv = _argv(record)
    return not argv or posixpath.basename(argv[0]) not in _READERS


def explained_by_tool(violations: Sequence[Mapping[str, Any]],
                      records: Iterable[Mapping[str, Any]], file_times: Mapping[str, float],
                      unconfirmed: Iterable[int] = ()
                      ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``violations`` (run.json's, ``path`` relative to ``/workspace``) split into those
    that stay and those a project tool's audited command explains (each with ``command``,
    ``seq`` and a ``detail`` naming them), given the audit's records, the final mtime of
    each changed file (``state/provenance.json``) and the records the process sampler did
    not confirm."""
    simple = [r for r in records if r.get("source") in _SIMPLE and r.get("type", "command")
              == "command"]
    skip = set(unconfirmed)
    stay: list[dict[str, Any]] = []
    explained: list[dict[str, Any]] = []
    for v in violations:
        found = _explaining(v, simple, file_times, skip)
        if found is None:
            stay.append(dict(v))
            continue
        rec, argv = found
        command = shlex.join(argv)
        explained.append({**v, "kind": "tool_changed", "command": command, "seq": rec["seq"],
                          "detail": f"/workspace/{v['path']} was {v['change']} by `{command}` "
                                    f"(audit record {rec['seq']})"})
    return stay, explained


def _explaining(v: Mapping[str, Any], simple: Sequence[Mapping[str, Any]],
                file_times: Mapping[str, float], skip: set[int]
                ) -> tuple[Mapping[str, Any], list[str]] | None:
    """The audited tool command that explains one violation, with its words; None."""
    rel = str(v.get("path") or "")
    folder, name = posixpath.split(rel)
    where = posixpath.normpath(posixpath.join(WORKSPACE, folder))
    when = file_times.get(posixpath.join(WORKSPACE, rel))
    if v.get("change") != "modified" or when is None:
        return None
    tool_records = []
    for rec in simple:
        argv = _argv(rec)
        wrote = written_files(argv)
        if (wrote is not None and name in wrote[2]
                and project_folder(argv, str(rec.get("cwd") or "/")) == where):
            tool_records.append((rec, argv))
        elif _names(rec, name):
            return None  # something else wrote, moved or edited it, or may have
    # The command the time falls within, else within a second of: of two tool commands a
    # moment apart (uv add, then uv run), the one that wrote the file, not the next.
    for slack in (0.0, SLACK):
        for rec, argv in reversed(tool_records):
            start, end = rec.get("start"), rec.get("end")
            if (rec.get("exit") == 0 and rec.get("seq") not in skip and start is not None
                    and end is not None and start - slack <= when <= end + slack):
                return rec, argv
    return None
