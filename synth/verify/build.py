"""Build an exported artifact into an image: the one way synth builds artifacts.

The build context is assembled in a temporary folder from hard links (copies across file
systems) of the artifact's files plus, when the manifest says a wheelhouse is needed, the
named wheels under ``wheelhouse/``. The Dockerfile reads them through
``RUN --mount=type=bind,source=wheelhouse`` so no wheel lands in a layer, and the CA bundle
is passed as the BuildKit secret ``cacert`` so it never does either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from synth.config import Settings
from synth.engine import build_cache
from synth.engine.build import BuildRequest, build_image, find_build_cli
from synth.errors import BuildError, NotFoundError
from synth.formats import artifact_files
from synth.formats.store import MANIFEST, ArtifactDir


def read_manifest(artifact_dir: Path) -> dict[str, Any]:
    """The artifact's manifest.json, read and checked by the store."""
    artifact = ArtifactDir(artifact_dir)
    if not artifact.has(MANIFEST):
        raise NotFoundError(f"{artifact_dir} is not a synth artifact (no manifest.json).",
                            hint="Make one with `synth export RUN`.",
                            ref=str(artifact_dir), what="artifact")
    return dict(artifact.manifest().raw)


def _link(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        dest.symlink_to(src.readlink())
        return
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def assemble_context(artifact_dir: Path, dest: Path, wheelhouse: Path | None) -> list[str]:
    """Fill ``dest`` with the artifact and the wheels it needs; returns the wheel names."""
    manifest = read_manifest(artifact_dir)
    for e in artifact_files.walk(artifact_dir):
        if e.kind == "dir":
            # An empty folder carried with --include must exist for its COPY.
            (dest / e.rel).mkdir(parents=True, exist_ok=True)
        else:
            _link(e.path, dest / e.rel)
    wheels: list[str] = list(manifest.get("wheel_files") or [])
    if manifest.get("wheelhouse_required") and wheels:
        if wheelhouse is None:
            raise BuildError(
                f"{artifact_dir} needs a wheelhouse holding {', '.join(wheels)}, and none is "
                "configured.",
                hint="Pass --wheelhouse DIR (or SYNTH_WHEELHOUSE) holding those files.",
            )
        missing = [w for w in wheels if not (wheelhouse / w).is_file()]
        if missing:
            raise BuildError(
                f"The wheelhouse {wheelhouse} lacks {', '.join(missing)}, which "
                f"{artifact_dir.name}'s requirements lock pins by hash.",
                hint="Copy those wheel files into the wheelhouse (the run used them), or "
                "point --wheelhouse at the folder that holds them.",
            )
        for w in wheels:
            _link(wheelhouse / w, dest / "wheelhouse" / w)
    else:
        (dest / "wheelhouse").mkdir(exist_ok=True)
    return wheels


def build_artifact(
    artifact_dir: Path,
    tag: str,
    settings: Settings,
    *,
    no_cache: bool = True,
    log_path: Path | None = None,
    on_line: Callable[[str], None] | None = None,
    labels: Mapping[str, str] | None = None,
    network: str | None = None,
    add_hosts: Mapping[str, str] | None = None,
    published: bool = False,
) -> str:
    """Build ``artifact_dir`` as ``tag``; returns the image ID. Raises BuildError.

    ``network`` (``host``, ``none``) and ``add_hosts`` go to ``docker build`` as given.
    ``published``: an image to publish (``export --push``), with none of synth's labels."""
    artifact_dir = artifact_dir.resolve()
    manifest = read_manifest(artifact_dir)
    cli = find_build_cli(settings.docker_cli)
    with tempfile.TemporaryDirectory(prefix=".synth-build-", dir=artifact_dir.parent) as tmp:
        context = Path(tmp)
        assemble_context(artifact_dir, context, settings.wheelhouse)
        secrets = {"cacert": settings.ca_bundle} if settings.ca_bundle else {}
        request = BuildRequest(
            context=context, tag=tag, secrets=secrets, no_cache=no_cache,
            labels=dict(labels or {}) if published else {
                "synth.artifact": str(manifest.get("task", "")),
                "synth.run": str(manifest.get("run_id", "")),
                # Rebuilt images are synth's own, not the base they start from.
                "synth.managed": "1", "synth.kind": "rebuilt",
                "synth.artifacts": str(settings.artifacts_dir.resolve()),
                **(labels or {})},
            network=network, add_hosts=dict(add_hosts or {}), managed=not published,
        )
        previous = _image_id(cli.path, tag)
        with build_cache.tracked(cli.path, settings.artifacts_dir):
            build_image(cli, request, log_path=log_path, on_line=on_line)
    image_id = _image_id(cli.path, tag)
    if image_id is None:
        raise BuildError(f"Built {tag}, but cannot inspect it.", image=tag)
    if previous and previous != image_id:
        # The image this tag named before is superseded; `rmi` of an ID refuses while
        # another tag or a container still uses it, which is what we want.
        subprocess.run([cli.path, "rmi", previous], capture_output=True, check=False,
                       timeout=120)
    return image_id


def _image_id(cli: str, ref: str) -> str | None:
    out = subprocess.run([cli, "image", "inspect", "--format", "{{.Id}}", ref],
                         capture_output=True, text=True, check=False, timeout=60)
    return out.stdout.strip() or None if out.returncode == 0 else None
