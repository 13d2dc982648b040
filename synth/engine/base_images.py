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
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.engine.base import Engine
from synth.errors import BaseImageError, UsageError

DEFAULT_MIRROR = "http://deb.debian.org/debian"


TOOLS = ("debootstrap", "mmdebstrap")


@dataclass(frozen=True)
class BaseRecipe:
    suite: str
    include: tuple[str, ...] = ()
    mirror: str = DEFAULT_MIRROR
    #: debootstrap (the default), or mmdebstrap: a reproducible tar with SOURCE_DATE_EPOCH.
    tool: str = "debootstrap"
    source_date_epoch: int | None = None

    def describe(self) -> str:
        inc = f" --include={','.join(self.include)}" if self.include else ""
        sde = (f" SOURCE_DATE_EPOCH={self.source_date_epoch}"
               if self.source_date_epoch is not None else "")
        return f"{self.tool} --variant=minbase{inc} {self.suite} {self.mirror}{sde}"


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


def recipe_from_options(tag: str, suite: str, include: str | None, mirror: str | None,
                        tool: str, source_date_epoch: int | None) -> BaseRecipe:
    """``synth base bootstrap``'s recipe: the options given, the rest from a known tag's
    recipe. ``include`` is comma-separated; None: the known tag's packages."""
    known = recipe_for(tag, mirror)
    recipe = BaseRecipe(
        suite=suite,
        include=tuple(sorted(i for i in include.split(",") if i)) if include is not None
        else (known.include if known else ()),
        mirror=mirror or (known.mirror if known else BaseRecipe(suite).mirror),
        tool=tool, source_date_epoch=source_date_epoch,
    )
    if tool not in TOOLS or (source_date_epoch is not None and tool != "mmdebstrap"):
        raise UsageError(f"--tool is one of {', '.join(TOOLS)}; --source-date-epoch needs "
                         "--tool mmdebstrap.", option="--tool")
    return recipe


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


def _tool_version(package: str) -> str:
    """The host's Debian package version of ``package`` (empty when unknown)."""
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                             capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def _find_tool(tool: str, ref: str) -> str:
    # /usr/sbin is not on every user's PATH (debootstrap lives there).
    path = shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin")
    if path is None:
        raise BaseImageError(
            f"{tool} is not installed, so no base image can be made here.",
            hint=f"apt-get install {tool} (or pull/load a Debian image and tag it {ref}).",
            image=ref)
    if os.geteuid() != 0:
        raise BaseImageError(
            f"{tool} needs root to make a base image.",
            hint=f"Run `sudo synth base bootstrap --tag {ref}`.", image=ref)
    return path


def _run_tool(argv: list[str], recipe: BaseRecipe, env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BaseImageError(
            f"{recipe.tool} failed (exit {proc.returncode}):\n{tail}",
            hint=f"Is the Debian mirror {recipe.mirror} reachable? "
            "Set SYNTH_DEBIAN_MIRROR to another.",
        )


def _debootstrap_tar(exe: str, recipe: BaseRecipe, tmp: Path) -> tuple[Path, list[str]]:
    rootfs = tmp / "rootfs"
    argv = [exe, "--variant=minbase"]
    if recipe.include:
        argv.append("--include=" + ",".join(recipe.include))
    _run_tool([*argv, recipe.suite, str(rootfs), recipe.mirror], recipe)
    # Package caches and lists only bloat the image; agents run apt-get update anyway.
    for sub in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / sub).glob("*"):
            if entry.is_file():
                entry.unlink()
    packages = _dpkg_packages(rootfs)
    tar_path = tmp / "rootfs.tar"
    subprocess.run(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tar_path), "."], check=True
    )
    return tar_path, packages


def _mmdebstrap_tar(exe: str, recipe: BaseRecipe, tmp: Path) -> tuple[Path, list[str]]:
    """mmdebstrap writes a reproducible tar itself: same inputs and SOURCE_DATE_EPOCH, same
    bytes (its own cleanup drops apt's lists and caches)."""
    tar_path = tmp / "rootfs.tar"
    argv = [exe, "--quiet", "--mode=root", "--variant=minbase", "--format=tar"]
    if recipe.include:
        argv.append("--include=" + ",".join(recipe.include))
    env = dict(os.environ)
    if recipe.source_date_epoch is not None:
        env["SOURCE_DATE_EPOCH"] = str(recipe.source_date_epoch)
    _run_tool([*argv, recipe.suite, str(tar_path), recipe.mirror], recipe, env)
    status = tmp / "status"
    with tarfile.open(tar_path) as tar:
        member = tar.extractfile("./var/lib/dpkg/status")
        status.write_bytes(member.read() if member else b"")
    (tmp / "fs" / "var/lib/dpkg").mkdir(parents=True)
    status.replace(tmp / "fs" / "var/lib/dpkg/status")
    return tar_path, _dpkg_packages(tmp / "fs")


def bootstrap(
    engine: Engine,
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
    exe = _find_tool(recipe.tool, ref)
    with tempfile.TemporaryDirectory(prefix="synth-base-") as tmp:
        say(f"Making base image {ref}: {recipe.describe()} (a minute or two)")
        make = _mmdebstrap_tar if recipe.tool == "mmdebstrap" else _debootstrap_tar
        tar_path, packages = make(exe, recipe, Path(tmp))
        digest = hashlib.sha256("\n".join(packages).encode()).hexdigest()
        labels = {
            "synth.managed": "1",
            "synth.kind": "base",
            "synth.base.recipe": recipe.describe(),
            "synth.base.packages_sha256": digest,
            "synth.base.tool_version": _tool_version(recipe.tool),
        }
        image_id = engine.import_image(tar_path, ref, labels=labels)
    say(f"Made {ref} ({len(packages)} Debian packages, content {digest[:12]}).")
    return image_id


def ensure_base_image(
    engine: Engine, ref: str, *, say: Callable[[str], None] = print
) -> None:
    """Make a missing ``synth/…`` base image; any other missing image is an error."""
    if engine.image_exists(ref):
        return
    recipe = recipe_for(ref)
    if recipe is None:
        raise BaseImageError(
            f"Base image {ref} is not on this engine and synth does not know how to make it.",
            hint="Pull or load it (`docker load -i image.tar`), or use a synth base such as "
            "synth/python:bookworm, which synth makes itself with debootstrap.", image=ref)
    say(f"Base image {ref} is missing; making it now.")
    bootstrap(engine, ref, recipe, say=say)


# ------------------------------------------------------------ a base that can be checked

def parse_recipe(describe: str) -> BaseRecipe | None:
    """The inverse of :meth:`BaseRecipe.describe` (a base image's ``synth.base.recipe``)."""
    words = describe.split()
    if len(words) < 4 or words[0] not in TOOLS or words[1] != "--variant=minbase":
        return None
    include: tuple[str, ...] = ()
    rest = words[2:]
    if rest[0].startswith("--include="):
        include = tuple(x for x in rest[0].removeprefix("--include=").split(",") if x)
        rest = rest[1:]
    sde: int | None = None
    if rest and rest[-1].startswith("SOURCE_DATE_EPOCH="):
        value = rest.pop().removeprefix("SOURCE_DATE_EPOCH=")
        sde = int(value) if value.isdigit() else None
    if len(rest) != 2:
        return None
    return BaseRecipe(suite=rest[0], include=include, mirror=rest[1], tool=words[0],
                      source_date_epoch=sde)


def base_manifest(ref: str, image_id: str | None, digest: str | None,
                  rootfs: Sequence[str], repo_digests: Sequence[str],
                  labels: Mapping[str, str]) -> dict[str, Any]:
    """The manifest's ``base`` key: what the artifact was made on, and how to remake it."""
    describe = labels.get("synth.base.recipe")
    recipe = parse_recipe(describe) if describe else None
    return {
        "ref": ref, "id": image_id, "digest": digest,
        "rootfs": list(rootfs), "repo_digests": sorted(repo_digests),
        "recipe": None if recipe is None else {
            "tool": recipe.tool, "variant": "minbase", "suite": recipe.suite,
            "source_date_epoch": recipe.source_date_epoch,
            "include": list(recipe.include), "mirror": recipe.mirror, "describe": describe,
            "tool_version": labels.get("synth.base.tool_version"),
            "packages_sha256": labels.get("synth.base.packages_sha256"),
        },
    }


def _short(layers: Sequence[str]) -> str:
    return ", ".join(x.removeprefix("sha256:")[:12] for x in layers) or "(none)"


def check_base(engine: Engine, base: Mapping[str, Any], *, allow_mismatch: bool = False,
               say: Callable[[str], None] = print) -> str:
    """Before a rebuild: is the artifact's base on this engine the one it was made on?

    A missing synth base is recreated from the recorded recipe (debootstrap is not bit
    for bit reproducible, so the package list's hash decides); a present base whose
    rootfs layers differ from the recorded ones is refused unless ``allow_mismatch``.
    Returns what was found, in words."""
    ref = str(base.get("ref") or "")
    want = [str(x) for x in base.get("rootfs") or []]
    if not ref or base.get("digest"):
        return "pinned by registry digest" if ref else "not recorded"
    if not engine.image_exists(ref):
        raw = base.get("recipe")
        if not isinstance(raw, Mapping):
            raise BaseImageError(
                f"The artifact's base image {ref} is not on this engine, and its manifest "
                "records no recipe to make it from.",
                hint="Load the original image (`docker load -i base.tar`) and tag it " + ref,
                image=ref)
        sde = raw.get("source_date_epoch")
        recipe = BaseRecipe(suite=str(raw["suite"]), include=tuple(raw.get("include") or ()),
                            mirror=str(raw.get("mirror") or DEFAULT_MIRROR),
                            tool=str(raw.get("tool") or "debootstrap"),
                            source_date_epoch=int(sde) if isinstance(sde, int) else None)
        say(f"Base image {ref} is missing; recreating it from the recorded recipe "
            f"({recipe.describe()}).")
        bootstrap(engine, ref, recipe, say=say)
        labels = engine.image_inspect(ref).get("Config", {}).get("Labels") or {}
        got, rec = labels.get("synth.base.packages_sha256"), raw.get("packages_sha256")
        if rec and got != rec and not allow_mismatch:
            raise BaseImageError(
                f"Recreated {ref} from its recipe, but its Debian packages differ from the "
                f"recorded base (package list {str(got)[:12]} vs {str(rec)[:12]}): the mirror "
                "has moved on.", hint="Pass --allow-base-mismatch to build on it anyway.",
                image=ref)
        return "recreated from the recorded recipe"
    layers = list((engine.image_inspect(ref).get("RootFS") or {}).get("Layers") or [])
    if not want:
        return "no rootfs recorded: not checked"
    if layers == want:
        return "matches the recorded rootfs"
    if not allow_mismatch:
        raise BaseImageError(
            f"The base image {ref} on this engine is not the one the artifact was made on: its "
            f"rootfs layers are {_short(layers)}, manifest.json records {_short(want)}.",
            hint="Load the original base image, or pass --allow-base-mismatch to build on "
            "this one anyway (the rebuild may then differ).", image=ref)
    say(f"warning: base image {ref} differs from the recorded one (allowed).")
    return "differs from the recorded rootfs (allowed)"
