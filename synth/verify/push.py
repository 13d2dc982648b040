"""``synth export --push REGISTRY``: the artifact's base and its built image, pushed to a
registry the user names, so a reader can pull either by digest.

The base goes as ``REGISTRY/synth/<name>:<suite>`` (the published base, the image the
Dockerfile names ``localhost/synth/…``), the artifact's image as
``REGISTRY/<task>:<run-id>``, built from the artifact (with the build cache: the image is
the Dockerfile's, not a verification) and carrying only its OCI labels. Each push returns
the registry's manifest digest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.config import Settings
from synth.engine.base import Engine
from synth.engine.base_images import LOCAL_REGISTRY, prepare_base
from synth.errors import UsageError
from synth.formats.store import ArtifactDir
from synth.verify.build import build_artifact


@dataclass(frozen=True)
class Pushed:
    """What went where: each reference pushed, with the digest the registry gave it."""

    base: str
    base_digest: str
    image: str
    image_digest: str

    def to_json(self) -> dict[str, str]:
        return {"base": self.base, "base_digest": self.base_digest, "image": self.image,
                "image_digest": self.image_digest}

    def lines(self) -> list[str]:
        return [f"pushed: {self.base}@{self.base_digest}",
                f"pushed: {self.image}@{self.image_digest}"]


def registry_name(registry: str) -> str:
    """``--push``'s registry (``host[:port][/path]``), checked: no scheme, no tag."""
    name = registry.strip().rstrip("/")
    if not name or "://" in name or any(c in name for c in " @") or name.count(":") > 1:
        raise UsageError(f"--push {registry!r}: give a registry as host[:port][/path], e.g. "
                         "registry.example.org/lab or 127.0.0.1:5000.", option="--push")
    return name


def _base_ref(base: Mapping[str, Any]) -> str:
    published = base.get("published")
    return str(published["ref"]) if isinstance(published, Mapping) else str(base["ref"])


def push_artifact(artifact_dir: Path, registry: str, settings: Settings, engine: Engine,
                  say: Callable[[str], None]) -> Pushed:
    """Push the artifact's base and build and push its image on ``engine`` (module
    docstring)."""
    registry = registry_name(registry)
    manifest = ArtifactDir(artifact_dir).manifest()
    base: Mapping[str, Any] = manifest.raw["base"]
    say("Base image: " + prepare_base(engine, base, artifact_dir, say=say))
    local = _base_ref(base)
    remote_base = f"{registry}/{local.removeprefix(LOCAL_REGISTRY).split('@', 1)[0]}"
    engine.tag_image(local, remote_base)
    base_digest = engine.push_image(remote_base)
    image = f"{registry}/{manifest.task}:{manifest.run_id}"
    say(f"Building {image} from {artifact_dir}")
    build_artifact(artifact_dir, image, settings, no_cache=False, published=True)
    return Pushed(remote_base, base_digest, image, engine.push_image(image))
