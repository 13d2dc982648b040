"""Extractors: each recognises one family of commands and returns a typed step.

The registry is the literal tuple :data:`EXTRACTORS`; the first extractor that returns a
step wins. The order is documented in docs/export.md and matters in two places: the
environment extractor sees ``echo 'export X=1' >> ~/.bashrc`` before the read-only one
would take ``echo`` for harmless, and ``pip list`` is claimed by the read-only extractor
only because the pip extractor declines every pip sub-command that changes nothing.
"""

from __future__ import annotations

import ast
import functools
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from synth.distill import conda
from synth.distill.shell import SimpleCommand, expand
from synth.distill.steps import (
    PYTHON_CHECK,
    AgentClaims,
    AptInstall,
    AptMaintenance,
    AptRemove,
    CondaAction,
    Download,
    EnvExport,
    EnvPersist,
    GitClone,
    LocalDeb,
    NativeBuild,
    PipInstall,
    PipUninstall,
    ProgramRun,
    ProjectTool,
    ReadOnly,
    ShellState,
    Step,
    ToolConfig,
    Unclassified,
    VenvCreate,
)
from synth.formats.claims import CONTAINER_CLAIMS
from synth.util.noise import is_env_file
from synth.util.wrappers import unwrapped

_PY = re.compile(r"^python(\d(\.\d+)?)?$")
_PIP = re.compile(r"^pip(\d(\.\d+)?)?$")


@functools.lru_cache(maxsize=4096)
def _base(word: str) -> str:
    return posixpath.basename(word)  # cached: every extractor asks it of the same program


@functools.lru_cache(maxsize=4096)
def _is_python(word: str) -> bool:
    return bool(_PY.match(_base(word)))


def _abs(cmd: SimpleCommand, path: str) -> str:
    if "$" in path:
        path = expand(path, cmd.env_map())
    return _abs_in(cmd.cwd, path)


@functools.lru_cache(maxsize=4096)
def _abs_in(cwd: str, path: str) -> str:
    if path.startswith("file://"):
        path = path[len("file://"):]
    if path == "~" or path.startswith("~/"):
        path = "/root" + path[1:]
    return posixpath.normpath(posixpath.join(cwd, path))


def _program(cmd: SimpleCommand) -> tuple[str, tuple[str, ...]]:
    """The program and its arguments, looking through ``sudo``/``env``/``time`` wrappers."""
    return _program_of(cmd.argv)


@functools.lru_cache(maxsize=1024)
def _program_of(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    # Cached: every extractor asks it of the same command in turn.
    argv = tuple(unwrapped(argv))
    if not argv:
        return "", ()
    return argv[0], argv[1:]


def _python_of(cmd: SimpleCommand, exe: str) -> str:
    """The interpreter ``exe`` names: absolute as written, else via an activated venv."""
    if "/" in exe:
        return _abs(cmd, exe)
    if cmd.activated:
        return posixpath.join(cmd.activated, "python")
    return exe


def _writes_files(cmd: SimpleCommand) -> bool:
    return any(op in (">", ">>", ">|", "&>", "&>>") and not tgt.startswith("/dev/")
               and not tgt.isdigit() for op, tgt in cmd.redirects)


@dataclass(frozen=True)
class Extractor:
    """One entry of the registry: a name (shown in reports), its recogniser, and the
    programs (basenames, after ``sudo``/``env`` wrappers) it can claim at all: it returns
    None for every other program, so :func:`classify` does not ask it (a test checks the
    declarations against the recognisers)."""

    name: str
    extract: Callable[[SimpleCommand], Step | None]
    programs: frozenset[str] = frozenset()
    #: Also ``python``, ``python3``, ``python3.11``…; ``pip``, ``pip3``, ``pip3.11``….
    python: bool = False
    pip: bool = False

    def may_claim(self, name: str) -> bool:
        return (name in self.programs or (self.python and bool(_PY.match(name)))
                or (self.pip and bool(_PIP.match(name))))


# --- shell state --------------------------------------------------------------------------

_SHELL_BUILTINS = frozenset({"cd", "pushd", "popd", "set", "unset", "deactivate", "shopt",
                             "alias", "hash", "umask", "ulimit", "trap"})


def extract_shell_state(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    if prog in _SHELL_BUILTINS:
        return ShellState(builtin=prog)
    if prog in ("source", ".") and args and (args[0].endswith("/bin/activate")
                                             or args[0] == "activate"):
        return ShellState(builtin="activate")
    if not cmd.argv and cmd.assignments:
        return ShellState(builtin="assignment")
    return None


# --- apt / dpkg ---------------------------------------------------------------------------

def extract_apt(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    name = _base(prog)
    if name in ("apt-get", "apt", "aptitude"):
        words = [a for a in args if not a.startswith("-")]
        if not words:
            return AptMaintenance(action="help")
        verb, rest = words[0], words[1:]
        if verb == "install":
            local = tuple(_abs(cmd, p) for p in rest if p.endswith(".deb"))
            if local:
                return LocalDeb(files=local)
            return AptInstall(packages=tuple(p for p in rest))
        if verb in ("remove", "purge", "autoremove"):
            return AptRemove(packages=tuple(rest))
        if verb in ("list", "show", "search", "policy", "depends", "rdepends", "changelog"):
            return ReadOnly(program=f"{name} {verb}")
        return AptMaintenance(action=verb)
    if name in ("apt-cache", "apt-config", "dpkg-query"):
        return ReadOnly(program=name)
    if name == "apt-mark":
        if args[:1] in (("showmanual",), ("showauto",), ("showhold",)):
            return ReadOnly(program=name)
        return AptMaintenance(action="apt-mark")
    if name == "dpkg":
        if any(a in ("-i", "--install") for a in args):
            return LocalDeb(files=tuple(_abs(cmd, a) for a in args if a.endswith(".deb")))
        if any(a in ("-r", "-P", "--remove", "--purge") for a in args):
            return AptRemove(packages=tuple(a for a in args if not a.startswith("-")))
        return ReadOnly(program=name)
    if name in ("add-apt-repository", "apt-key"):
        return AptMaintenance(action=name)
    return None


# --- pip / uv / venv ----------------------------------------------------------------------

_PIP_VALUE_OPTS = {
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url",
    "--extra-index-url", "-f", "--find-links", "-t", "--target", "--prefix", "--root",
    "--python", "-p", "-C", "--config-settings", "--global-option", "--build-option",
    "--no-binary", "--only-binary", "--platform", "--python-version", "--implementation",
    "--abi", "--src", "--upgrade-strategy", "--progress-bar", "--log", "--cache-dir",
    "--cert", "--client-cert", "--trusted-host", "--proxy", "--timeout", "--retries",
    "--exists-action", "--index", "--default-index", "--index-strategy", "--torch-backend",
    "--resolution", "--prerelease", "--extra", "--group", "--keyring-provider",
    "--report", "--root-user-action", "--override", "--exclude-newer",
}
_PIP_READ_ONLY = {"list", "show", "freeze", "check", "config", "debug", "help", "--version",
                  "-V", "search", "inspect", "index", "tree", "cache", "hash"}


_PipInvocation = tuple[str, str | None, tuple[str, ...]]
#: The last command :func:`_pip_invocation` answered, and its answer: the pip and the
#: read-only extractors ask it of the same command in turn.
_last_pip: tuple[SimpleCommand | None, _PipInvocation | None] = (None, None)


def _pip_invocation(cmd: SimpleCommand) -> _PipInvocation | None:
    """``(tool, python, args after 'pip')`` for pip and ``uv pip`` invocations."""
    global _last_pip
    last = _last_pip
    if last[0] is cmd:
        return last[1]
    answer = _pip_invocation_of(cmd)
    _last_pip = (cmd, answer)
    return answer


def _pip_invocation_of(cmd: SimpleCommand) -> _PipInvocation | None:
    prog, args = _program(cmd)
    name = _base(prog)
    if _PIP.match(name):
        if "/" in prog:
            own = posixpath.join(posixpath.dirname(_abs(cmd, prog)), "python")
        elif cmd.activated:
            own = posixpath.join(cmd.activated, "python")
        else:
            own = "python3"
        return _pip_general(cmd, own, args)
    if _is_python(prog) and args[:2] == ("-m", "pip"):
        return _pip_general(cmd, _python_of(cmd, prog), args[2:])
    if name == "uv" and args[:1] == ("pip",):
        rest = args[1:]
        python: str | None = None
        for i, a in enumerate(rest):
            if a in ("--python", "-p") and i + 1 < len(rest):
                python = _python_of(cmd, rest[i + 1])
            elif a.startswith("--python="):
                python = _python_of(cmd, a.split("=", 1)[1])
            elif a == "--system":
                python = "python3"
        if python is None:
            venv = cmd.env_map().get("VIRTUAL_ENV")
            if venv:
                python = posixpath.join(venv, "bin", "python")
            elif cmd.activated:
                python = posixpath.join(cmd.activated, "python")
            else:
                python = posixpath.join(cmd.cwd, ".venv", "bin", "python")
        return "uv", python, rest
    return None


def _pip_general(cmd: SimpleCommand, python: str,
                 args: tuple[str, ...]) -> _PipInvocation:
    """pip's general options before its command, read as pip reads them: ``--python X``
    (pip 22.3+) runs the command for interpreter X, or for the environment in folder X;
    the other options that take a value go with it (``pip --log f install …``), so that
    the command is the first word left."""
    out: list[str] = []
    i = 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a.startswith("--python="):
            python = _pip_python(cmd, a.split("=", 1)[1])
        elif a in _PIP_VALUE_OPTS and i + 1 < len(args):
            if a == "--python":
                python = _pip_python(cmd, args[i + 1])
            i += 1
        else:
            out.append(a)  # a flag: -q, --isolated, --no-cache-dir, --version
        i += 1
    return "pip", python, (*out, *args[i:]) if i else args


def _pip_python(cmd: SimpleCommand, value: str) -> str:
    """The interpreter pip's ``--python`` names: the file, or an environment's folder's."""
    if _is_python(value):
        return _python_of(cmd, value)
    return posixpath.join(_abs(cmd, value), "bin", "python")


def _split_opts(args: tuple[str, ...], valued: frozenset[str] | set[str] = _PIP_VALUE_OPTS
                ) -> tuple[list[tuple[str, str | None]], list[str]]:
    """pip-style options (``--opt value`` / ``--opt=value``; ``valued``: the options that
    take a value, pip's by default) and positional arguments."""
    opts: list[tuple[str, str | None]] = []
    positional: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            k, v = a.split("=", 1)
            opts.append((k, v))
        elif a in valued and i + 1 < len(args):
            opts.append((a, args[i + 1]))
            i += 1
        elif (len(a) > 2 and a[:2] in ("-r", "-e", "-i", "-f", "-c") and a[:2] in valued
              and not a.startswith("--")):
            opts.append((a[:2], a[2:]))
        elif a.startswith("-"):
            opts.append((a, None))
        else:
            positional.append(a)
        i += 1
    return opts, positional


#: ``[extra,…]`` after a local path (``-e '.[dev]'``, ``./pkg[io]``): not part of the path.
_EXTRAS = re.compile(r"\[[A-Za-z0-9._,\s-]*\]$")


def _local_path(cmd: SimpleCommand, target: str) -> str:
    """The absolute path a local install target names, its extras left off."""
    return _abs(cmd, _EXTRAS.sub("", target))


def _is_url(target: str) -> bool:
    return "://" in target or target.startswith("git+") or " @ " in target or "@git+" in target


def _is_local(target: str) -> bool:
    return (target.startswith((".", "/", "~", "$")) or target.endswith((".whl", ".tar.gz",
            ".zip", ".tar.bz2")) or "/" in target) and "://" not in target


def extract_pip(cmd: SimpleCommand) -> Step | None:
    inv = _pip_invocation(cmd)
    if inv is None:
        return None
    tool, python, args = inv
    words = [a for a in args if not a.startswith("-")]
    verb = words[0] if words else (args[0] if args else "help")
    if verb in _PIP_READ_ONLY or "--version" in args[:1] or not words:
        return None  # the read-only extractor reports it
    rest = args[args.index(verb) + 1:]
    opts, positional = _split_opts(rest)
    if verb == "uninstall":
        return PipUninstall(tool=tool, python=python,
                            names=tuple(p for p in positional if p != "-y"))
    if verb == "install" or (tool == "uv" and verb == "sync"):
        return _pip_install(cmd, tool, python, verb, opts, positional)
    if verb in ("download", "wheel"):
        return Download(tool=f"{tool} {verb}", url=" ".join(positional), dest=None)
    return None


@dataclass
class _PipArgs:
    """What a pip/uv install's options and targets name, collected in order."""

    reqs: list[str] = field(default_factory=list)
    local: list[str] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    editables: list[str] = field(default_factory=list)
    req_files: list[str] = field(default_factory=list)
    extra_index: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    build_opts: list[str] = field(default_factory=list)
    index_url: str | None = None

    def option(self, cmd: SimpleCommand, k: str, v: str) -> None:
        if k in ("-r", "--requirement"):
            self.req_files.append(_abs(cmd, v))
        elif k in ("-e", "--editable"):
            if _is_url(v):
                self.urls.append(v)
            else:
                path = _local_path(cmd, v)
                self.editables.append(path)
                self.local.append(path)
        elif k in ("-i", "--index-url", "--default-index"):
            self.index_url = v
        elif k in ("--extra-index-url", "--index"):
            self.extra_index.append(v)
        elif k in ("-f", "--find-links"):
            self.find_links.append(v if "://" in v else _abs(cmd, v))
        elif k in ("-C", "--config-settings", "--global-option", "--build-option",
                   "--no-binary"):
            self.build_opts += [k, v]

    def target(self, cmd: SimpleCommand, t: str) -> None:
        if _is_url(t):
            self.urls.append(t)
        elif _is_local(t):
            self.local.append(_local_path(cmd, t))
        else:
            self.reqs.append(t)

    def environment(self, env: Mapping[str, str]) -> None:
        """Index and find-links settings the command's environment gives pip or uv."""
        for name in ("PIP_EXTRA_INDEX_URL", "UV_EXTRA_INDEX_URL"):
            if env.get(name):
                self.extra_index.extend(env[name].split())
        for name in ("PIP_FIND_LINKS", "UV_FIND_LINKS"):
            if env.get(name):
                self.find_links.extend(env[name].split())
        for name in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"):
            if env.get(name) and self.index_url is None:
                self.index_url = env[name]


def _pip_install(cmd: SimpleCommand, tool: str, python: str | None, verb: str,
                 opts: Sequence[tuple[str, str | None]], positional: Sequence[str]
                 ) -> PipInstall:
    a = _PipArgs()
    flags = {k for k, _ in opts}
    targets = list(positional)
    if tool == "uv" and verb == "sync":
        a.req_files.extend(_abs(cmd, p) for p in positional)
        targets = []
    for k, v in opts:
        if v is not None:
            a.option(cmd, k, v)
    for t in targets:
        a.target(cmd, t)
    env = {**cmd.env_map(), **dict(cmd.assignments)}
    a.environment(env)
    return PipInstall(
        tool=tool, python=python, requirements=tuple(a.reqs),
        requirement_files=tuple(a.req_files), local=tuple(a.local),
        editables=tuple(a.editables), urls=tuple(a.urls), index_url=a.index_url,
        extra_index_urls=tuple(a.extra_index), find_links=tuple(a.find_links),
        no_build_isolation="--no-build-isolation" in flags
        or env.get("PIP_NO_BUILD_ISOLATION", "").lower() in ("0", "false", "off"),
        no_index="--no-index" in flags, build_options=tuple(a.build_opts),
        break_system_packages="--break-system-packages" in flags
        or env.get("PIP_BREAK_SYSTEM_PACKAGES", "") in ("1", "true"),
    )


#: Options of ``uv venv`` that take a value (the word after them is not the folder).
_UV_VENV_VALUED = frozenset({
    "--prompt", "-p", "--python", "-i", "--index-url", "--extra-index-url", "-f",
    "--find-links", "--index", "--default-index", "--index-strategy", "--keyring-provider",
    "--link-mode", "--exclude-newer", "--cache-dir", "--allow-insecure-host", "--directory",
    "--project", "--config-file", "--color"})
#: ``uv venv`` options kept for the rebuild: what they do Python's ``venv`` does alike.
_UV_VENV_KEPT = frozenset({"--seed", "--prompt", "--system-site-packages"})


def _words(opts: Sequence[tuple[str, str | None]]) -> tuple[str, ...]:
    """:func:`_split_opts`'s options as command-line words again (``--prompt x``)."""
    return tuple(w for k, v in opts for w in ((k,) if v is None else (k, v)))


def extract_venv(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    if _is_python(prog) and args[:2] == ("-m", "venv") and len(args) > 2:
        opts, positional = _split_opts(args[2:], {"--prompt"})
        if positional:
            return VenvCreate(tool="venv", path=_abs(cmd, positional[-1]),
                              python=_python_of(cmd, prog), options=_words(opts))
    if _base(prog) == "virtualenv" or (_is_python(prog) and args[:2] == ("-m", "virtualenv")):
        rest = args[2:] if _is_python(prog) else args
        opts_l, positional = _split_opts(rest)
        python = next((v for k, v in opts_l if k in ("-p", "--python") and v), "python3")
        if positional:
            return VenvCreate(tool="virtualenv", path=_abs(cmd, positional[-1]),
                              python=python)
    if _base(prog) == "uv" and args[:1] == ("venv",):
        opts, positional = _split_opts(args[1:], _UV_VENV_VALUED)
        python = next((v for k, v in opts if k in ("-p", "--python") and v), "python3")
        path = _abs(cmd, positional[0]) if positional else _abs(cmd, ".venv")
        return VenvCreate(tool="uv", path=path, python=python,
                          options=_words([(k, v) for k, v in opts if k in _UV_VENV_KEPT]))
    return None


# --- conda --------------------------------------------------------------------------------

def extract_conda(cmd: SimpleCommand) -> Step | None:
    """What a conda/mamba/micromamba command does. Its options are its own: ``-n`` names an
    environment, ``-p`` a prefix, ``-c`` a channel and ``-f`` a spec file, none of them a
    package. ``conda run`` is never seen here: the shell model hands its inner command to
    the extractors, in the environment it names (:mod:`synth.distill.shell`)."""
    prog, args = _program(cmd)
    tool = _base(prog)
    if tool not in conda.TOOLS:
        return None
    opts, words = conda.split_args(args)
    verb = words[0] if words else "help"
    if verb == "env":
        verb = f"env {words[1]}" if len(words) > 1 else "env"
        words = words[1:]
    if verb == "config" and (written := [k for k, _v in opts if k in _CONDA_CONFIG_WRITE]):
        key = next((v for k, v in opts if k in _CONDA_CONFIG_WRITE and v), None)
        return ToolConfig(tool=tool, key=None if written[0] == "--stdin" else key or (
            words[1] if len(words) > 1 else None))
    if verb in ("list", "info", "search", "env list", "--version", "help", "config"):
        return ReadOnly(program=f"{tool} {verb}")
    if verb in ("activate", "deactivate"):
        return ShellState(builtin=verb)
    prefix = conda.option(opts, "-p", "--prefix")
    return CondaAction(
        tool=tool, verb=verb, packages=tuple(words[1:]),
        channels=tuple(v for k, v in opts if k in ("-c", "--channel") and v),
        env_name=conda.option(opts, "-n", "--name"),
        prefix=_abs(cmd, prefix) if prefix else None,
        files=tuple(_abs(cmd, v) for k, v in opts if k in ("-f", "--file") and v))


# --- project tools ------------------------------------------------------------------------

#: The verbs of each project environment tool that make, lock or sync a project's environment.
_PROJECT_VERBS = {
    "uv": frozenset({"sync", "lock", "add", "remove", "run"}),
    "poetry": frozenset({"install", "sync", "lock", "add", "remove", "update", "run"}),
    "pdm": frozenset({"install", "sync", "lock", "add", "remove", "update", "run"}),
    "pipenv": frozenset({"install", "sync", "lock", "uninstall", "update", "run"}),
}
#: What only reads the project or its environment: a verb, or an option without a verb
#: (``pipenv --venv``; ``pipenv --python 3.11`` makes a venv, ``--rm`` removes it).
_TOOL_QUERIES = {
    "uv": frozenset({"tree"}),
    "poetry": frozenset({"show", "check", "about", "search", "--version", "env info",
                         "env list", "env activate"}),
    "pdm": frozenset({"list", "info", "show", "search", "--version", "venv list",
                      "venv --path", "venv --python", "venv activate"}),
    "pipenv": frozenset({"graph", "requirements", "verify", "check", "scripts", "--venv",
                         "--where", "--py", "--envs", "--version", "--support"}),
}

#: uv's global options that take a value (before its verb).
_UV_GLOBAL_VALUED = frozenset({"--directory", "--project", "--cache-dir", "--config-file",
                               "--color", "-p", "--python", "--allow-insecure-host"})


def extract_project_tool(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    tool = _base(prog)
    verbs = _PROJECT_VERBS.get(tool)
    if verbs is None:
        return None
    words = _after_options(args, _UV_GLOBAL_VALUED)
    if words[:1] == ["config"] and tool in ("poetry", "pdm"):
        return _project_tool_config(tool, words[1:])
    if (query := _tool_query(tool, args, words)) is not None:
        return ReadOnly(program=f"{tool} {query}")
    if tool == "pdm" and words[:1] in (["use"], ["venv"]):
        return _pdm_environment(cmd, words)
    if tool == "poetry" and words[:2] in (["env", "use"], ["env", "remove"]):
        return ProjectTool(tool=tool, verb="env", project=cmd.cwd)
    if not words or words[0] not in verbs:
        return None
    return ProjectTool(tool=tool, verb=words[0], project=cmd.cwd,
                       installer=_run_installer(words[1:]) if words[0] == "run" else None)


def _after_options(args: Sequence[str], valued: frozenset[str]) -> list[str]:
    """``args`` from its first word that is not an option (``valued``: the options that
    take the next word as their value)."""
    words = list(args)
    while words and words[0].startswith("-"):
        words = words[2:] if words[0] in valued else words[1:]
    return words


def _tool_query(tool: str, args: Sequence[str], words: Sequence[str]) -> str | None:
    """The query a project tool's command makes (``pipenv --venv``, ``poetry env info``),
    None when it may change something."""
    queries = _TOOL_QUERIES.get(tool, frozenset())
    if words:
        two = " ".join(words[:2])
        return two if two in queries else words[0] if words[0] in queries else None
    return next((a for a in args if a in queries), None)


def _pdm_environment(cmd: SimpleCommand, words: Sequence[str]) -> Step | None:
    """``pdm venv create [PYTHON]`` makes the project's ``.venv`` (with virtualenv, or
    Python's venv with ``-w venv``; pip only with ``--with-pip``); with ``-n NAME`` a venv
    in pdm's own folder, and ``pdm venv remove`` takes one away: the tool's environments,
    which the final state holds. ``pdm use PYTHON`` writes the project's ``.pdm-python``,
    which travels in source/. A conda venv is left unclassified."""
    if words[0] == "use":
        return ToolConfig(tool="pdm", key="python", local=True)
    if words[1:2] == ["remove"]:
        return ProjectTool(tool="pdm", verb="venv", project=cmd.cwd)
    if words[1:2] != ["create"]:
        return None
    opts, positional = _split_opts(tuple(words[2:]), {"-w", "--with", "-n", "--name"})
    backend = next((v for k, v in opts if k in ("-w", "--with") and v), "virtualenv")
    if backend not in ("virtualenv", "venv"):
        return None
    if any(k in ("-n", "--name") for k, _v in opts):
        return ProjectTool(tool="pdm", verb="venv", project=cmd.cwd)
    return VenvCreate(tool=backend, path=_abs(cmd, ".venv"),
                      python=positional[0] if positional else "python3",
                      options=() if any(k == "--with-pip" for k, _v in opts)
                      else ("--without-pip",))


#: Options of ``uv run`` / ``poetry run`` / ``pdm run`` that take a value.
_RUN_VALUED = frozenset({"--with", "--with-editable", "--with-requirements", "--extra",
                         "--group", "--only-group", "--python", "-p", "--directory",
                         "--project", "--env-file", "--index", "--default-index", "-P"})
_RUN_INSTALLERS = frozenset({"pip", "pip3", "easy_install", "setup.py"})


def _run_installer(args: Sequence[str]) -> str | None:
    """The installer a project tool's ``run`` runs (``pip`` for ``pipenv run pip install x``
    or ``uv run python -m pip install x``), else None."""
    words = _after_options(args, _RUN_VALUED)
    if not words:
        return None
    name = _base(words[0])
    if _is_python(words[0]) and words[1:3] == ["-m", "pip"]:
        return "pip"
    if _is_python(words[0]) and words[1:2] and words[1].endswith("setup.py"):
        return "setup.py"
    return name if name in _RUN_INSTALLERS or _PIP.match(name) else None


#: The options of ``poetry config`` / ``pdm config`` that change a setting, and those that
#: make it the project's own (its file in the project folder).
_CONFIG_WRITE = frozenset({"--unset", "-d", "--delete", "--migrate"})
_CONFIG_LOCAL = frozenset({"--local", "-l"})


def _project_tool_config(tool: str, args: Sequence[str]) -> Step:
    """``poetry config KEY VALUE`` / ``pdm config KEY VALUE`` (or ``--unset``/``-d KEY``)
    write a setting; with no value (``--list``, a bare ``KEY``) they only read."""
    keys = [a for a in args if not a.startswith("-")]
    if len(keys) < 2 and not _CONFIG_WRITE.intersection(args):
        return ReadOnly(program=f"{tool} config")
    return ToolConfig(tool=tool, key=keys[0] if keys else None,
                      local=bool(_CONFIG_LOCAL.intersection(args)))


#: ``conda config`` options that change a setting (the rest show it).
_CONDA_CONFIG_WRITE = frozenset({"--add", "--append", "--prepend", "--set", "--remove",
                                 "--remove-key", "--stdin"})


# --- native builds ------------------------------------------------------------------------

_BUILD_TOOLS = ("cmake", "make", "ninja", "nvcc", "gcc", "g++", "cc", "c++", "clang",
                "clang++", "meson", "scons", "bazel")


def extract_native(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    name = _base(prog)
    if _is_python(prog) and args and args[0].endswith("setup.py"):
        sub = [a for a in args[1:] if not a.startswith("-")]
        if sub and all(s in ("--help", "--version", "--name") for s in sub):
            return None
        return NativeBuild(tool="setup.py", argv=(prog, *args), python=_python_of(cmd, prog))
    if _is_python(prog) and args[:2] == ("-m", "build"):
        return NativeBuild(tool="python -m build", argv=(prog, *args),
                           python=_python_of(cmd, prog))
    if name in _BUILD_TOOLS:
        if any(a in ("--version", "-v", "--help", "-h") for a in args[:1]):
            return ReadOnly(program=f"{name} --version")
        return NativeBuild(tool=name, argv=(prog, *args))
    if name == "configure" and prog.startswith("./"):
        return NativeBuild(tool="configure", argv=(prog, *args))
    return None


# --- environment --------------------------------------------------------------------------

_EXPORT_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def extract_env(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    if prog == "export" and args:
        names = tuple(a.split("=", 1)[0] for a in args if not a.startswith("-"))
        return EnvExport(names=names)
    if prog in ("echo", "printf") and _writes_files(cmd):
        for op, target in cmd.redirects:
            path = _abs(cmd, target)
            if op in (">", ">>") and is_env_file(path):
                body = " ".join(a for a in args if not a.startswith("-"))
                pairs = []
                for line in body.replace("\\n", "\n").splitlines():
                    m = _EXPORT_LINE.match(line)
                    if m:
                        pairs.append((m.group(1), _unquote(m.group(2))))
                return EnvPersist(file=path, assignments=tuple(pairs))
    return None


# --- downloads ----------------------------------------------------------------------------

_GIT_VALUE_OPTS = {"--depth", "-b", "--branch", "-o", "--origin", "-c", "--config", "-C",
                   "--reference", "--filter", "-j", "--jobs", "--shallow-since", "-u"}


def _git_words(args: tuple[str, ...]) -> list[str]:
    """git's positional words, skipping options and their values."""
    words: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in _GIT_VALUE_OPTS:
            skip = True
        elif not a.startswith("-"):
            words.append(a)
    return words


def extract_download(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    name = _base(prog)
    if name in ("wget", "curl"):
        opts, positional = _split_opts(tuple(a for a in args))
        urls = [p for p in positional if "://" in p] or [a for a in args if "://" in a]
        dest = next((v for k, v in opts if k in ("-O", "-o", "--output",
                                                  "--output-document") and v), None)
        if not dest:
            for i, a in enumerate(args):
                if a in ("-O", "-o") and i + 1 < len(args):
                    dest = args[i + 1]
        if not urls:
            return ReadOnly(program=name) if "--version" in args else None
        return Download(tool=name, url=urls[0],
                        dest=_abs(cmd, dest) if dest and dest != "-" else None)
    if name == "git":
        words = _git_words(args)
        if words[:1] == ["clone"] and len(words) > 1:
            url = words[1]
            dest = words[2] if len(words) > 2 else posixpath.basename(url).removesuffix(".git")
            ref = None
            for i, a in enumerate(args):
                if a in ("-b", "--branch") and i + 1 < len(args):
                    ref = args[i + 1]
            return GitClone(url=url, dest=_abs(cmd, dest), ref=ref)
        if words[:1] and words[0] in ("status", "log", "diff", "show", "rev-parse", "branch",
                                      "remote", "describe", "ls-files", "config"):
            return ReadOnly(program=f"git {words[0]}")
    return None


# --- read-only ----------------------------------------------------------------------------

_READ_ONLY = {
    "ls", "ll", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "find",
    "which", "type", "whereis", "echo", "printf", "pwd", "whoami", "id", "uname", "nproc",
    "free", "df", "du", "env", "printenv", "date", "hostname", "nvidia-smi", "lscpu",
    "lspci", "file", "stat", "wc", "sort", "uniq", "tree", "true", "false", "test", "[",
    "[[", "sleep", "ldd", "readlink", "realpath", "basename", "dirname", "md5sum",
    "sha256sum", "diff", "cmp", "jq", "top", "ps", "history", "clear", "tee", "xargs",
    "awk", "cut", "tr", "column", "getconf", "locale", "ldconfig", ":", "exit", "return",
    "wait", "read", "strings", "nm", "objdump", "python-config", "pkg-config",
}
_PY_SAFE_CALLS = re.compile(r"\b(open|system|popen|subprocess|remove|unlink|rmtree|"
                            r"write|mkdir|rename|install|pip|setup|exec|eval|__import__|"
                            r"import_module)\b")
#: Modules a ``python -c`` may import and stay read-only: the interpreter's own facts.
#: Importing anything else runs that package's code, which may write (matplotlib its
#: config folder, a cache of compiled kernels): a check that runs code, not read-only.
_PY_INSPECT_MODULES = frozenset({"sys", "os", "os.path", "platform", "sysconfig", "site",
                                 "struct", "importlib.metadata", "json"})


@functools.lru_cache(maxsize=1024)
def _python_check(args: tuple[str, ...]) -> Literal["read-only", "runs-code"] | None:
    """What a ``python`` command line with ``args`` is, where it is a check: ``read-only``
    (the version, ``-m site``, ``-c`` code that imports only :data:`_PY_INSPECT_MODULES`
    and writes nothing), ``runs-code`` (``-c`` code of the same shape that imports
    something else: ``import torch; print(torch.__version__)``); None for anything else."""
    if args[:1] in (("--version",), ("-V",), ("-VV",)):
        return "read-only"
    if args[:2] == ("-m", "site") or args[:2] == ("-m", "sysconfig"):
        return "read-only"
    if len(args) < 2 or args[0] != "-c" or _PY_SAFE_CALLS.search(args[1]):
        return None
    try:
        tree = ast.parse(args[1])
    except SyntaxError:
        return None
    if not all(isinstance(n, ast.Import | ast.ImportFrom | ast.Expr | ast.Assign | ast.If |
                          ast.Try | ast.Assert) for n in tree.body):
        return None
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return "read-only" if imported <= _PY_INSPECT_MODULES else "runs-code"


def extract_read_only(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    name = _base(prog)
    if _writes_files(cmd) and name not in ("tee",):
        return None
    if name == "tee" and any(not a.startswith("-") and not a.startswith("/dev/")
                             for a in args):
        # ``… | tee log`` writes a log file: harmless, but not nothing.
        return ReadOnly(program="tee (log)")
    if name in _READ_ONLY:
        if name == "find" and any(a in ("-delete", "-exec", "-execdir") for a in args):
            return None
        if name == "xargs":
            return None
        return ReadOnly(program=name)
    if _is_python(prog) and _python_check(args) == "read-only":
        return ReadOnly(program="python (inspection)")
    inv = _pip_invocation(cmd)
    if inv is not None:
        words = [a for a in inv[2] if not a.startswith("-")]
        if words[:1] == ["config"] and words[1:2] in (["set"], ["unset"], ["edit"]):
            return ToolConfig(tool=inv[0], key=words[2] if len(words) > 2 else None)
        if not words or words[0] in _PIP_READ_ONLY or "--version" in inv[2][:1]:
            return ReadOnly(program=f"{inv[0]} {words[0] if words else '--version'}")
    if name == "uv" and args[:1] in (("--version",), ("version",)):
        return ReadOnly(program="uv --version")
    if name in ("torchrun",):
        return None
    return None


def extract_program_run(cmd: SimpleCommand) -> Step | None:
    prog, args = _program(cmd)
    if _is_python(prog) and _python_check(args) == "runs-code":
        return ProgramRun(program=PYTHON_CHECK)
    if _is_python(prog) and args and args[0].endswith(".py"):
        return ProgramRun(program=f"python {posixpath.basename(args[0])}")
    if _is_python(prog) and args[:1] == ("-m",) and len(args) > 1:
        return ProgramRun(program=f"python -m {args[1]}")
    if _base(prog) in ("torchrun", "accelerate", "deepspeed", "pytest"):
        return ProgramRun(program=_base(prog))
    return None


_APT_PROGRAMS = frozenset({"apt-get", "apt", "aptitude", "apt-cache", "apt-config",
                           "dpkg-query", "apt-mark", "dpkg", "add-apt-repository", "apt-key"})
_RUNNERS = frozenset({"torchrun", "accelerate", "deepspeed", "pytest"})

#: The registry, in order; the first extractor that returns a step wins. ``""`` is the
#: program of a command that is only ``X=1`` assignments.
EXTRACTORS: tuple[Extractor, ...] = (
    Extractor("shell", extract_shell_state, _SHELL_BUILTINS | {"source", ".", ""}),
    Extractor("apt", extract_apt, _APT_PROGRAMS),
    Extractor("python-env", extract_venv, frozenset({"virtualenv", "uv"}), python=True),
    Extractor("pip", extract_pip, frozenset({"uv"}), python=True, pip=True),
    Extractor("conda", extract_conda, frozenset({"conda", "mamba", "micromamba"})),
    Extractor("project-tool", extract_project_tool, frozenset(_PROJECT_VERBS)),
    Extractor("native", extract_native, frozenset({*_BUILD_TOOLS, "configure"}),
              python=True),
    Extractor("env", extract_env, frozenset({"export", "echo", "printf"})),
    Extractor("download", extract_download, frozenset({"wget", "curl", "git"})),
    Extractor("read-only", extract_read_only, frozenset({*_READ_ONLY, "tee", "uv"}),
              python=True, pip=True),
    Extractor("program-run", extract_program_run, _RUNNERS, python=True),
)


@functools.lru_cache(maxsize=4096)
def candidates(name: str) -> tuple[Extractor, ...]:
    """The extractors that may claim a command of program ``name``, in registry order."""
    return tuple(e for e in EXTRACTORS if e.may_claim(name))


def classify(cmd: SimpleCommand) -> tuple[str, Step]:
    """``(extractor name, step)`` for one simple command; ``unclassified`` when none fits.
    Only the extractors that may claim the command's program are asked (:func:`candidates`):
    the answer is the registry's, in order, at a fraction of the calls."""
    if not cmd.parsed:
        return "unparsed", Unclassified(program=cmd.text.split(" ", 1)[0] if cmd.text else "")
    name = _base(_program(cmd)[0])
    if _writes_claims(cmd, name):
        return "claims", AgentClaims(program=name)
    for extractor in candidates(name):
        step = extractor.extract(cmd)
        if step is not None:
            return extractor.name, step
    return "unclassified", Unclassified(program=name)


def _writes_claims(cmd: SimpleCommand, name: str) -> bool:
    """Whether ``cmd`` writes the agent's self-report: redirected into it, whatever the
    program, or ``tee`` into it."""
    if name == "tee":
        return CONTAINER_CLAIMS in cmd.argv[1:]
    return bool(cmd.redirects) and any(t == CONTAINER_CLAIMS for _op, t in cmd.redirects)


def classify_each(cmds: Iterable[SimpleCommand]) -> Iterator[tuple[SimpleCommand, str, Step]]:
    """``(command, extractor name, step)`` of each command, :func:`classify` asked once per
    distinct command: it reads a parsed command's words, assignments, redirects and shell
    context only (never its seq, exit status or flags), and agents repeat commands. The
    repeats share one frozen step."""
    seen: dict[tuple[object, ...], tuple[str, Step]] = {}
    for c in cmds:
        if not c.parsed:
            yield (c, *classify(c))
            continue
        key = (c.argv, c.assignments, c.redirects, c.cwd, c.env, c.activated)
        answer = seen.get(key)
        if answer is None:
            answer = seen[key] = classify(c)
        yield (c, *answer)
