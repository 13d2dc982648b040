"""The bundled ``conda-env`` task's channel maker, for tests and benches that make its channel
on this (Debian) host rather than in the base image: ``tasks/conda-env/channel/make_channel.py``
is a script of the task, not a module of a package, so it is loaded from its file here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "tasks" / "conda-env" / "channel" / "make_channel.py"

_spec = importlib.util.spec_from_file_location("make_channel", SCRIPT)
assert _spec is not None and _spec.loader is not None
_maker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_maker)

SUBDIR: str = _maker.SUBDIR
build_channel = _maker.build_channel
debian_python = _maker.debian_python
add_member = _maker.add_member
