"""Base images made locally with debootstrap, for sites where nothing can be pulled.

``synth base bootstrap`` runs ``debootstrap --variant=minbase`` into a scratch folder and
``docker import``s it. The recipe and a content hash (of the sorted dpkg package list) are
image labels, which makes the operation idempotent and the image's identity explainable.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from synth.engine.docker import DockerEngine
from synth.errors import BaseImageError

DEFAULT_MIRROR = "http://deb.debian.org/debian"


@dataclass(frozen=True)
class BaseRecipe:
    suite: str
    include: tuple[str, ...] = ()
    mirror: str = DEFAULT_MIRROR

    def describe(self) -> str:
        inc = f" --include={','.join(self.include)}" if self.include else ""
        return f"debootstrap --variant=minbase{inc} {self.suite} {self.mirror}"


#: The recipes synth knows by tag; a task naming one of these gets it made when missing.
KNOWN_BASES: dict[str, tuple[str, ...]] = {
    "synth/debian": (),
    # Debian's own python3 with venv and pip: what research setups start from.
    "synth/python": ("python3", "python3-venv", "python3-pip", "ca-certificates"),
}


def recipe_for(ref: str, mirror: str | None = None) -> BaseRecipe | None:
    name, _, suite = ref.partition(":")
    if name not in KNOWN_BASES:
        return None
    return BaseRecipe(
        suite=suite or "bookworm",
        include=KNOWN_BASES[name],
        mirror=mirror or os.environ.get("SYNTH_DEBIAN_MIRROR", DEFAULT_MIRROR),
    )


def _dpkg_packages(rootfs: Path) -> list[str]:
    status = (rootfs / "var/lib/dpkg/status").read_text(encoding="utf-8", errors="replace")
    pkgs = []
    for stanza in status.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in stanza.splitlines() if ": " in line and line[0] != " "
        )
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:
            pkgs.append(f"{fields['Package']}={fields.get('Version', '')}")
    return sorted(pkgs)


def bootstrap(
    engine: DockerEngine,
    ref: str,
    recipe: BaseRecipe,
    *,
    force: bool = False,
    say: Callable[[str], None] = print,
) -> str:
    """Make ``ref`` from ``recipe`` unless an image with the same recipe exists; its ID."""
    if engine.image_exists(ref) and not force:
        labels = engine.image_inspect(ref).get("Config", {}).get("Labels") or {}
        if labels.get("synth.base.recipe") == recipe.describe():
            say(f"{ref} already exists with this recipe; nothing to do.")
            return str(engine.image_inspect(ref)["Id"])
        say(f"{ref} exists but with another recipe; it will be rebuilt.")
    debootstrap = shutil.which("debootstrap") or (
        "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None
    )
    if debootstrap is None:
        raise BaseImageError(
            "debootstrap is not installed, so no base image can be made here.",
            hint="apt-get install debootstrap (or pull/load a Debian image and tag it "
            f"{ref}).",
        )
    if os.geteuid() != 0:
        raise BaseImageError(
            "debootstrap needs root to make a base image.",
            hint=f"Run `sudo synth base bootstrap --tag {ref}`.",
        )
    with tempfile.TemporaryDirectory(prefix="synth-base-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = [debootstrap, "--variant=minbase"]
        if recipe.include:
            argv.append("--include=" + ",".join(recipe.include))
        argv += [recipe.suite, str(rootfs), recipe.mirror]
        say(f"Making base image {ref}: {recipe.describe()} (about a minute)")
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise BaseImageError(
                f"debootstrap failed (exit {proc.returncode}):\n{tail}",
                hint=f"Is the Debian mirror {recipe.mirror} reachable? "
                "Set SYNTH_DEBIAN_MIRROR to another.",
            )
        # Package caches and lists only bloat the image; agents run apt-get update anyway.
        for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / sub).glob("*"):
                if entry.is_file():
                    entry.unlink()
        packages = _dpkg_packages(rootfs)
        digest = hashlib.sha256("\n".join(packages).encode()).hexdigest()
        tar_path = Path(tmp) / "rootfs.tar"
        subprocess.run(
            ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tar_path), "."], check=True
        )
        labels = {
            "synth.managed": "1",
            "synth.kind": "base",
            "synth.base.recipe": recipe.describe(),
            "synth.base.packages_sha256": digest,
        }
        image_id = engine.import_image(tar_path, ref, labels=labels)
    say(f"Made {ref} ({len(packages)} Debian packages, content {digest[:12]}).")
    return image_id


def ensure_base_image(
    engine: DockerEngine, ref: str, *, say: Callable[[str], None] = print
) -> None:
    """Make a missing ``synth/…`` base image; any other missing image is an error."""
    if engine.image_exists(ref):
        return
    recipe = recipe_for(ref)
    if recipe is None:
        raise BaseImageError(
            f"Base image {ref} is not on this engine and synth does not know how to make it.",
            hint="Pull or load it (`docker load -i image.tar`), or use a synth base such as "
            "synth/python:bookworm, which synth makes itself with debootstrap.",
        )
    say(f"Base image {ref} is missing; making it now.")
    bootstrap(engine, ref, recipe, say=say)
