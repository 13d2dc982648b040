"""Shared fixtures.

Docker tests are marked ``docker``. Without an engine they skip with the reason, unless
``SYNTH_REQUIRE_DOCKER=1`` (CI), where a missing engine fails them instead.
Expensive things (base image, task runs) are made once per test session and shared.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from compiled_core import compile_list, module_name
from suite_build_cache import SuiteCache, may_prune

REPO_ROOT = Path(__file__).resolve().parent.parent
TASKS_DIR = REPO_ROOT / "tasks"
BASE_IMAGE = "synth/python:bookworm"
HOST_CA_BUNDLE = Path(os.environ.get("SYNTH_CA_BUNDLE", "/etc/ssl/certs/ca-certificates.crt"))
HOST_WHEELHOUSE = Path(os.environ.get("SYNTH_WHEELHOUSE", "/opt/wheels"))


def pytest_configure(config: pytest.Config) -> None:
    # ``./dev test`` runs the unit tests a second time on the built wheel, whose
    # distillation core mypyc compiled (hatch_build.py): SYNTH_TEST_COMPILED names the
    # folder it is unpacked in, and every module the build compiles must be loaded from
    # there as an extension, or the pass would test the source a second time.
    where = os.environ.get("SYNTH_TEST_COMPILED")
    if where:
        problems = compiled_core_problems(Path(where))
        if problems:
            raise pytest.UsageError("SYNTH_TEST_COMPILED: " + "; ".join(problems))


def compiled_core_problems(where: Path) -> list[str]:
    """What is not as the compiled pass needs: synth from ``where``, each module of the
    build's ``compile`` list an extension module."""
    import importlib
    import importlib.machinery

    import synth

    if Path(synth.__file__).parent != where / "synth":
        return [f"synth is imported from {synth.__file__}, not from {where}"]
    problems = []
    for name in map(module_name, compile_list()):
        module = importlib.import_module(name)
        if not isinstance(module.__loader__, importlib.machinery.ExtensionFileLoader):
            problems.append(f"{name} is not compiled ({module.__file__})")
    return problems


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath) and "docker" not in item.keywords:
            item.add_marker(pytest.mark.docker)
    # ``./dev test`` runs two parts at once: the tests that share the session's task runs
    # (``task_run``, and ``verified`` on top of it: they must share one process to share
    # its runs and rebuilds), and all the others; then, alone, the tests that need the
    # engine to themselves (BuildKit's cache records of concurrent builds are not told apart).
    part = os.environ.get("SYNTH_TEST_PART")
    if part in ("shared-runs", "rest", "alone"):
        def part_of(item: pytest.Item) -> str:
            if item.get_closest_marker("engine_alone"):
                return "alone"
            return "shared-runs" if "task_run" in getattr(item, "fixturenames", ()) else "rest"

        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            (keep if part_of(item) == part else drop).append(item)
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's SYNTH_* settings must not change what the tests see.
    for name in list(os.environ):
        if name.startswith("SYNTH_") and name not in (
            "SYNTH_REQUIRE_DOCKER", "SYNTH_CA_BUNDLE", "SYNTH_WHEELHOUSE", "SYNTH_DOCKER_CLI",
            "SYNTH_PYRIGHT", "SYNTH_TEST_COMPILED",
        ):
            monkeypatch.delenv(name)


#: The session's pruner of its own build cache, made at the first Docker test; None where
#: there is no BuildKit CLI (then no build of ours left cache either).
_suite_cache: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _prune_own_build_cache(request: pytest.FixtureRequest,
                           tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """After each Docker test, prune the BuildKit cache the session's builds recorded in
    their ledgers (tests/suite_build_cache.py): a torch rebuild leaves about a GB of it."""
    yield
    if "docker" not in request.keywords or not may_prune():
        return
    if "pruner" not in _suite_cache:
        from synth.engine.build import find_build_cli
        from synth.errors import SynthError

        try:
            cli = find_build_cli().path
        except SynthError:
            _suite_cache["pruner"] = None
            return
        _suite_cache["pruner"] = SuiteCache(tmp_path_factory.getbasetemp(), cli)
    if pruner := _suite_cache["pruner"]:
        pruner.prune()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if pruner := _suite_cache.get("pruner"):
        terminalreporter.write_line(
            f"build cache pruned after the Docker tests: {pruner.records} record(s), "
            f"{pruner.size / 1e9:.1f} GB")


@pytest.fixture(autouse=True)
def _fresh_console_mode() -> Iterator[None]:
    # The CLI's main() sets console.mode (--json, --debug) for the process; tests that run
    # it in-process must not leave it set for the next test.
    from synth.ui import console
    saved = dict(console.mode)
    yield
    console.mode.clear()
    console.mode.update(saved)


@pytest.fixture(scope="session")
def engine() -> Iterator[object]:
    """A connected DockerEngine, or a skip (a failure under SYNTH_REQUIRE_DOCKER=1)."""
    from synth.engine.docker import DockerEngine
    from synth.errors import EngineUnavailableError

    try:
        eng = DockerEngine.connect(timeout=30)
    except EngineUnavailableError as exc:
        if os.environ.get("SYNTH_REQUIRE_DOCKER") == "1":
            pytest.fail(f"SYNTH_REQUIRE_DOCKER=1 but no engine: {exc.message}")
        pytest.skip(f"no Docker engine: {exc.message}")
    yield eng


@pytest.fixture(scope="session")
def base_image(engine: object) -> str:
    """The synth/python:bookworm base, made with debootstrap if missing."""
    from synth.engine.base_images import ensure_base_image

    ensure_base_image(engine, BASE_IMAGE)  # type: ignore[arg-type]
    return BASE_IMAGE


@pytest.fixture(scope="session")
def ca_bundle() -> Path | None:
    """The host's CA bundle (the proxy's CA lives in it) or None where there is none."""
    return HOST_CA_BUNDLE if HOST_CA_BUNDLE.is_file() else None


@pytest.fixture(scope="session")
def wheelhouse() -> Path | None:
    return HOST_WHEELHOUSE if HOST_WHEELHOUSE.is_dir() else None


def _capture_errors(run_dir: Path) -> str:
    from synth.errors import SynthError
    from synth.formats.store import RunDir

    try:
        errors = RunDir(run_dir).run_record().capture_errors
    except SynthError as exc:
        return exc.message
    return "; ".join(errors) or "no capture error recorded"


def _free_disk(path: Path) -> str:
    import shutil

    return f"{shutil.disk_usage(path).free / 1e9:.1f} GB free on its disk"


@pytest.fixture(scope="session")
def task_run(
    engine: object, base_image: str, ca_bundle: Path | None, wheelhouse: Path | None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[str, str], Path]]:
    """``task_run(task_name, transcript) -> run dir``: ``tasks/<task>/agents/<transcript>``
    replayed once per test session (memoised), with the CA bundle and the wheelhouse;
    ``transcript`` ``"auto"`` runs synth's own setup agent (``--agent auto``) instead.
    A task with a ``[conda_channel]`` has it made and served for each transcript until the
    session ends (the rebuilds fetch from it too). The live images these runs commit are
    removed at the end of the session."""
    from contextlib import ExitStack

    from synth.config import Settings
    from synth.formats.task import load_task
    from synth.record.agents import ReplayAgent
    from synth.record.auto.agent import AutoAgent
    from synth.record.runner import RunOptions, run_session
    from synth.record.task_channel import served_transcript

    settings = Settings.load(artifacts_dir=tmp_path_factory.mktemp("task-runs"),
                             ca_bundle=ca_bundle, wheelhouse=wheelhouse)
    done: dict[tuple[str, str], Path] = {}
    images: list[str] = []
    served = ExitStack()

    def run(task_name: str, transcript: str) -> Path:
        key = (task_name, transcript)
        if key not in done:
            task = load_task(TASKS_DIR / task_name)
            agent = AutoAgent() if transcript == "auto" else ReplayAgent(served.enter_context(
                served_transcript(task, task.agents_dir / transcript,
                                  engine,  # type: ignore[arg-type]
                                  tmp_path_factory.mktemp(f"{task_name}-{transcript}"))))
            result = run_session(
                RunOptions(task=task, agent=agent, timeout=1800),
                settings, engine, say=lambda _msg: None,  # type: ignore[arg-type]
            )
            if not result.live_image:
                # Every test on this run needs its live image: name why there is none
                # (the run's capture errors, the disk's free space) instead of each test
                # failing later on a missing image.
                pytest.fail(f"{task_name}/{transcript}: the run ({result.status}) committed "
                            f"no live image: {_capture_errors(result.run_dir)}; "
                            f"{_free_disk(result.run_dir)}")
            images.append(result.live_image)
            done[key] = result.run_dir
        return done[key]

    with served:
        yield run
    for ref in images:
        engine.remove_image(ref)  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def marked_ca(
    ca_bundle: Path | None, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path | None, bytes]:
    """The host CA bundle plus a unique comment line, used for every artifact build: if the
    bundle ever lands in a layer, the marker does too (PEM readers skip text between
    certificates). ``(None, marker)`` where the host has no bundle."""
    import secrets

    marker = b"# synth-ca-marker-" + secrets.token_hex(24).encode()
    if ca_bundle is None:
        return None, marker
    path = tmp_path_factory.mktemp("ca") / "ca-bundle.crt"
    path.write_bytes(ca_bundle.read_bytes() + b"\n" + marker + b"\n")
    return path, marker


@pytest.fixture(scope="session")
def verified(
    engine: object, task_run: Callable[[str, str], Path], marked_ca: tuple[Path | None, bytes],
    wheelhouse: Path | None, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Any]]:
    """``verified(task, transcript, rebuild=True) -> VerifyOutcome``, memoised per session.

    With ``rebuild`` the run is exported and built from scratch (no cache, the marked CA as
    the BuildKit secret) exactly once; export, verify and diff tests all use that artifact
    (``outcome.document["target"]["artifact_dir"]``) and image
    (``outcome.document["build"]["image"]``). The images are removed at session end.
    """
    from synth.config import Settings
    from synth.verify.command import VerifyOptions, verify

    done: dict[tuple[str, str, bool], Any] = {}
    images: list[str] = []

    def get(task: str, transcript: str, rebuild: bool = True) -> Any:
        key = (task, transcript, rebuild)
        if key not in done:
            run_dir = task_run(task, transcript)
            settings = Settings.load(artifacts_dir=run_dir.parents[2], ca_bundle=marked_ca[0],
                                     wheelhouse=wheelhouse)
            out = tmp_path_factory.mktemp(f"verify-{task}-{transcript}")
            outcome = verify(VerifyOptions(target=str(run_dir), rebuild=rebuild, out_dir=out),
                             settings, engine, say=lambda _m: None)
            if outcome.document.get("build"):
                images.append(outcome.document["build"]["image"])
            done[key] = outcome
        return done[key]

    yield get
    for ref in images:
        engine.remove_image(ref)  # type: ignore[attr-defined]
