"""Docker implementation of the engine: containers, exec, copy, diff, commit, images.

docker-py talks to the daemon; image builds go through a BuildKit-capable CLI instead
(:mod:`synth.engine.build`) because docker-py only drives the legacy builder.
"""

from __future__ import annotations

import io
import ipaddress
import json
import os
import socket
import tarfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import docker
import docker.errors
import docker.types
from docker.models.containers import Container as DockerContainer

from synth.engine import build_cache
from synth.engine.base import (
    TIMEOUT_EXIT,
    ContainerSpec,
    Engine,
    EngineContainer,
    ExecResult,
    OutputCallback,
    OutputSink,
)
from synth.engine.build import BuildCli, BuildRequest, build_image, find_build_cli
from synth.errors import (
    EngineError,
    EngineUnavailableError,
    GpuRuntimeUnavailableError,
    SynthError,
)
from synth.formats.limits import Limits
from synth.util import retention, safe_tar

#: Every object synth creates carries this label, so ``synth gc`` can find leftovers.
MANAGED_LABEL = "synth.managed"
#: Which process on which host created a container: gc leaves a live owner's containers alone.
OWNER_PID_LABEL = "synth.owner_pid"
OWNER_HOST_LABEL = "synth.owner_host"
#: Images that only live for one operation (probe images, scratch builds).
TEMPORARY_LABEL = "synth.temporary"
#: The artifacts folder a session container, live image or rebuilt image was made for.
ARTIFACTS_LABEL = "synth.artifacts"
#: Seconds one slow engine call may take (committing, diffing, importing or saving a
#: container of many GB on a busy machine): the client's own timeout is for the quick ones.
SLOW_CALL_TIMEOUT = 1800


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


class DockerEngine:
    """A connection to one Docker engine."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self.api = client.api
        self._disk_quota: bool | None = None
        self.address = docker_host()
        #: Containers this handle started (what one export costs: docs/benchmarks.md).
        self.containers_started = 0

    @classmethod
    def connect(cls, timeout: int = 120) -> DockerEngine:
        try:
            client = docker.from_env(version="auto", timeout=timeout)
            client.ping()
        except docker.errors.DockerException as exc:
            raise EngineUnavailableError(
                f"No Docker engine answers at {docker_host()} ({_short(exc)}).",
                engine=docker_host()) from exc
        return cls(client)

    # ----------------------------------------------------------------- facts
    def ping(self) -> None:
        try:
            self.client.ping()
        except docker.errors.DockerException as exc:
            raise EngineUnavailableError(
                f"No Docker engine answers at {docker_host()} ({_short(exc)}).",
                engine=docker_host()) from exc

    def version(self) -> dict[str, Any]:
        return dict(self.client.version())

    def info(self) -> dict[str, Any]:
        return dict(self.client.info())

    def has_gpu_runtime(self) -> bool:
        runtimes = self.info().get("Runtimes") or {}
        return "nvidia" in runtimes

    def host_address(self) -> str:
        config = self.client.networks.get("bridge").attrs["IPAM"]["Config"][0]
        # The engine names the gateway, or leaves it as the subnet's first address.
        return str(config.get("Gateway") or ipaddress.ip_network(config["Subnet"])[1])

    # ------------------------------------------------------------ containers
    def create(self, spec: ContainerSpec) -> Container:
        labels = {
            MANAGED_LABEL: "1",
            OWNER_PID_LABEL: str(os.getpid()),
            OWNER_HOST_LABEL: socket.gethostname(),
            **spec.labels,
        }
        mounts = [
            docker.types.Mount(
                target=m.target, source=str(m.source), type="bind", read_only=m.read_only
            )
            for m in spec.mounts
        ]
        kwargs: dict[str, Any] = {
            "image": spec.image,
            "command": list(spec.command),
            "labels": labels,
            "mounts": mounts,
            "environment": dict(spec.env),
            "working_dir": spec.workdir,
            "name": spec.name,
            "detach": True,
            "tty": spec.tty,
            "stdin_open": spec.tty,
        }
        kwargs.update(self._limit_kwargs(spec.limits))
        if not spec.network:
            kwargs["network_mode"] = "none"
        if spec.gpus:
            kwargs["device_requests"] = [
                docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])
            ]
        try:
            raw = self.client.containers.create(**kwargs)
        except docker.errors.ImageNotFound as exc:
            raise EngineError(f"Image {spec.image} does not exist on this engine.",
                              engine=self.address, operation="create") from exc
        except docker.errors.APIError as exc:
            raise EngineError(f"Cannot create a container from {spec.image}: {_short(exc)}",
                              engine=self.address, operation="create") from exc
        container = Container(self, raw)
        try:
            raw.start()
            self.containers_started += 1
        except docker.errors.APIError as exc:
            container.remove()
            if "could not select device driver" in str(exc):
                raise GpuRuntimeUnavailableError(
                    "No GPU runtime on this engine: it cannot give containers a GPU.",
                    engine=self.address, operation="start") from exc
            raise EngineError(f"Cannot start a container from {spec.image}: {_short(exc)}",
                              engine=self.address, operation="start") from exc
        return container

    def _limit_kwargs(self, limits: Limits) -> dict[str, Any]:
        """docker-py's arguments for ``limits``; memory with no swap beyond it."""
        out: dict[str, Any] = {}
        if limits.memory is not None:
            out["mem_limit"] = out["memswap_limit"] = limits.memory
        if limits.pids is not None:
            out["pids_limit"] = limits.pids
        if limits.cpus is not None:  # more than the host has is all it has
            out["nano_cpus"] = int(min(limits.cpus, os.cpu_count() or 1) * 1e9)
        if limits.disk is not None and self.disk_limits_supported():
            out["storage_opt"] = {"size": str(limits.disk)}
        return out

    def disk_limits_supported(self) -> bool:
        """The storage driver can cap a container's writable layer: overlay2 on xfs (with
        project quotas, which Docker then requires), devicemapper, btrfs or zfs."""
        if self._disk_quota is None:
            info = self.info()
            status = dict(info.get("DriverStatus") or [])
            driver = info.get("Driver")
            self._disk_quota = (driver in ("devicemapper", "btrfs", "zfs") or (
                driver == "overlay2" and status.get("Backing Filesystem") == "xfs"))
        return self._disk_quota

    @contextmanager
    def container(self, spec: ContainerSpec) -> Iterator[Container]:
        """A started container, removed on every way out (errors and Ctrl-C included)."""
        c = self.create(spec)
        try:
            yield c
        finally:
            c.remove()

    def kill_container(self, name: str) -> None:
        """Kill a container's processes by name or id (it stays, stopped); one that is gone
        or not running is left as it is."""
        try:
            self.client.containers.get(name).kill()
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            if "is not running" not in str(exc):
                raise EngineError(f"Cannot stop container {name}: {_short(exc)}",
                                  engine=self.address, operation="kill") from exc

    def managed_containers(self, extra_label: str | None = None) -> list[DockerContainer]:
        filters = [MANAGED_LABEL + "=1"] + ([extra_label] if extra_label else [])
        # docker-py inspects each listed container in turn: one removed meanwhile (another
        # bench cell's clean-up, an auto-removed probe) would raise NotFound here.
        return list(self.client.containers.list(all=True, filters={"label": filters},
                                                ignore_removed=True))

    # ---------------------------------------------------------------- images
    def image_exists(self, ref: str) -> bool:
        try:
            self.client.images.get(ref)
        except docker.errors.ImageNotFound:
            return False
        except docker.errors.DockerException as exc:
            raise EngineError(f"Cannot look up image {ref}: {_short(exc)}",
                              engine=self.address, operation="image_exists") from exc
        return True

    def image_inspect(self, ref: str) -> dict[str, Any]:
        try:
            return dict(self.api.inspect_image(ref))  # type: ignore[no-untyped-call]
        except docker.errors.ImageNotFound as exc:
            raise EngineError(f"Image {ref} does not exist on this engine.",
                              engine=self.address, operation="image_inspect") from exc
        except docker.errors.DockerException as exc:
            raise EngineError(f"Cannot inspect image {ref}: {_short(exc)}",
                              engine=self.address, operation="image_inspect") from exc

    def image_labels(self, ref: str) -> dict[str, str]:
        return dict((self.image_inspect(ref).get("Config") or {}).get("Labels") or {})

    def build(
        self, request: BuildRequest, *, cli: BuildCli | None = None,
        log_path: Path | None = None, on_line: Callable[[str], None] | None = None,
    ) -> None:
        """Build ``request`` with a BuildKit-capable CLI (docker-py drives only the legacy
        builder); ``cli`` defaults to the one :func:`find_build_cli` finds."""
        build_image(cli or find_build_cli(), request, log_path=log_path, on_line=on_line)

    @contextmanager
    def slow_call(self) -> Iterator[None]:
        """The client's read timeout raised to :data:`SLOW_CALL_TIMEOUT` for one call that
        takes as long as the container is large (a 30 s timeout cut a torch environment's
        commit on a loaded machine, and the run ended incomplete)."""
        saved = self.api.timeout
        self.api.timeout = max(saved or 0, SLOW_CALL_TIMEOUT)
        try:
            yield
        finally:
            self.api.timeout = saved

    def import_image(
        self, tar_path: Path, ref: str, *, labels: Mapping[str, str], cmd: str = "bash"
    ) -> str:
        """``docker import`` of a root filesystem tarball; returns the image ID."""
        changes = [f'CMD ["{cmd}"]'] + [
            f"LABEL {k}={json.dumps(v)}" for k, v in sorted(labels.items())
        ]
        repo, tag = split_ref(ref)
        try:
            with self.slow_call():
                self.api.import_image_from_file(
                    str(tar_path), repository=repo, tag=tag, changes=changes
                )
        except docker.errors.APIError as exc:
            raise EngineError(f"docker import of {ref} failed: {_short(exc)}",
                              engine=self.address, operation="import") from exc
        return str(self.image_inspect(ref)["Id"])

    def save_image(self, ref: str, dest: Path) -> None:
        try:
            image = self.client.images.get(ref)
            with self.slow_call(), dest.open("wb") as fh:
                for chunk in image.save(named=True):
                    fh.write(chunk)
        except docker.errors.ImageNotFound as exc:
            raise EngineError(f"Image {ref} does not exist on this engine.",
                              engine=self.address, operation="save") from exc
        except docker.errors.DockerException as exc:
            raise EngineError(f"docker save of {ref} failed: {_short(exc)}",
                              engine=self.address, operation="save") from exc

    def load_image(self, archive: Path) -> None:
        """``docker load`` of an image archive (``docker save``'s or an OCI layout tar);
        it is tagged with the name the archive gives it."""
        try:
            with self.slow_call(), archive.open("rb") as fh:
                self.api.load_image(fh)  # type: ignore[no-untyped-call]
        except docker.errors.APIError as exc:
            raise EngineError(f"docker load of {archive} failed: {_short(exc)}",
                              engine=self.address, operation="load") from exc

    def tag_image(self, image: str, ref: str) -> None:
        repo, tag = split_ref(ref)
        try:
            self.api.tag(image, repo, tag)
        except docker.errors.APIError as exc:
            raise EngineError(f"Cannot tag {image} as {ref}: {_short(exc)}",
                              engine=self.address, operation="tag") from exc

    def push_image(self, ref: str) -> str:
        """``docker push`` of ``ref``; returns the digest the registry gave its manifest."""
        repo, tag = split_ref(ref)
        digest, error = None, None
        try:
            with self.slow_call():
                for event in self.api.push(repo, tag, stream=True, decode=True):
                    error = event.get("error") or error
                    digest = (event.get("aux") or {}).get("Digest") or digest
        except docker.errors.APIError as exc:
            raise EngineError(f"docker push of {ref} failed: {_short(exc)}",
                              engine=self.address, operation="push") from exc
        if error or not digest:
            raise EngineError(f"docker push of {ref} failed: {error or 'no digest returned'}",
                              engine=self.address, operation="push")
        return str(digest)

    def remove_image(self, ref: str) -> None:
        try:
            self.client.images.remove(ref, force=True)
        except docker.errors.ImageNotFound:
            pass

    def managed_images(self, extra_label: str | None = None) -> list[Any]:
        filters = [MANAGED_LABEL + "=1"] + ([extra_label] if extra_label else [])
        return list(self.client.images.list(filters={"label": filters}))

    # -------------------------------------------------------------------- gc
    def gc(
        self, *, images: bool = False, force: bool = False, label: str | None = None,
        scope: str | None = None, dry_run: bool = False, keep_runs: int | None = None,
    ) -> list[str]:
        """Remove what synth left behind; returns what was (or, ``dry_run``, would be) removed.

        * containers whose creating synth process is gone (``force``: also live ones);
        * temporary images, and rebuilt images no tag names any more (superseded);
        * with ``images``: live and rebuilt images too (base images are kept);
        * with ``keep_runs`` N: the live and rebuilt images older than each task's latest N
          (:mod:`synth.util.retention`).

        ``scope`` (an artifacts folder) limits containers and live/rebuilt images to those
        made for it; objects of other folders, other users and other checkouts are left
        alone. Objects that vanish meanwhile (another gc, another user) are skipped.
        """
        removed: list[str] = []
        for c in self.managed_containers(label):
            labels = c.labels or {}
            if not force and _owner_alive(labels):
                continue
            if scope is not None and labels.get(ARTIFACTS_LABEL, scope) != scope:
                continue
            if not dry_run:
                try:
                    c.remove(force=True, v=True)
                except docker.errors.NotFound:
                    continue
            removed.append(f"container {c.name}")
        folders = self._artifacts_folders(label) if scope is None else {scope}
        removed += self._remove_images(
            self._gc_images(label, images=images, scope=scope, keep_runs=keep_runs), dry_run)
        removed += self._gc_build_cache(folders, dry_run=dry_run)
        return removed

    def prune_runs(self, keep: int, *, scope: str | None = None, label: str | None = None,
                   dry_run: bool = False) -> list[str]:
        """Only the live and rebuilt images older than each task's latest ``keep``: what
        ``synth run`` and ``synth verify`` remove after their work (``SYNTH_KEEP_RUNS``).
        No container, temporary image or build cache is touched; ``scope`` as for gc."""
        kept = []
        for img in self.managed_images(label):
            labels = img.labels or {}
            if (labels.get("synth.kind") not in ("live", "rebuilt") or not img.tags
                    or labels.get(TEMPORARY_LABEL) == "1"
                    or (scope is not None and labels.get(ARTIFACTS_LABEL, scope) != scope)):
                continue
            kept.append(img)
        return self._remove_images(_older_runs(kept, keep), dry_run)

    def _remove_images(self, images: list[Any], dry_run: bool) -> list[str]:
        """``image <ref> (<size> MB)`` for each tag removed (or, ``dry_run``, that would be);
        one gone meanwhile or in use by someone else's container is skipped."""
        removed = []
        for img in images:
            size = int((img.attrs or {}).get("Size") or 0)
            for ref in img.tags or [img.id]:
                if not dry_run:
                    try:
                        self.client.images.remove(ref, force=True)
                    except docker.errors.NotFound:
                        continue
                    except docker.errors.APIError:
                        continue  # in use by a container of someone else's: keep
                removed.append(f"image {ref} ({size / 1e6:.0f} MB)")
        return removed

    def _artifacts_folders(self, label: str | None) -> set[str]:
        """Every artifacts folder whose objects this engine holds (their ledgers name the
        build cache of that folder's builds)."""
        folders: set[str] = set()
        for obj in [*self.managed_containers(label), *self.managed_images(label)]:
            if folder := (obj.labels or {}).get(ARTIFACTS_LABEL):
                folders.add(folder)
        return folders

    def _gc_build_cache(self, folders: set[str], *, dry_run: bool) -> list[str]:
        try:
            cli = find_build_cli().path
        except SynthError:
            return []  # no docker CLI: there is no BuildKit cache of ours to prune either
        pruned = build_cache.prune(cli, [Path(f) for f in folders], dry_run=dry_run)
        if not pruned.ids:
            return []
        return [f"build cache: {len(pruned.ids)} record(s), {pruned.size / 1e6:.1f} MB"]

    def _gc_images(self, label: str | None, *, images: bool, scope: str | None,
                   keep_runs: int | None = None) -> list[Any]:
        chosen: list[Any] = []
        try:
            found = self.managed_images(label)
        except docker.errors.NotFound:
            return chosen
        kept: list[Any] = []
        for img in found:
            labels = img.labels or {}
            kind = labels.get("synth.kind")
            if kind == "base" or (scope is not None
                                  and labels.get(ARTIFACTS_LABEL, scope) != scope):
                continue
            superseded = kind == "rebuilt" and not img.tags
            if labels.get(TEMPORARY_LABEL) == "1" or superseded \
                    or (images and kind in ("live", "rebuilt")):
                chosen.append(img)
            elif kind in ("live", "rebuilt"):
                kept.append(img)
        return chosen + (_older_runs(kept, keep_runs) if keep_runs is not None else [])


def _older_runs(images: list[Any], keep: int) -> list[Any]:
    """The images beyond each task's latest ``keep`` live and rebuilt ones."""
    by_ref = {img.tags[0]: img for img in images if img.tags}
    old = retention.beyond_latest(
        [retention.TaggedImage(ref, (img.labels or {}).get("synth.kind", ""),
                               str((img.attrs or {}).get("Created") or ""))
         for ref, img in by_ref.items()], keep)
    return [by_ref[o.ref] for o in old]


class Container:
    """One running container; every command goes through :meth:`exec`."""

    def __init__(self, engine: DockerEngine, raw: DockerContainer) -> None:
        self.engine = engine
        self.raw = raw
        self.id: str = str(raw.id)
        self.name: str = str(raw.name)
        self.description = f"container {self.name}"

    def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        timeout: float | None = None,
        on_output: OutputCallback | None = None,
        user: str | None = None,
    ) -> ExecResult:
        cmd = list(argv)
        if timeout is not None:
            # coreutils timeout is in every Debian image; it kills the whole command.
            cmd = ["timeout", "--kill-after=10", str(max(1, int(timeout))), *cmd]
        api = self.engine.api
        try:
            exec_id = api.exec_create(
                self.id,
                cmd,
                environment=dict(env or {}),
                workdir=workdir,
                user=user or "",
                stdout=True,
                stderr=True,
            )["Id"]
            stream = api.exec_start(exec_id, stream=True, demux=True)
            out, err = OutputSink(), OutputSink()
            for o, e in stream:
                if o:
                    out.add(o)
                    if on_output:
                        on_output("stdout", o)
                if e:
                    err.add(e)
                    if on_output:
                        on_output("stderr", e)
            code = api.exec_inspect(exec_id)["ExitCode"]
        except docker.errors.DockerException as exc:
            raise EngineError(f"exec in {self.description} failed: {_short(exc)}",
                              engine=self.engine.address, operation="exec") from exc
        code = -1 if code is None else int(code)
        return ExecResult(
            argv=tuple(argv),
            exit_code=code,
            stdout=out.text(),
            stderr=err.text(),
            timed_out=timeout is not None and code in (TIMEOUT_EXIT, 137),
            truncated=out.truncated or err.truncated,
        )

    def sh(self, script: str, **kwargs: Any) -> ExecResult:
        return self.exec(["bash", "-c", script], **kwargs)

    def copy_in(self, src: Path, dest: str) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(src, arcname=src.name)
        self.exec(["mkdir", "-p", dest])
        self.put_archive(dest, buf.getvalue())

    def put_archive(self, dest: str, data: bytes | IO[bytes]) -> None:
        try:
            ok = self.raw.put_archive(dest, data)
        except docker.errors.DockerException as exc:
            raise EngineError(f"Copying into {self.description}:{dest} failed: "
                              f"{_short(exc)}",
                              engine=self.engine.address, operation="put_archive") from exc
        if not ok:
            raise EngineError(f"Copying into {self.description}:{dest} failed.",
                              engine=self.engine.address, operation="put_archive")

    def get_archive(self, src: str) -> bytes | None:
        try:
            chunks, _ = self.raw.get_archive(src)
            return b"".join(chunks)
        except docker.errors.NotFound:
            return None
        except docker.errors.DockerException as exc:
            raise EngineError(f"Reading {src} from {self.description} failed: "
                              f"{_short(exc)}",
                              engine=self.engine.address, operation="get_archive") from exc

    def save_archive(self, src: str, dest: Path) -> bool:
        """Stream ``src`` of the container as a tar into the file ``dest`` (never whole in
        memory); False when the container has no ``src``."""
        try:
            chunks, _ = self.raw.get_archive(src)
            with dest.open("wb") as fh:
                for chunk in chunks:
                    fh.write(chunk)
        except docker.errors.NotFound:
            return False
        except docker.errors.DockerException as exc:
            raise EngineError(f"Reading {src} from {self.description} failed: "
                              f"{_short(exc)}",
                              engine=self.engine.address, operation="get_archive") from exc
        return True

    def put_bytes(self, data: bytes, dest: str, mode: int = 0o644) -> None:
        """Write one file in the container from memory."""
        directory, _, name = dest.rpartition("/")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
        self.exec(["mkdir", "-p", directory or "/"])
        self.put_archive(directory or "/", buf.getvalue())

    def copy_out(self, src: str, dest: Path) -> None:
        data = self.get_archive(src)
        if data is None:
            raise EngineError(f"{src} does not exist in {self.description}.",
                              engine=self.engine.address, operation="copy_out")
        buf = io.BytesIO(data)
        dest.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(fileobj=buf) as tar:
                safe_tar.extract_all(tar, dest, policy="tar")
        except safe_tar.REFUSED as exc:
            raise EngineError(f"Copying {src} out of {self.description} stopped at a member "
                              f"that would leave {dest}: {exc}", engine=self.engine.address,
                              operation="copy_out") from exc

    def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes | None:
        """The bytes of one regular file in the container, or None if there is none (a
        symlink is not followed). Past ``max_bytes`` only the first ``max_bytes + 1`` bytes
        are returned, so the caller sees it is too large without loading it whole."""
        try:
            chunks, info = self.raw.get_archive(path)
        except docker.errors.NotFound:
            return None
        except docker.errors.DockerException as exc:
            raise EngineError(f"Reading {path} from {self.description} failed: "
                              f"{_short(exc)}",
                              engine=self.engine.address, operation="read_file") from exc
        if max_bytes is not None and int((info or {}).get("size") or 0) > max_bytes:
            return b"\0" * (max_bytes + 1)
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            fh = tar.extractfile(member)
            return fh.read() if fh else None

    def diff(self) -> list[tuple[str, str]]:
        """``docker diff``: (kind, path) with kind one of A (added), C (changed), D (deleted)."""
        kinds = {0: "C", 1: "A", 2: "D"}
        try:
            with self.engine.slow_call():
                changes = self.raw.diff() or []
        except docker.errors.DockerException as exc:
            raise EngineError(f"docker diff of {self.description} failed: "
                              f"{_short(exc)}",
                              engine=self.engine.address, operation="diff") from exc
        return sorted((kinds[int(c["Kind"])], str(c["Path"])) for c in changes)

    def commit(self, ref: str, *, labels: Mapping[str, str]) -> str:
        repo, tag = split_ref(ref)
        try:
            with self.engine.slow_call():
                image = self.raw.commit(
                    repository=repo, tag=tag, conf={"Labels": {MANAGED_LABEL: "1", **labels}}
                )
        except docker.errors.DockerException as exc:
            raise EngineError(f"Committing {self.description} as {ref} failed: "
                              f"{_short(exc)}",
                              engine=self.engine.address, operation="commit") from exc
        return str(image.id)

    def layer_size(self) -> int | None:
        try:
            with self.engine.slow_call():
                listed = self.engine.api.containers(
                    all=True, size=True, filters={"id": self.raw.id})
        except docker.errors.DockerException:
            return None
        size = listed[0].get("SizeRw") if len(listed) == 1 else None
        return size if isinstance(size, int) and size >= 0 else None

    def ensure_running(self) -> None:
        try:
            self.raw.reload()
            if self.raw.status != "running":
                self.raw.start()
                self.raw.reload()
        except docker.errors.DockerException as exc:
            raise EngineError(f"Cannot start {self.description} again: {_short(exc)}",
                              engine=self.engine.address, operation="ensure_running") from exc

    def labels(self) -> dict[str, str]:
        try:
            self.raw.reload()
        except docker.errors.DockerException as exc:
            raise EngineError(f"Cannot inspect {self.description}: {_short(exc)}",
                              engine=self.engine.address, operation="labels") from exc
        return dict(self.raw.labels or {})

    def main_pid(self) -> int:
        """The host pid of the container's main process (0 when it is not running)."""
        try:
            self.raw.reload()
            return int((self.raw.attrs.get("State") or {}).get("Pid") or 0)
        except (docker.errors.DockerException, ValueError):
            return 0

    def processes(self) -> list[dict[str, Any]]:
        """The container's processes as the engine lists them from the host (``ps`` run by
        the daemon, which nothing in the container can fake), its main process left out:
        ``{"pid", "ppid", "command"}`` with host pids."""
        try:
            self.raw.reload()
            main = int((self.raw.attrs.get("State") or {}).get("Pid") or 0)
            top = self.raw.top()
        except (docker.errors.DockerException, ValueError) as exc:
            raise EngineError(f"Cannot list the processes of {self.description}: "
                              f"{_short(exc)}", engine=self.engine.address,
                              operation="processes") from exc
        titles = [str(t) for t in top.get("Titles") or []]
        col = {t: i for i, t in enumerate(titles)}
        out = []
        for row in top.get("Processes") or []:
            pid, ppid = int(row[col["PID"]]), int(row[col["PPID"]])
            if pid != main:
                out.append({"pid": pid, "ppid": ppid, "command": str(row[col["CMD"]]),
                            "main_child": ppid == main})
        return out

    def limit_events(self) -> dict[str, int]:
        """How often the kernel enforced this container's limits so far: ``memory`` (the
        OOM killer's kills in its cgroup) and ``pids`` (forks refused at the process limit),
        read host-side from the cgroup files, which the container cannot write; empty where
        they cannot be read (another cgroup layout, a remote engine)."""
        try:
            self.raw.reload()
            pid = int((self.raw.attrs.get("State") or {}).get("Pid") or 0)
        except (docker.errors.DockerException, ValueError):
            return {}
        return cgroup_limit_events(pid) if pid > 0 else {}

    def kill(self) -> None:
        try:
            self.raw.kill()
        except docker.errors.APIError:
            pass

    def remove(self) -> None:
        try:
            self.raw.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as exc:
            if "already in progress" not in str(exc):
                raise EngineError(f"Cannot remove {self.description}: {_short(exc)}",
                                  engine=self.engine.address, operation="remove") from exc


if TYPE_CHECKING:
    def _conforms(engine: DockerEngine, container: Container) -> tuple[Engine, EngineContainer]:
        """mypy proves here that the Docker engine and its containers meet the protocols."""
        return engine, container


def split_ref(ref: str) -> tuple[str, str]:
    """``name[:tag]`` -> (name, tag); a registry port is not a tag."""
    name, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, "latest"
    return name, tag


def _owner_alive(labels: Mapping[str, str]) -> bool:
    pid = labels.get(OWNER_PID_LABEL, "")
    if labels.get(OWNER_HOST_LABEL) != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__


_CGROUP_ROOT = Path("/sys/fs/cgroup")
_EVENT_FILES = {"memory": (("memory", "memory.oom_control", "oom_kill"),
                           ("", "memory.events", "oom_kill")),
                "pids": (("pids", "pids.events", "max"), ("", "pids.events", "max"))}


def cgroup_limit_events(pid: int, root: Path = _CGROUP_ROOT) -> dict[str, int]:
    """``{"memory": OOM kills, "pids": forks refused}`` of the cgroups process ``pid`` is
    in, cgroup v1 (one hierarchy per controller) or v2 (one for all)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    paths: dict[str, str] = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(",") if controllers else [""]:
            paths[c] = path.lstrip("/")
    out: dict[str, int] = {}
    for kind, places in _EVENT_FILES.items():
        for controller, name, key in places:
            if controller not in paths:
                continue
            base = root / controller if controller else (
                root / "unified" if (root / "unified" / "cgroup.controllers").exists()
                else root)
            count = _event_count(base / paths[controller] / name, key)
            if count is not None:
                out[kind] = count
                break
    return out


def _event_count(path: Path, key: str) -> int | None:
    try:
        text = path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None
