"""Runtimes synth runs commands in: Docker containers and the host.

The protocol (:mod:`synth.engine.base`) loads alone; the Docker engine, which imports
docker-py, loads only when one of its names is first used (``from synth.engine import
DockerEngine``), so pure modules that need the protocol never load docker-py.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from synth.engine.base import ContainerSpec, ExecResult, Mount, Runtime

if TYPE_CHECKING:
    from synth.engine.build import BuildCli, BuildRequest, build_image, find_build_cli
    from synth.engine.docker import Container, DockerEngine
    from synth.engine.host import HostRuntime

_LAZY = {
    "BuildCli": "synth.engine.build", "BuildRequest": "synth.engine.build",
    "build_image": "synth.engine.build", "find_build_cli": "synth.engine.build",
    "Container": "synth.engine.docker", "DockerEngine": "synth.engine.docker",
    "HostRuntime": "synth.engine.host",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(module), name)
