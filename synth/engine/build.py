"""Image builds through a BuildKit-capable docker CLI.

docker-py only drives the legacy builder, which has no ``RUN --mount=type=secret``; the CA
bundle must reach builds as a BuildKit secret so it never lands in a layer. So builds shell
out to ``docker buildx build`` where buildx exists, else to a CLI whose built-in BuildKit is
switched on with ``DOCKER_BUILDKIT=1`` (docker CLI < 23).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from synth.errors import BuildError, DiskFullError, EngineUnavailableError
from synth.util.disk import disk_full_as_error, disk_full_error, log_says_disk_full

_CANDIDATES = ("docker", "/usr/bin/docker", "/usr/local/bin/docker")


@dataclass(frozen=True)
class BuildCli:
    path: str
    #: "buildx" (``docker buildx build``) or "builtin" (``DOCKER_BUILDKIT=1 docker build``).
    mode: str
    client_version: str

    def build_argv(self) -> list[str]:
        return [self.path, "buildx", "build", "--load"] if self.mode == "buildx" else [
            self.path, "build"
        ]

    def env(self) -> dict[str, str]:
        return {**os.environ, "DOCKER_BUILDKIT": "1"}


def _client_version(path: str) -> str | None:
    try:
        out = subprocess.run(
            [path, "version", "--format", "{{.Client.Version}}"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = out.stdout.strip()
    return version or None


def _has_buildx(path: str) -> bool:
    try:
        out = subprocess.run(
            [path, "buildx", "version"], capture_output=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0


def find_build_cli(configured: str | None = None) -> BuildCli:
    """The first docker CLI that can build with BuildKit, ``configured`` first."""
    tried: list[str] = []
    candidates = [configured] if configured else list(_CANDIDATES)
    seen: set[str] = set()
    for cand in candidates:
        path = shutil.which(cand) if cand else None
        if not path or path in seen:
            if cand:
                tried.append(f"{cand}: not found")
            continue
        seen.add(path)
        version = _client_version(path)
        if version is None:
            tried.append(f"{path}: does not run")
            continue
        if _has_buildx(path):
            return BuildCli(path, "buildx", version)
        major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 99
        if major < 23:
            return BuildCli(path, "builtin", version)
        tried.append(f"{path} {version}: no buildx plugin, and no built-in BuildKit after 23.0")
    raise EngineUnavailableError(
        "No BuildKit-capable docker CLI found (" + "; ".join(tried) + ").", engine=None,
        hint="Install the buildx plugin (Debian: `apt-get install docker-buildx` where packaged, "
        "or docker.io < 23 which has BuildKit built in), or point SYNTH_DOCKER_CLI at one.",
    )


#: How a reader builds an artifact with each builder (the artifact README's lines, and what
#: ``synth doctor`` reports): kind -> (who has it, the command, with ``{dockerfile}`` where
#: the legacy variant is named, and what the builder cannot do, or None).
READER_BUILDS: dict[str, tuple[str, str, str | None]] = {
    "buildx": ("Docker with the buildx plugin", "docker buildx build --load", None),
    "builtin": ("Docker older than 23.0 (BuildKit built in)", "DOCKER_BUILDKIT=1 docker build",
                None),
    "legacy": ("Docker 23 or newer without buildx (the legacy builder)",
               "DOCKER_BUILDKIT=0 docker build -f Dockerfile.legacy",
               "no RUN --mount and no build secrets: it builds Dockerfile.legacy, which "
               "copies the locks (and a bundle's files) into layers and passes no CA bundle"),
    "podman": ("Podman", "podman build --format docker", None),
    "buildah": ("Buildah", "buildah build --format docker", None),
}


@dataclass(frozen=True)
class Builder:
    """A builder found on this machine: which kind (:data:`READER_BUILDS`), where, which
    version."""

    kind: str
    path: str
    version: str

    @property
    def cannot(self) -> str | None:
        return READER_BUILDS[self.kind][2]

    def describe(self) -> str:
        who, command, cannot = READER_BUILDS[self.kind]
        return (f"{self.path} {self.version}: {who}, `{command}`"
                + (f"; {cannot}" if cannot else ""))


def _tool_version(path: str) -> str | None:
    """``podman --version`` -> ``4.3.1``."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30,
                             check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.stdout.split()
    return words[2].rstrip(",") if out.returncode == 0 and len(words) > 2 else None


def docker_kind(path: str, version: str) -> str:
    """buildx, builtin (a CLI before 23.0, BuildKit built in) or legacy."""
    if _has_buildx(path):
        return "buildx"
    major = version.split(".", maxsplit=1)[0]
    return "builtin" if major.isdigit() and int(major) < 23 else "legacy"


def find_builders(configured: str | None = None) -> list[Builder]:
    """Every builder on this machine: each docker CLI (``configured`` first), Podman and
    Buildah, with what it can build."""
    found: list[Builder] = []
    seen: set[str] = set()
    for cand in [c for c in (configured, *_CANDIDATES) if c]:
        path = shutil.which(cand)
        if not path or os.path.realpath(path) in seen:
            continue
        seen.add(os.path.realpath(path))
        version = _client_version(path)
        if version is not None:
            found.append(Builder(docker_kind(path, version), path, version))
    for tool in ("podman", "buildah"):
        path = shutil.which(tool)
        version = _tool_version(path) if path else None
        if path and version:
            found.append(Builder(tool, path, version))
    return found


@dataclass(frozen=True)
class BuildRequest:
    context: Path
    tag: str
    dockerfile: Path | None = None
    #: BuildKit secrets: id -> host file (e.g. ``{"cacert": Path("/etc/ssl/certs/ca.crt")}``).
    secrets: Mapping[str, Path] = field(default_factory=dict)
    build_args: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    #: Mark the image as synth's (``synth.managed=1``, for gc); False for an image that is
    #: published (``synth export --push``): it carries only the Dockerfile's OCI labels.
    managed: bool = True
    no_cache: bool = False
    network: str | None = None
    #: Extra ``/etc/hosts`` entries for the build (``--add-host name:ip``).
    add_hosts: Mapping[str, str] = field(default_factory=dict)


def build_image(
    cli: BuildCli,
    request: BuildRequest,
    *,
    log_path: Path | None = None,
    on_line: Callable[[str], None] | None = None,
) -> None:
    """Build ``request``; the whole log goes to ``log_path``, each line to ``on_line``."""
    argv = [*cli.build_argv(), "--progress=plain", "-t", request.tag]
    if request.dockerfile is not None:
        argv += ["-f", str(request.dockerfile)]
    if request.no_cache:
        argv.append("--no-cache")
    if request.network:
        argv += ["--network", request.network]
    for host, ip in sorted(request.add_hosts.items()):
        argv += ["--add-host", f"{host}:{ip}"]
    for sid, src in sorted(request.secrets.items()):
        argv += ["--secret", f"id={sid},src={src}"]
    for k, v in sorted(request.build_args.items()):
        argv += ["--build-arg", f"{k}={v}"]
    for k, v in sorted({**({"synth.managed": "1"} if request.managed else {}),
                        **request.labels}.items()):
        argv += ["--label", f"{k}={v}"]
    argv.append(str(request.context))
    code, tail = _stream_build(cli, argv, log_path, on_line)
    if code != 0:
        where = f" Full log: {log_path}." if log_path else ""
        if log_says_disk_full("\n".join(tail)):
            raise _build_disk_full(cli, request.tag, where, tail)
        raise BuildError(
            f"Building {request.tag} failed (exit {code}).{where}\n" + "\n".join(tail[-25:]),
            hint="The failing step and its output are at the end of the build log; `docker "
            "build` of the artifact folder (its README says how) repeats it without synth.",
            image=request.tag, log=log_path)


def _stream_build(cli: BuildCli, argv: list[str], log_path: Path | None,
                  on_line: Callable[[str], None] | None) -> tuple[int, list[str]]:
    """Run the build, its log to ``log_path`` and each line to ``on_line``; returns its
    exit code and the log's last lines. A log write that finds the disk full stops the
    build and raises :class:`~synth.errors.DiskFullError` naming the log."""
    tail: list[str] = []
    log = None
    proc: subprocess.Popen[str] | None = None
    try:
        with disk_full_as_error(log_path):
            log = log_path.open("w", encoding="utf-8") if log_path else None
            if log:
                log.write("+ " + " ".join(argv) + "\n")
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                env=cli.env(), errors="replace",
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                if log:
                    log.write(line)
                    log.flush()
                tail.append(line.rstrip("\n"))
                del tail[:-40]
                if on_line:
                    on_line(line.rstrip("\n"))
            return proc.wait(), tail
    except BaseException:
        if proc is not None and proc.poll() is None:
            proc.terminate()
        raise
    finally:
        if log:
            with suppress(OSError):  # a full disk was reported above
                log.close()


def _build_disk_full(cli: BuildCli, tag: str, where: str, tail: list[str]) -> DiskFullError:
    """A build that ran out of space (BuildKit's "no space left on device"), in synth's
    words: the engine's data root is where its layers and cache go."""
    root = engine_data_root(cli)
    err = disk_full_error(None, what=f"building {tag}", mount=root)
    lines = [ln for ln in tail if log_says_disk_full(ln)][-3:]
    return DiskFullError(f"{err.message}{where}\n" + "\n".join(lines), path=None,
                         mount=err.mount, free=err.free)


def engine_data_root(cli: BuildCli | None = None) -> str | None:
    """The engine's data root (``docker info``'s DockerRootDir) as its CLI reports it, or
    None where no CLI answers."""
    path = cli.path if cli is not None else shutil.which("docker")
    if path is None:
        return None
    try:
        proc = subprocess.run([path, "info", "--format", "{{.DockerRootDir}}"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    root = proc.stdout.strip()
    return root if proc.returncode == 0 and root.startswith("/") else None


_STEP_RE = re.compile(r"^#(?P<id>\d+) \[[^\]]*\d+/\d+\] ")
_DONE_RE = re.compile(r"^#(?P<id>\d+) DONE (?P<secs>\d+(\.\d+)?)s$")


class StepLines:
    """Which lines of BuildKit's plain progress to show by default: each step as it starts
    (`#7 [3/9] RUN …`, once), how long it took when that was a while, and errors."""

    def __init__(self, min_seconds: float = 2.0, width: int = 160) -> None:
        self.min_seconds = min_seconds
        self.width = width
        self._shown: set[str] = set()

    def __call__(self, line: str) -> str | None:
        if m := _STEP_RE.match(line):
            if m["id"] in self._shown:
                return None
            self._shown.add(m["id"])
            short = " ".join(line.split())
            return short if len(short) <= self.width else short[:self.width - 1] + "…"
        if (m := _DONE_RE.match(line)) and m["id"] in self._shown:
            return line if float(m["secs"]) >= self.min_seconds else None
        return line if " ERROR" in line[:12] or line.startswith("ERROR") else None
