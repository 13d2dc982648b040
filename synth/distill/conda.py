"""conda, mamba and micromamba on the command line: their options, and where the
environment a command names lives.

An environment named ``X`` (``-n X``, ``conda activate X``, ``conda run -n X``) lives in
``<root>/envs/X``; ``base`` is the root itself; a name with a ``/`` is a prefix. The root
is the installation's: conda's and mamba's executable sits in ``<root>/bin`` or
``<root>/condabin``, micromamba's is ``-r``/``--root-prefix`` or ``MAMBA_ROOT_PREFIX``.
A command that runs ``conda`` by its bare name does not say which installation that is:
its environment is then written under :data:`UNKNOWN_ROOT`, which
:func:`synth.distill.envs.interp_for` resolves against the final state's interpreters
(the one whose prefix ends with ``/envs/X``; for ``base``, the conda root).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from synth.formats.state import Interpreter

TOOLS = frozenset({"conda", "mamba", "micromamba"})
#: The root of an installation a command does not name (never a real path: ``<`` ``>``).
UNKNOWN_ROOT = "/<conda-root>"

#: Options that take a value, for the verbs that make or fill an environment (``create``,
#: ``install``, ``update``, ``remove``, ``env create``/``update``) and for ``run``.
#: ``-f``/``--file`` is a spec file here (pip's ``-f`` is ``--find-links``).
VALUE_OPTS = frozenset({
    "-n", "--name", "-p", "--prefix", "-c", "--channel", "-f", "--file", "--solver",
    "--subdir", "--platform", "--repodata-fn", "--clone", "--revision", "-r",
    "--root-prefix", "--rc-file", "--category", "--channel-priority", "--cwd", "-a",
    "--attach", "-e", "--env", "--label", "--channel-alias",
})
#: Short options that may carry their value attached (``-nresearch``).
_ATTACHED = ("-n", "-p", "-c", "-f", "-r")

Options = list[tuple[str, str | None]]


def _option_at(args: Sequence[str], i: int) -> tuple[str, str | None, int]:
    """The option starting at ``args[i]``, its value, and where the next word is."""
    a = args[i]
    if a.startswith("--") and "=" in a:
        k, v = a.split("=", 1)
        return k, v, i + 1
    if a in VALUE_OPTS and i + 1 < len(args):
        return a, args[i + 1], i + 2
    if len(a) > 2 and a[:2] in _ATTACHED:
        return a[:2], a[2:], i + 1
    return a, None, i + 1


def split_args(args: Sequence[str]) -> tuple[Options, list[str]]:
    """conda-style options (``--opt value``, ``--opt=value``, ``-nX``, flags) and the
    positional words, in order."""
    opts: Options = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        if args[i].startswith("-"):
            k, v, i = _option_at(args, i)
            opts.append((k, v))
        else:
            positional.append(args[i])
            i += 1
    return opts, positional


def option(opts: Options, *names: str) -> str | None:
    """The last value given to any of ``names``."""
    found = None
    for k, v in opts:
        if k in names and v is not None:
            found = v
    return found


def root_of(prog: str, opts: Options, env: Mapping[str, str]) -> str:
    """The installation ``prog`` (as run, absolute where a path) belongs to."""
    root = option(opts, "-r", "--root-prefix")
    if root:
        return root
    if posixpath.basename(prog) == "micromamba":
        return env.get("MAMBA_ROOT_PREFIX") or UNKNOWN_ROOT
    if "/" in prog and posixpath.basename(posixpath.dirname(prog)) in ("bin", "condabin"):
        return posixpath.dirname(posixpath.dirname(prog))
    return UNKNOWN_ROOT


def env_prefix(root: str, name: str) -> str:
    """The prefix of environment ``name`` of the installation ``root``."""
    if name == "base":
        return root
    if "/" in name:
        return name
    return f"{root}/envs/{name}"


def run_split(args: Sequence[str]) -> tuple[Options, tuple[str, ...]]:
    """``run``'s own options and the command it runs (the words after ``run``; an empty
    command: none given)."""
    opts: Options = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "--":
            return opts, tuple(args[i + 1:])
        k, v, i = _option_at(args, i)
        opts.append((k, v))
    return opts, tuple(args[i:])


def conda_env(prefix: str, interps: Sequence[Interpreter]) -> Interpreter | None:
    """The final state's interpreter of an environment of :data:`UNKNOWN_ROOT`: the one
    whose prefix ends with ``/envs/X`` (``base``: the one conda root), when exactly one
    does; None for any other prefix."""
    if prefix == UNKNOWN_ROOT:
        found = [i for i in interps if i.kind == "conda" and "/envs/" not in i.prefix]
    elif prefix.startswith(UNKNOWN_ROOT + "/envs/"):
        tail = prefix[len(UNKNOWN_ROOT):]
        found = [i for i in interps if i.prefix.endswith(tail)]
    else:
        return None
    return found[0] if len(found) == 1 else None
