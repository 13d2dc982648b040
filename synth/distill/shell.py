"""Audited command lines -> simple commands, with bashlex.

A ``bash -c`` string such as ``cd /workspace && export MAX_JOBS=4 && pip install -e .`` is
split into simple commands, each with the working directory and the exported variables in
effect when it ran (a tiny model of the shell's state: ``cd``, ``export``, ``X=1 cmd``
prefixes, ``source …/bin/activate``). Exit statuses come from the per-command hook records
when the audit log has them (matched in order by text), else from the whole string.
A string bashlex cannot parse is kept verbatim as one command flagged ``unparsed``.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import bashlex
import bashlex.errors

from synth.distill import conda
from synth.distill.fastshell import FastCommand, fast_parse
from synth.distill.load import AuditRecord

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


class SimpleCommand(NamedTuple):
    """One simple command as it ran: words after quote removal, in its shell context.

    A named tuple, not a dataclass: a long log makes 150,000 of them, and a tuple is made
    in one call and holds its fields without a dict (a third of the memory)."""

    argv: tuple[str, ...]
    #: ``X=1`` prefixes of this command only.
    assignments: tuple[tuple[str, str], ...]
    #: ``(operator, target)`` of each redirection, e.g. ``(">>", "/root/.bashrc")``.
    redirects: tuple[tuple[str, str], ...]
    #: The command's own source text.
    text: str
    cwd: str
    #: Variables exported earlier in the same shell (``export``) — the build env.
    env: tuple[tuple[str, str], ...]
    #: ``…/bin`` of a virtual environment activated earlier in the same shell.
    activated: str | None
    seq: int
    #: Exit status; None when unknown or when the command never ran.
    exit: int | None
    #: False when the command line could not be parsed: ``text`` is the whole line.
    parsed: bool = True
    #: Why the command is flagged (inside a loop, unparsed, …); empty when clean.
    flags: tuple[str, ...] = ()
    #: Ran inside a pipeline (not as its last member) or after ``||``: its failure was masked.
    masked: bool = False
    #: Index of this command within its audit record.
    index: int = 0  # type: ignore[assignment]  # tuple.index: a field here

    @property
    def ref(self) -> str:
        """Stable identifier: audit seq and position, e.g. ``12.1``."""
        return f"{self.seq}.{self.index}"

    @property
    def failed(self) -> bool:
        # 141 is SIGPIPE: a pipeline member whose reader stopped early (``cmd | head``).
        return self.exit is not None and self.exit != 0 and not (self.masked and
                                                                  self.exit == 141)

    @property
    def ran(self) -> bool:
        return "not-run" not in self.flags

    @property
    def succeeded(self) -> bool:
        """Parsed, ran and did not fail: what distill replays the effect of (asked of every
        command of a long log: the common case, no flag and exit 0, answers at once)."""
        if not self.exit and not self.flags:
            return self.parsed
        return self.parsed and self.ran and not self.failed

    def env_map(self) -> dict[str, str]:
        return dict(self.env)


_new_tuple = tuple.__new__


class _ShellState:
    """What one shell remembers between its commands: made once per audited line."""

    __slots__ = ("activated", "cwd", "env", "exported")

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.exported: dict[str, str] = {}
        #: ``exported`` as a command's sorted ``env``, kept until it changes.
        self.env: tuple[tuple[str, str], ...] = ()
        self.activated: str | None = None


def expand(word: str, env: Mapping[str, str]) -> str:
    """Expand ``$VAR`` / ``${VAR}`` known in ``env``; unknown ones stay as written."""

    if "$" not in word:
        return word

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))

    return _VAR.sub(sub, word)


def _resolve(cwd: str, path: str, env: Mapping[str, str]) -> str:
    path = expand(path, env)
    if path in ("~", "") or path.startswith("~/"):
        path = env.get("HOME", "/root") + path[1:]
    if path == "-":
        return cwd
    return posixpath.normpath(posixpath.join(cwd, path))


def _normalise(text: str) -> str:
    """Text for matching a hook record to a parsed command: bash reprints a command
    (``2>/dev/null`` as ``2> /dev/null``, its own quoting), so spaces and quotes go."""
    return re.sub(r"[\s'\"]+", "", text)


#: The commands :meth:`_Walker._apply` changes the shell state for (and bare ``X=1``).
_STATEFUL = frozenset({"cd", "export", "declare", "typeset", "unset", "source", ".",
                       "deactivate", "conda", "mamba", "micromamba"})
#: conda's programs named by a path (``/opt/conda/bin/conda activate X``) change it too.
_CONDA_PATHS = ("/conda", "/mamba", "/micromamba")


class _Walker:
    def __init__(self, source: str, record: AuditRecord, state: _ShellState,
                 exits: str | None = None) -> None:
        self.source = source
        self.record = record
        self.state = state
        self.out: list[SimpleCommand] = []
        self.expands = "$" in source
        #: How exit statuses are set: None (not yet), ``line`` (from the whole line, no
        #: hook records: see :func:`_with_exits`) or ``own`` (the record is one command).
        self.exits = exits

    def _exit(self, masked: bool) -> int | None:
        code = self.record.exit
        if self.exits is None or (self.exits == "line" and masked and not code):
            return None
        return code

    def walk(self, node: Any, *, masked: bool = False, flags: tuple[str, ...] = ()) -> None:
        kind = node.kind
        if kind == "list":
            parts = node.parts
            for i, part in enumerate(parts):
                if part.kind == "operator":
                    continue
                nxt = parts[i + 1] if i + 1 < len(parts) else None
                prev = parts[i - 1] if i > 0 else None
                m = masked or (nxt is not None and nxt.kind == "operator" and nxt.op == "||")
                m = m or (prev is not None and prev.kind == "operator" and prev.op == "||")
                self.walk(part, masked=m, flags=flags)
        elif kind == "pipeline":
            cmds = [p for p in node.parts if p.kind != "pipe"]
            for i, part in enumerate(cmds):
                self.walk(part, masked=masked or i < len(cmds) - 1, flags=flags)
        elif kind == "command":
            self.command(node, masked=masked, flags=flags)
        elif kind == "compound":
            inner = (*flags, "compound")
            for part in node.list:
                if part.kind not in ("reservedword", "operator"):
                    self.walk(part, masked=masked, flags=inner)
        elif kind in ("if", "for", "while", "until"):
            inner = (*flags, kind)
            for part in node.parts:
                if part.kind in ("list", "command", "pipeline", "compound"):
                    self.walk(part, masked=masked, flags=inner)
        elif kind == "function":
            # A definition runs nothing by itself.
            return
        else:
            self.out.append(self._verbatim(node, flags=(*flags, f"unsupported:{kind}")))

    def _verbatim(self, node: Any, *, flags: tuple[str, ...]) -> SimpleCommand:
        text = self.source[node.pos[0]:node.pos[1]]
        return SimpleCommand(
            argv=(), assignments=(), redirects=(), text=text, cwd=self.state.cwd,
            env=self.state.env, activated=self.state.activated,
            seq=self.record.seq, exit=self._exit(False), parsed=False, flags=flags,
            index=len(self.out),
        )

    def command(self, node: Any, *, masked: bool, flags: tuple[str, ...]) -> None:
        assignments: list[str] = []
        words: list[str] = []
        redirects: list[tuple[str, str]] = []
        substitutions = 0
        for part in node.parts:
            if part.kind == "assignment":
                assignments.append(part.word)
            elif part.kind == "word":
                if any(p.kind == "commandsubstitution" for p in getattr(part, "parts", [])):
                    substitutions += 1
                words.append(part.word)
            elif part.kind == "redirect":
                target = part.output
                tgt = target.word if hasattr(target, "word") else str(target)
                redirects.append((str(part.type), tgt))
        self.emit(assignments, words, redirects, node.pos[0], node.pos[1], masked=masked,
                  flags=(*flags, *("command-substitution",) * substitutions))

    def emit(self, assignment_words: Sequence[str], words: Sequence[str],
             redirects: Sequence[tuple[str, str]], start: int, end: int, *, masked: bool,
             flags: tuple[str, ...]) -> None:
        """One simple command from its words (after quote removal) in the current state."""
        st = self.state
        assignments: tuple[tuple[str, str], ...] = ()
        if assignment_words:
            exported = st.exported
            assignments = tuple((name, expand(value, exported)) for name, _, value in
                                (w.partition("=") for w in assignment_words))
        if not self.expands:  # no ``$`` anywhere in the line: every word as written
            argv = tuple(words)
        else:
            scope = {**st.exported, **dict(assignments)} if assignments else st.exported
            argv = tuple([expand(w, scope) for w in words])
        activated = st.activated
        if argv and argv[0].endswith(("conda", "mamba")) and argv[1:2] == ("run",):
            argv, activated = _conda_run(argv, st)
        # Made as the tuple it is, every field given in order: once per command of a long
        # log (the named tuple's own __new__ is one Python call more).
        cmd = _new_tuple(SimpleCommand, (
            argv, assignments, tuple(redirects), self.source[start:end], st.cwd, st.env,
            activated, self.record.seq, self._exit(masked), True, flags, masked,
            len(self.out)))
        self.out.append(cmd)
        if not argv or argv[0] in _STATEFUL or argv[0].endswith(_CONDA_PATHS):
            self._apply(cmd)
            st.env = tuple(sorted(st.exported.items()))

    def _apply(self, cmd: SimpleCommand) -> None:
        """Update the shell state the way bash would after ``cmd``."""
        st = self.state
        if not cmd.argv:
            # Bare ``X=1`` sets a shell variable: visible to expansions, not exported.
            for k, v in cmd.assignments:
                st.exported.setdefault(k, v)
            return
        name, args = cmd.argv[0], cmd.argv[1:]
        if name == "cd":
            target = args[0] if args else "~"
            st.cwd = _resolve(st.cwd, target, st.exported)
        elif name in ("export", "declare", "typeset") and args:
            for arg in args:
                if arg.startswith("-"):
                    continue
                k, eq, v = arg.partition("=")
                if eq:
                    st.exported[k] = v
        elif name == "unset":
            for arg in args:
                st.exported.pop(arg, None)
        elif name in ("source", ".") and args[:1] == ("activate",):
            _conda_activate(st, conda.UNKNOWN_ROOT, args[1] if len(args) > 1 else "base")
        elif name in ("source", ".") and args and args[0].endswith("/bin/activate"):
            bindir = posixpath.dirname(_resolve(st.cwd, args[0], st.exported))
            if len(args) > 1:  # conda's activate script: ``source <root>/bin/activate X``
                _conda_activate(st, posixpath.dirname(bindir), args[1])
            else:
                st.activated = bindir
                st.exported["VIRTUAL_ENV"] = posixpath.dirname(bindir)
        elif name == "deactivate":
            st.activated = None
            st.exported.pop("VIRTUAL_ENV", None)
        elif posixpath.basename(name) in conda.TOOLS and args[:1] == ("activate",):
            opts, words = conda.split_args(args[1:])
            root = conda.root_of(_resolve(st.cwd, name, st.exported) if "/" in name else name,
                                 opts, st.exported)
            _conda_activate(st, root, words[0] if words else "base")
        elif posixpath.basename(name) in conda.TOOLS and args[:1] == ("deactivate",):
            st.activated = None
            st.exported.pop("CONDA_DEFAULT_ENV", None)


def _conda_activate(st: _ShellState, root: str, name: str) -> None:
    """``conda activate name``: the environment's ``bin`` is what ``python`` and ``pip``
    name from now on in this shell (:mod:`synth.distill.conda`)."""
    st.activated = conda.env_prefix(root, name) + "/bin"
    st.exported["CONDA_DEFAULT_ENV"] = name


def _conda_run(argv: tuple[str, ...], st: _ShellState) -> tuple[tuple[str, ...], str | None]:
    """``conda run [-n X | -p P] [options] CMD…`` as the command it runs, and the ``bin`` of
    the environment it runs in (``-p``, ``-n``, else the active one, else ``base``)."""
    prog = argv[0]
    if posixpath.basename(prog) not in conda.TOOLS:
        return argv, st.activated
    opts, inner = conda.run_split(argv[2:])
    if not inner:
        return argv, st.activated
    prefix = conda.option(opts, "-p", "--prefix")
    name = conda.option(opts, "-n", "--name")
    if prefix:
        return inner, _resolve(st.cwd, prefix, st.exported) + "/bin"
    if name is None and st.activated:
        return inner, st.activated
    root = conda.root_of(_resolve(st.cwd, prog, st.exported) if "/" in prog else prog,
                         opts, st.exported)
    return inner, conda.env_prefix(root, name or "base") + "/bin"


@functools.lru_cache(maxsize=4096)
def _fast_parse(source: str) -> tuple[FastCommand, ...] | None:
    return fast_parse(source)


#: A here-document's quoted delimiter (``<<'JSON'``, ``<<-"EOF"``), which bashlex takes with
#: its quotes and then never finds.
_QUOTED_HEREDOC = re.compile(r"<<(-?)(['\"])([A-Za-z_][A-Za-z0-9_]*)\2")


@functools.lru_cache(maxsize=4096)
def _parse(source: str) -> tuple[Any, ...]:
    """bashlex trees of a line; cached, since agents repeat lines (the walker only reads).
    A quoted here-document delimiter is read unquoted, in the same number of characters
    (``<<'JSON'`` as ``<<  JSON``), so that every position still points into ``source``;
    the quotes only stop expansions in the document, which is no command of the line."""
    return tuple(bashlex.parse(_QUOTED_HEREDOC.sub(
        lambda m: f"<<{m[1]}  {m[3]}", source)))


def parse_line(record: AuditRecord, *, fast: bool = True) -> list[SimpleCommand]:
    """Split one audited command line into simple commands (exit statuses not yet set).

    A plain line takes the fast path (:mod:`synth.distill.fastshell`), which gives the
    same commands bashlex would; ``fast=False`` always asks bashlex (for the test that
    checks exactly that)."""
    return _parse_line(record, fast=fast)[0]


def _parse_line(record: AuditRecord, *, fast: bool = True, exits: str | None = None,
                activated: str | None = None) -> tuple[list[SimpleCommand], str | None]:
    """The record's commands, and the environment activated after them: ``activated`` is
    the one active before (an interactive shell's earlier statement activated it)."""
    source = record.command
    state = _ShellState(record.cwd or "/")
    state.activated = activated
    walker = _Walker(source, record, state, exits)
    plain = _fast_parse(source) if fast else None
    if plain is not None:
        for c in plain:
            walker.emit(c.assignments, c.words, c.redirects, c.start, c.end, masked=c.masked,
                        flags=())
        return walker.out, state.activated
    try:
        trees = _parse(source)
    except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError,
            TypeError, ValueError, AssertionError):
        return [SimpleCommand(
            argv=(), assignments=(), redirects=(), text=source, cwd=state.cwd, env=(),
            activated=activated, seq=record.seq, exit=record.exit, parsed=False,
            flags=("unparsed",),
        )], activated
    for tree in trees:
        walker.walk(tree)
    return walker.out, state.activated


def _with_exits(
    cmds: list[SimpleCommand], record: AuditRecord, hooks: Sequence[AuditRecord]
) -> tuple[list[SimpleCommand], list[AuditRecord]]:
    """Exit statuses from hook records (matched in order), else from the whole line.

    Returns the commands and the hook records that matched none of them (commands run by a
    script the line called, for example).
    """
    if not hooks:  # simple_commands sets these as it parses: _parse_line(exits="line")
        if record.exit == 0 or record.exit is None:
            return [c._replace(exit=record.exit if not c.masked else None) for c in cmds], []
        # The line failed and nothing says which command did: treat every command as
        # failed, so nothing from a failed line is replayed (final state still decides).
        return [c._replace(exit=record.exit) for c in cmds], []
    used: set[int] = set()
    pos = 0
    out: list[SimpleCommand] = []
    for c in cmds:
        want = _normalise(c.text)
        found = None
        for j in range(pos, len(hooks)):
            if j not in used and _hook_matches(hooks[j].command, want):
                found = j
                break
        if found is None:
            out.append(c._replace(exit=None, flags=(*c.flags, "not-run")) if c.parsed
                       else c._replace(exit=record.exit))
            continue
        used.add(found)
        pos = found + 1
        out.append(c._replace(exit=hooks[found].exit))
    leftovers = [h for j, h in enumerate(hooks) if j not in used]
    return out, leftovers


def _hook_matches(command: str, want: str) -> bool:
    """The hook's text of a command is the parsed command ``want`` (normalised): the hook
    prints a command with a here-document with its body, which the parsed one has not."""
    if _normalise(command) == want:
        return True
    return "<<" in command and _normalise(command.split("\n", 1)[0]) == want


def _skipped(records: Sequence[AuditRecord]) -> set[int]:
    """Records that repeat another one or are not the agent's setup.

    A ``synth`` record of a replayed statement (``bash -c X``) is the same command as the
    ``bash-c`` record the hook wrote for it; a ``synth`` record of another phase is synth's
    own work; a ``bash-c`` record nested in another command (depth > 0) is part of that
    command. Hook records of a skipped record go with it.
    """
    skip: set[int] = set()
    # By seq: a replayed log has a synth and a bash-c record per statement, a few seqs
    # apart; comparing every pair would be quadratic in the log's length.
    bash_c = {r.seq: r for r in records if r.source == "bash-c"}
    for r in records:
        if r.source == "synth":
            if r.phase not in (None, "agent"):
                skip.add(r.seq)
                continue
            for seq in range(r.seq - 3, r.seq + 4):
                b = bash_c.get(seq)
                if b is None or b.command != r.command:
                    continue
                if (r.start is None or b.start is None or r.end is None
                        or r.start - 1 <= b.start <= r.end + 1):
                    skip.add(r.seq)
                    break
        elif r.source == "bash-c" and r.depth > 0:
            skip.add(r.seq)
    for r in records:
        if r.source == "bash-hook" and r.parent_seq in skip:
            skip.add(r.seq)
    return skip


def simple_commands(records: Sequence[AuditRecord]) -> Iterator[SimpleCommand]:
    """Every simple command of an audit log, in the order they ran.

    ``bash-c`` and ``synth`` records are the units of work; a ``bash-hook`` record that
    belongs to one supplies the exit status of its simple command, and one without a known
    parent (an interactive shell, a script) is a unit of its own. ``exec-trace`` records
    describe the same commands again from below and are not distilled.
    """
    skip = _skipped(records)
    records = [r for r in records if r.seq not in skip]
    tops = {r.seq for r in records if r.source in ("bash-c", "synth")}
    hooks_of: dict[int, list[AuditRecord]] = {}
    for r in records:
        if r.source == "bash-hook" and r.parent_seq in tops:
            hooks_of.setdefault(r.parent_seq, []).append(r)
    #: The environment each interactive shell or script (its pid, its parent) activated.
    activated: dict[tuple[int | None, int | None], str | None] = {}
    for r in records:
        if r.source == "exec-trace":
            continue
        if r.source == "bash-hook" and r.parent_seq in tops:
            continue
        if r.source == "bash-hook":
            # One hook record is one simple command already; its exit status is its own.
            # Its shell's earlier statements are other records: their activation holds.
            shell = (r.pid, r.parent_seq)
            cmds, now = _parse_line(r, exits="own", activated=activated.get(shell))
            if r.pid is not None:
                activated[shell] = now
            yield from cmds
            continue
        hooks = hooks_of.get(r.seq)
        if not hooks:
            yield from _parse_line(r, exits="line")[0]
            continue
        with_exits, leftovers = _with_exits(parse_line(r), r, hooks)
        yield from with_exits
        index = len(with_exits)
        for h in leftovers:
            for c in parse_line(h):
                yield c._replace(exit=h.exit, seq=r.seq, index=index,
                                 flags=(*c.flags, "nested"))
                index += 1
