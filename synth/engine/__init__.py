"""Runtimes synth runs commands in: Docker containers and the host."""

from synth.engine.base import ContainerSpec, ExecResult, Mount, Runtime
from synth.engine.build import BuildCli, BuildRequest, build_image, find_build_cli
from synth.engine.docker import Container, DockerEngine
from synth.engine.host import HostRuntime

__all__ = [
    "BuildCli",
    "BuildRequest",
    "Container",
    "ContainerSpec",
    "DockerEngine",
    "ExecResult",
    "HostRuntime",
    "Mount",
    "Runtime",
    "build_image",
    "find_build_cli",
]
