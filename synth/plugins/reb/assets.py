"""The assets step of a task imported from REB: what REB's ``prepare_assets.sh`` does
(download a small model and data set into ``benchmark_assets/``, record
``build_output/prepare/results.json``), run before the probes.

REB runs ``prepare_assets.sh`` in the agent's container, online, before its CPU and GPU
stages, which read what it left. synth's verification containers have no network, so the
step runs in a container of its own from the same image: online by default, or offline
from a cache folder (REB's ``benchmark_assets/cache`` layout) copied in from the host,
read-only. REB's scripts (``<task>/reb/benchmark_scripts``) are copied in beside the
repository as ``benchmark_scripts/``, where REB puts them. What the step leaves
(``benchmark_scripts/``, ``benchmark_assets/``, ``build_output/prepare/``) travels as tar
streams through a host temporary folder, never unpacked on the host, into each container
the probes run in (:func:`install_assets`).

:func:`plan_assets` decides (pure); :func:`prepare_assets` runs the plan on an image;
:func:`install_assets` puts the result in a verification container.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

from synth.engine.base import ContainerSpec, Engine, EngineContainer, Mount
from synth.errors import EngineError, UsageError
from synth.plugins.reb.importer import ASSETS_SCRIPT
from synth.plugins.reb.profile import task_profile
from synth.plugins.reb.session import REPORT_PATH

SCRIPTS_MOUNT = "/synth/reb-scripts"
CACHE_MOUNT = "/synth/assets-cache"
#: What the step leaves in the repository folder, for the probes.
OUTPUTS = ("benchmark_scripts", "benchmark_assets", "build_output/prepare")


@dataclass(frozen=True)
class AssetsPlan:
    scripts_dir: Path
    workdir: str = "/workspace"
    network: bool = True
    cache_dir: Path | None = None
    claims: Path | None = None
    timeout: int = 3600

    def command(self) -> list[str]:
        w = shlex.quote(self.workdir)
        lines = ["set -u", f"mkdir -p {w}/benchmark_scripts {w}/benchmark_assets/cache",
                 f"cp -a {SCRIPTS_MOUNT}/. {w}/benchmark_scripts/"]
        if self.cache_dir is not None:
            lines.append(f"cp -a {CACHE_MOUNT}/. {w}/benchmark_assets/cache/")
        lines += [f"cd {w}", f"bash benchmark_scripts/{ASSETS_SCRIPT}"]
        return ["bash", "-c", "\n".join(lines)]

    def mounts(self) -> list[Mount]:
        mounts = [Mount(self.scripts_dir, SCRIPTS_MOUNT)]
        if self.cache_dir is not None:
            mounts.append(Mount(self.cache_dir, CACHE_MOUNT))
        if self.claims is not None:
            mounts.append(Mount(self.claims, REPORT_PATH))
        return mounts

    def describe(self) -> str:
        where = f"from the cache {self.cache_dir}" if self.cache_dir else ""
        net = "with network" if self.network else "without network"
        return " ".join(filter(None, [f"REB {ASSETS_SCRIPT}", net, where]))


def plan_assets(task_dir: Path | None, *, workdir: str = "/workspace",
                cache_dir: Path | None = None, offline: bool = False,
                claims: Path | None = None) -> AssetsPlan | None:
    """The assets step of a task, or None where it has none (not imported from REB, or
    REB has no ``prepare_assets.sh`` for it). ``offline`` needs ``cache_dir``."""
    if task_profile(task_dir) != "reb" or task_dir is None:
        return None
    scripts = task_dir / "reb" / "benchmark_scripts"
    if not (scripts / ASSETS_SCRIPT).is_file():
        return None
    if cache_dir is not None and not cache_dir.is_dir():
        raise UsageError(f"assets cache {cache_dir}: not a folder.")
    if offline and cache_dir is None:
        raise UsageError("An offline assets step needs a cache folder.",
                         hint="Give the folder REB's benchmark_assets/cache was saved to.")
    if claims is not None and not claims.is_file():
        claims = None
    return AssetsPlan(scripts.resolve(), workdir, not offline,
                      cache_dir.resolve() if cache_dir else None,
                      claims.resolve() if claims else None)


@dataclass(frozen=True)
class PreparedAssets:
    exit_code: int
    seconds: float
    output_tail: str
    #: (folder in the container, tar stream of one of its entries), for install_assets.
    archives: tuple[tuple[str, Path], ...]

    def to_json(self) -> dict[str, object]:
        return {"exit_code": self.exit_code, "seconds": round(self.seconds, 2),
                "output_tail": self.output_tail,
                "installed": [f"{d}/{p.name.removesuffix('.tar')}" for d, p in self.archives]}


@contextmanager
def prepare_assets(engine: Engine, image: str, plan: AssetsPlan) -> Iterator[PreparedAssets]:
    """Run the step in a container from ``image``; the result lives while the context does."""
    start = time.monotonic()
    spec = ContainerSpec(image=image, mounts=plan.mounts(), network=plan.network,
                         workdir=plan.workdir, labels={"synth.kind": "reb-assets"})
    with TemporaryDirectory(prefix="synth-reb-assets-") as tmp, engine.container(spec) as c:
        res = c.exec(plan.command(), timeout=plan.timeout)
        archives = []
        for i, rel in enumerate(OUTPUTS):
            parent, _, name = f"{plan.workdir}/{rel}".rpartition("/")
            dest = Path(tmp) / f"{i}-{name}.tar"
            if c.save_archive(f"{parent}/{name}", dest):
                archives.append((parent, dest))
        tail = "\n".join((res.stdout + res.stderr).splitlines()[-40:])
        yield PreparedAssets(res.exit_code, time.monotonic() - start, tail, tuple(archives))


def install_assets(c: EngineContainer, assets: PreparedAssets) -> None:
    """Put what the assets step left into a container the probes will run in."""
    for parent, tar in assets.archives:
        c.exec(["mkdir", "-p", parent])
        with tar.open("rb") as fh:
            try:
                c.put_archive(parent, fh)
            except EngineError as exc:
                raise EngineError(f"Installing the REB assets into {c.description}:{parent} "
                                  "failed.") from exc


@contextmanager
def assets_for(engine: Engine, image: str, task_dir: Path | None, *,
               workdir: str = "/workspace", cache_dir: Path | None = None,
               offline: bool = False, claims: Path | None = None,
               say: Callable[[str], None] | None = None,
               ) -> Iterator[Callable[[EngineContainer], None] | None]:
    """For verify: the assets step of ``task_dir`` run once on ``image``, yielding the
    function that installs its result into a probe container (None: no assets step).

    ``with assets_for(engine, image, task_dir) as install:`` then, for the container the
    pyramid runs in, ``if install: install(c)``."""
    plan = plan_assets(task_dir, workdir=workdir, cache_dir=cache_dir, offline=offline,
                       claims=claims)
    if plan is None:
        yield None
        return
    if say is not None:
        say(f"Assets: {plan.describe()} on {image}")
    with prepare_assets(engine, image, plan) as assets:
        if say is not None:
            say(f"Assets: exit {assets.exit_code} in {assets.seconds:.1f}s")
        yield lambda c: install_assets(c, assets)
