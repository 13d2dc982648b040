"""The command line's frame: the typer app and its sub-apps, the options every command
shares, ``--json``/``--debug`` anywhere on the line, and :func:`main`, which turns every
``SynthError`` into its message, hint and exit code. The commands live beside it, one
module per area; each builds one options object and calls one function."""

from __future__ import annotations

import importlib.machinery
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer

from synth import __version__
from synth.config import Settings
from synth.engine.base import Engine, NoEngine

if TYPE_CHECKING:
    from synth.engine.fingerprint import ImageProbe
from synth.errors import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    EngineUnavailableError,
    SynthError,
    UsageError,
    error_kinds,
    exit_codes,
)
from synth.formats.limits import Limits, from_options
from synth.ui import console


def _epilog() -> str:
    outcomes = ". ".join(f"{code} = {meaning}" for code, meaning in exit_codes()
                         if code < SynthError.exit_code or code == EXIT_INTERRUPTED)
    kinds = ", ".join(f"{k.exit_code} = {k.__name__}" for k in error_kinds())
    return ("--json and --debug are accepted anywhere on the command line.\n\n"
            f"Exit codes: {outcomes}.\n\nErrors (README.md, synth/errors.py): {kinds}.")


app = typer.Typer(
    help="Audit an agent's setup of a research repo, distill it into a rebuildable artifact, "
    "and prove the artifact research-ready.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    epilog=_epilog(),
)
base_app = typer.Typer(help="Base images made locally (debootstrap), for air-gapped sites.")
task_app = typer.Typer(help="Task files: tasks/<name>/task.toml.")
app.add_typer(base_app, name="base")
app.add_typer(task_app, name="task")


JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print machine-readable JSON on stdout (errors too).")]
CaBundleOpt = Annotated[
    Optional[Path],  # noqa: UP045 - typer needs Optional here
    typer.Option("--ca-bundle", help="CA bundle for a TLS-intercepting proxy "
                 "(env SYNTH_CA_BUNDLE). Mounted at run time, a BuildKit secret at build "
                 "time; never stored in an image."),
]
ArtifactsOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--artifacts", help="Where runs and exports go (env SYNTH_ARTIFACTS).",
                 envvar="SYNTH_ARTIFACTS"),
]
NoDiskCheckOpt = Annotated[bool, typer.Option(
    "--no-disk-check", help="Skip the check of free disk space before the work starts (env "
    "SYNTH_DISK_CHECK=0).")]


def settings_of(artifacts: Path | None, ca_bundle: Path | None, wheelhouse: Path | None,
                no_disk_check: bool) -> Settings:
    """The settings of a command that takes these four options."""
    return Settings.load(artifacts_dir=artifacts, ca_bundle=ca_bundle, wheelhouse=wheelhouse,
                         disk_check=not no_disk_check)

MemoryOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--memory", help="Memory limit of the containers, no swap beyond it (e.g. 8g; default "
    "80% of this host's RAM, or the task's limits table).")]
PidsOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--pids", help="Process limit of the containers (default 16384, or the task's).")]
CpusOpt = Annotated[Optional[float], typer.Option(  # noqa: UP045
    "--cpus", help="CPU limit of the containers (default all of this host's).")]
DiskOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--disk", help="Writable-layer limit (e.g. 20g), where the storage driver can enforce "
    "it (run.json says whether it did).")]


def limits_of(memory: str | None, pids: int | None, cpus: float | None,
              disk: str | None) -> Limits:
    """The command line's limits (None where not given), or a located usage error."""
    try:
        return from_options(memory, pids, cpus, disk)
    except ValueError as exc:
        raise UsageError(f"--memory/--pids/--cpus/--disk: {exc}.") from exc


def prune_older_runs(engine: Engine, settings: Settings) -> None:
    """After a run or a rebuild: each task's live and rebuilt images beyond the latest
    ``settings.keep_runs`` (``SYNTH_KEEP_RUNS``, default 5) are removed, and the runs whose
    live image went say so in run.json. A failure to prune is a warning, never the
    command's failure."""
    from synth.record.rundir import mark_pruned

    if settings.keep_runs is None:
        return
    try:
        removed = engine.prune_runs(settings.keep_runs, scope=str(settings.artifacts_dir))
        mark_pruned(settings, removed)
    except SynthError as exc:
        console.warn(f"older run images were not pruned: {exc.message}")
        return
    for line in removed:
        console.say(f"pruned {line}: older than this task's latest {settings.keep_runs} "
                    "(SYNTH_KEEP_RUNS)")


def open_engine(timeout: int = 120, *, required: bool = True) -> Engine:
    """The one engine handle of a command, opened when the command runs and passed down to
    the function it calls. With ``required=False`` (export, diff, runs, doctor, verify) a
    command gets a :class:`~synth.engine.base.NoEngine` where none answers, whose every use
    raises the connection's error: it works as far as it can without one, and a usage error
    or a bad input file is said before a missing engine. ``timeout``: seconds one engine
    call may take (the Docker client's read timeout)."""
    # docker-py loads here, only for the commands that talk to the engine: `synth --help`,
    # `task check` and `export --plan` never load it (tests/unit/test_structure.py).
    from synth.engine.docker import DockerEngine

    try:
        return DockerEngine.connect(timeout=timeout)
    except EngineUnavailableError as exc:
        if required:
            raise
        return NoEngine(exc)


def open_image_probe(timeout: int) -> ImageProbe:
    """What ``synth diff`` asks of images (their inspection and the fingerprint probe), on
    the engine :func:`open_engine` opens (none required): the one place the command line
    reaches the engine, so the compare stage stays pure."""
    from synth.engine.fingerprint import ImageProbe

    return ImageProbe(open_engine(timeout, required=False))


def _print_version(value: bool) -> None:
    if value:
        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    # main() takes --debug and --json off the command line wherever they are; these two
    # options only document them.
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print machine-readable JSON on stdout (errors too).")] = False,
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print synth's version and exit.")] = False,
) -> None:
    """The options every command takes."""


def core_build() -> str:
    """How this install runs the distillation core: ``compiled`` (a built wheel: mypyc
    compiled it, hatch_build.py) or ``source`` (a checkout, an editable install, a wheel
    built with SYNTH_PURE_PYTHON=1). Both give the same files; the compiled one is faster
    on long audit logs (docs/benchmarks.md)."""
    from synth.distill import shell

    compiled = isinstance(shell.__loader__, importlib.machinery.ExtensionFileLoader)
    return "compiled" if compiled else "source"


@app.command()
def version(json_out: JsonOpt = False) -> None:
    """Print synth's version (with --json: its Python, and whether its core is compiled)."""
    if json_out:
        console.print_json({"version": __version__, "python": sys.version.split()[0],
                            "core": core_build()})
    else:
        typer.echo(__version__)


runs_app = typer.Typer(help="Recorded agent sessions under <artifacts>/runs/.")
app.add_typer(runs_app, name="runs")


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Let `finally` blocks remove containers, exactly as for Ctrl-C.
    raise KeyboardInterrupt


def _global_flags(argv: list[str]) -> list[str]:
    """Take --debug and --json from anywhere before `--`: --debug is remembered, --json moves
    to the end, where the (sub)command that is run takes it. Sets console.mode."""
    cut = argv.index("--") if "--" in argv else len(argv)
    head, tail = argv[:cut], argv[cut:]
    console.mode["debug"] = "--debug" in head
    console.mode["json"] = "--json" in head
    head = [a for a in head if a not in ("--debug", "--json")]
    console.mode["command"] = _command_path(head)
    return head + (["--json"] if console.mode["json"] else []) + tail


def _command_path(args: list[str]) -> str:
    """The (sub)command the words of the command line name, e.g. `runs list`."""
    # Tests may stand the click command typer builds in for the app (built once).
    cmd: object = typer.main.get_command(app) if isinstance(app, typer.Typer) else app
    words: list[str] = []
    for arg in args:
        if arg.startswith("-"):
            continue
        sub = getattr(cmd, "commands", {}).get(arg)
        if sub is None:
            break
        words.append(arg)
        cmd = sub
    return " ".join(words)


def _plain_help() -> None:
    """Typer's help shows a type for every option (`--rebuild <bool>`): a flag has none.
    Its usage line writes a required argument `{TASK}`: the convention is `TASK`."""
    from typer.core import TyperArgument, TyperOption

    original = TyperOption.display_type_rich

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag else original(self, ctx)

    def usage_name(self: TyperArgument) -> str:
        name = self.display_name_raw if self.required else f"[{self.display_name_raw}]"
        return name + ("..." if self.nargs != 1 else "")

    setattr(TyperOption, "display_type_rich", display_type_rich)  # noqa: B010
    if hasattr(TyperArgument, "_usage_display_name"):
        setattr(TyperArgument, "_usage_display_name", usage_name)  # noqa: B010


_plain_help()


def _exit_with(exc: SynthError) -> NoReturn:
    if console.mode["debug"]:
        raise exc
    console.print_error(code=exc.exit_code, kind=type(exc).__name__, message=exc.message,
                        hint=exc.hint, fields=exc.fields())
    sys.exit(exc.exit_code)


def main() -> None:
    signal.signal(signal.SIGTERM, _on_sigterm)
    argv = _global_flags(sys.argv[1:])
    try:
        # Without standalone mode click returns a command's exit code instead of exiting.
        code = app(args=argv, standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except SynthError as exc:
        _exit_with(exc)
    except OSError as exc:
        # A write path without its own wrapping still says "disk full" in synth's words.
        from synth.util.disk import from_os_error, is_disk_full

        if not is_disk_full(exc):
            raise
        _exit_with(from_os_error(exc))
    except KeyboardInterrupt:
        console.err.print("interrupted; cleaned up.", markup=False)
        sys.exit(EXIT_INTERRUPTED)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        # Usage errors of the (vendored) click surface here without standalone mode.
        show = getattr(exc, "show", None)
        code = getattr(exc, "exit_code", None)
        if callable(show) and isinstance(code, int):
            if console.mode["json"] and code == EXIT_USAGE:
                console.print_error(code=code, kind="CommandLineError",
                                    message=str(getattr(exc, "message", exc)),
                                    hint="`synth --help` lists the commands and options.")
            else:
                show()
            sys.exit(code)
        raise
