"""Base images made locally with debootstrap, for sites where nothing can be pulled.

``synth base bootstrap`` runs ``debootstrap --variant=minbase`` into a scratch folder and
``docker import``s it. The recipe and a content hash (of the sorted dpkg package list) are
image labels, which makes the operation idempotent and the image's identity explainable.

A recipe may add Python tools from PyPI (:attr:`BaseRecipe.pypi`): a hashed lock shipped
with synth (``synth/engine/bases/<name>.txt``) installed with ``--require-hashes`` into a
virtual environment of the rootfs (``/opt/synth-tools``, chroot, before the import), its
commands linked into ``/usr/local/bin``; the lock's sha256 is in the recipe and a label.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from synth.engine import image_archive
from synth.engine.base import Engine
from synth.errors import BaseImageError, UsageError

DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: The registry part of a published synth base's name: a name no registry serves, so a
#: missing base is an error on the reader's machine, never a pull from Docker Hub (where
#: ``synth/…`` is a namespace synth does not own). Docker and Podman both keep local images
#: under it.
LOCAL_REGISTRY = "localhost/"


TOOLS = ("debootstrap", "mmdebstrap")
#: Hashed PyPI locks shipped with synth (name -> the commands linked into /usr/local/bin).
PYPI_LOCKS: dict[str, tuple[str, ...]] = {"research-tools": ("uv", "uvx", "poetry", "pipenv")}
LOCKS_DIR = Path(__file__).resolve().parent / "bases"
TOOLS_VENV = "/opt/synth-tools"


def pypi_lock(name: str) -> str:
    """The text of a shipped PyPI lock."""
    if name not in PYPI_LOCKS:
        raise UsageError(f"No PyPI lock {name!r}; known: {', '.join(sorted(PYPI_LOCKS))}.")
    return (LOCKS_DIR / f"{name}.txt").read_text(encoding="utf-8")


def pypi_digest(name: str) -> str:
    return hashlib.sha256(pypi_lock(name).encode()).hexdigest()


@dataclass(frozen=True)
class BaseRecipe:
    suite: str
    include: tuple[str, ...] = ()
    mirror: str = DEFAULT_MIRROR
    #: debootstrap (the default), or mmdebstrap: a reproducible tar with SOURCE_DATE_EPOCH.
    tool: str = "debootstrap"
    source_date_epoch: int | None = None
    #: A shipped PyPI lock (:data:`PYPI_LOCKS`) installed on top; "" for none.
    pypi: str = ""

    def describe(self) -> str:
        inc = f" --include={','.join(self.include)}" if self.include else ""
        sde = (f" SOURCE_DATE_EPOCH={self.source_date_epoch}"
               if self.source_date_epoch is not None else "")
        pypi = f" +pypi={self.pypi}@{pypi_digest(self.pypi)[:16]}" if self.pypi else ""
        return f"{self.tool} --variant=minbase{inc} {self.suite} {self.mirror}{sde}{pypi}"


#: The recipes synth knows by tag; a task naming one of these gets it made when missing.
KNOWN_BASES: dict[str, tuple[str, ...]] = {
    "synth/debian": (),
    # Debian's own python3 with venv and pip: what research setups start from.
    "synth/python": ("python3", "python3-venv", "python3-pip", "ca-certificates"),
    # What a research-setup agent's image offers (ResearchEnvBench's, for one): `python` on
    # PATH, git, rsync, ripgrep, compilers and build tools; uv, poetry and pipenv from PyPI.
    "synth/research": ("build-essential", "ca-certificates", "cmake", "curl", "git", "jq",
                       "ninja-build", "patch", "pkg-config", "procps", "python-is-python3",
                       "python3", "python3-dev", "python3-pip", "python3-venv", "ripgrep",
                       "rsync", "unzip", "wget", "xz-utils", "zip"),
}
#: Known bases with PyPI tools on top (tag name -> lock name).
KNOWN_PYPI: dict[str, str] = {"synth/research": "research-tools"}
#: What a known base lacks on purpose, said in its labels (``synth.base.absent``).
KNOWN_ABSENT: dict[str, str] = {
    "synth/research": "no conda-compatible installer (conda, mamba, micromamba): no conda "
                      "channel is reachable from the machines synth is made and tested on",
}
#: The base a task imported from a benchmark of research setups (ResearchEnvBench) uses.
RESEARCH_BASE = "synth/research:bookworm"


def recipe_for(ref: str, mirror: str | None = None) -> BaseRecipe | None:
    """The recipe of a synth base, named ``synth/<name>:<suite>`` or, as artifacts name
    it, ``localhost/synth/<name>:<suite>``; None for any other image."""
    name, _, suite = ref.removeprefix(LOCAL_REGISTRY).partition(":")
    if name not in KNOWN_BASES:
        return None
    return BaseRecipe(
        suite=suite or "bookworm",
        include=KNOWN_BASES[name],
        mirror=mirror or os.environ.get("SYNTH_DEBIAN_MIRROR", DEFAULT_MIRROR),
        pypi=KNOWN_PYPI.get(name, ""),
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
        tool=tool, source_date_epoch=source_date_epoch, pypi=known.pypi if known else "",
    )
    if tool not in TOOLS or (source_date_epoch is not None and tool != "mmdebstrap"):
        raise UsageError(f"--tool is one of {', '.join(TOOLS)}; --source-date-epoch needs "
                         "--tool mmdebstrap.", option="--tool")
    if recipe.pypi and tool != "debootstrap":
        raise UsageError(f"{tag}'s PyPI tools are installed in a debootstrap rootfs: use "
                         "--tool debootstrap.", option="--tool")
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


def _ca_bundle() -> Path | None:
    """The CA bundle PyPI downloads trust: ``SYNTH_CA_BUNDLE`` (an intercepting proxy's),
    else the host's."""
    for candidate in (os.environ.get("SYNTH_CA_BUNDLE"), "/etc/ssl/certs/ca-certificates.crt"):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None


def _chroot(rootfs: Path, argv: list[str], env: dict[str, str], what: str) -> None:
    proc = subprocess.run(["chroot", str(rootfs), *argv], capture_output=True, text=True,
                          check=False, env=env, timeout=1800)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise BaseImageError(f"{what} failed in the new rootfs (exit {proc.returncode}):\n{tail}",
                             hint="Is PyPI reachable from this machine (a proxy needs "
                             "SYNTH_CA_BUNDLE)?")


def install_pypi(rootfs: Path, name: str) -> None:
    """The shipped lock ``name`` into ``TOOLS_VENV`` of ``rootfs`` (``--require-hashes``,
    no cache), its commands linked into ``/usr/local/bin``; nothing else stays behind (the
    lock, the CA bundle and the resolver file are removed, the original restored)."""
    (rootfs / "tmp" / "synth-pypi.txt").write_text(pypi_lock(name), encoding="utf-8")
    resolv, saved = rootfs / "etc" / "resolv.conf", None
    if resolv.is_file() and not resolv.is_symlink():
        saved = resolv.read_bytes()
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LC_ALL": "C.UTF-8",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1",
           **{k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}}
    try:
        if resolv.is_symlink():
            resolv.unlink()
        shutil.copyfile("/etc/resolv.conf", resolv)
        ca = _ca_bundle()
        if ca is not None:
            shutil.copyfile(ca, rootfs / "tmp" / "synth-ca.pem")
            env["PIP_CERT"] = "/tmp/synth-ca.pem"
        _chroot(rootfs, ["python3", "-m", "venv", TOOLS_VENV], env, "python3 -m venv")
        _chroot(rootfs, [f"{TOOLS_VENV}/bin/pip", "install", "--no-deps", "--require-hashes",
                         "--only-binary", ":all:", "-r", "/tmp/synth-pypi.txt"], env,
                f"pip install of the {name} lock")
        for command in PYPI_LOCKS[name]:
            link = rootfs / "usr" / "local" / "bin" / command
            link.unlink(missing_ok=True)
            link.symlink_to(f"{TOOLS_VENV}/bin/{command}")
    finally:
        for leftover in ("synth-pypi.txt", "synth-ca.pem"):
            (rootfs / "tmp" / leftover).unlink(missing_ok=True)
        resolv.unlink(missing_ok=True)
        if saved is not None:
            resolv.write_bytes(saved)


def _debootstrap_tar(exe: str, recipe: BaseRecipe, tmp: Path) -> tuple[Path, list[str]]:
    rootfs = tmp / "rootfs"
    argv = [exe, "--variant=minbase"]
    if recipe.include:
        argv.append("--include=" + ",".join(recipe.include))
    _run_tool([*argv, recipe.suite, str(rootfs), recipe.mirror], recipe)
    if recipe.pypi:
        install_pypi(rootfs, recipe.pypi)
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
        if recipe.pypi:
            labels["synth.base.pypi_sha256"] = pypi_digest(recipe.pypi)
        if absent := KNOWN_ABSENT.get(ref.partition(":")[0]):
            labels["synth.base.absent"] = absent
        image_id = engine.import_image(tar_path, ref, labels=labels)
    say(f"Made {ref} ({len(packages)} Debian packages, content {digest[:12]}).")
    published = published_base(ref, _layers(engine, ref), labels,
                               str(engine.image_inspect(ref).get("Architecture") or "amd64"))
    if published is not None:  # what an artifact made on it records as base.published
        say(f"Published as {published.ref}, digest {published.digest}.")
    return image_id


def _layers(engine: Engine, ref: str) -> list[str]:
    return list((engine.image_inspect(ref).get("RootFS") or {}).get("Layers") or [])


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
    pypi = ""
    if rest and rest[-1].startswith("+pypi="):
        pypi = rest.pop().removeprefix("+pypi=").partition("@")[0]
    sde: int | None = None
    if rest and rest[-1].startswith("SOURCE_DATE_EPOCH="):
        value = rest.pop().removeprefix("SOURCE_DATE_EPOCH=")
        sde = int(value) if value.isdigit() else None
    if len(rest) != 2:
        return None
    return BaseRecipe(suite=rest[0], include=include, mirror=rest[1], tool=words[0],
                      source_date_epoch=sde, pypi=pypi)


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
            **({"pypi": recipe.pypi, "pypi_sha256": labels.get("synth.base.pypi_sha256")}
               if recipe.pypi else {}),
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
                            source_date_epoch=int(sde) if isinstance(sde, int) else None,
                            pypi=str(raw.get("pypi") or ""))
        if recipe.pypi and raw.get("pypi_sha256") not in (None, pypi_digest(recipe.pypi)):
            raise BaseImageError(
                f"The artifact's base image {ref} was made with another {recipe.pypi} lock "
                "than this synth ships, so it cannot be recreated as it was.",
                hint="Load the original image (`docker load -i base.tar`) and tag it " + ref,
                image=ref)
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


# ------------------------------------------------------------------ a published base

@dataclass(frozen=True)
class PublishedBase:
    """A synth base as an artifact publishes it: under ``localhost/synth/…`` with a config
    that is a pure function of its layers and recipe (:func:`image_archive.base_config`),
    so its digest is known without the image and a base remade bit for bit has it too."""

    ref: str
    rootfs: tuple[str, ...]
    architecture: str
    #: The recipe's SOURCE_DATE_EPOCH (0 for a debootstrap base): the config's date.
    created: int
    #: The recipe, as the base's history line says how it was made.
    created_by: str

    def config(self, rootfs: Sequence[str] | None = None) -> bytes:
        return image_archive.base_config(self.rootfs if rootfs is None else rootfs,
                                         architecture=self.architecture,
                                         created=self.created, created_by=self.created_by)

    @property
    def digest(self) -> str:
        """The image ID Docker (classic store) and Podman show once it is loaded."""
        return image_archive.config_digest(self.config())

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "config_digest": self.digest, "rootfs": list(self.rootfs),
                "architecture": self.architecture, "created": self.created,
                "created_by": self.created_by}


def published_base(ref: str, rootfs: Sequence[str], labels: Mapping[str, str],
                   architecture: str) -> PublishedBase | None:
    """How the base ``ref`` (with these rootfs layers and labels) is published; None for a
    base synth did not make, or whose layers were not recorded."""
    recipe = recipe_for(ref)
    if recipe is None or not rootfs:
        return None
    describe = labels.get("synth.base.recipe") or recipe.describe()
    parsed = parse_recipe(describe)
    sde = parsed.source_date_epoch if parsed is not None else None
    name = ref.removeprefix(LOCAL_REGISTRY)
    return PublishedBase(ref=LOCAL_REGISTRY + name, rootfs=tuple(rootfs),
                         architecture=architecture, created=sde or 0, created_by=describe)


def publish_image(save: Callable[[str, Path], None], source: str, base: PublishedBase,
                  dest: Path) -> str:
    """Write ``base`` to the archive ``dest`` from the image ``source`` (its layers, saved
    by ``save``, an engine's ``docker save``; the config made anew); returns the archive's
    OCI manifest digest. The layers must be the recorded ones: another base is refused."""
    with tempfile.TemporaryDirectory(prefix="synth-base-save-", dir=dest.parent) as tmp:
        saved = Path(tmp) / "saved.tar"
        save(source, saved)
        config, layers = image_archive.read_saved(saved, Path(tmp))
        saved.unlink()
        got = list(json.loads(config).get("rootfs", {}).get("diff_ids") or [])
        if got != list(base.rootfs):
            raise BaseImageError(
                f"{source} on this engine is not the base the run was made on: its layers "
                f"are {_short(got)}, the run recorded {_short(base.rootfs)}.",
                hint="Load or remake the original base (`synth base bootstrap`), or export "
                "without carrying it.", image=source)
        return image_archive.write_image(dest, base.ref, base.config(), layers).manifest


def _image_id(engine: Engine, ref: str) -> str | None:
    return str(engine.image_inspect(ref)["Id"]) if engine.image_exists(ref) else None


def ensure_published(engine: Engine, base: Mapping[str, Any], artifact_dir: Path, *,
                     allow_mismatch: bool = False, say: Callable[[str], None] = print) -> str:
    """Before a rebuild: make the published base the Dockerfile names (``FROM
    localhost/synth/…``) resolve to the recorded digest. From the engine when it has it,
    else from the artifact's ``base/`` archive, else published anew from the run's base
    (checked, or remade from its recipe, by :func:`check_base`). Returns what was done."""
    pub = base["published"]
    ref, want = str(pub["ref"]), str(pub["config_digest"])
    if _image_id(engine, ref) == want:
        return f"{ref} is on this engine at the recorded digest {want[:19]}"
    archive = pub.get("archive")
    if archive and (artifact_dir / str(archive)).is_file() \
            and not (artifact_dir / str(archive)).is_symlink():
        engine.load_image(artifact_dir / str(archive))
        got = _image_id(engine, ref)
        if got != want:
            raise BaseImageError(f"{artifact_dir / str(archive)} loads {ref} as {got}, not "
                                 f"the recorded {want}.", image=ref)
        return f"{ref} loaded from {archive} (digest {want[:19]}, as recorded)"
    source = str(base.get("ref") or "")
    found = check_base(engine, base, allow_mismatch=allow_mismatch, say=say)
    made = PublishedBase(ref, tuple(_layers(engine, source)), str(pub["architecture"]),
                         int(pub["created"]), str(pub["created_by"]))
    with tempfile.TemporaryDirectory(prefix="synth-base-pub-") as tmp:
        publish_image(engine.save_image, source, made, Path(tmp) / "base.tar")
        engine.load_image(Path(tmp) / "base.tar")
    if made.digest == want:
        return f"{ref} published from {source} ({found}): digest {want[:19]}, as recorded"
    say(f"warning: {ref} made from {source} has digest {made.digest[:19]}, not the recorded "
        f"{want[:19]}: the base was remade, but not bit for bit (allowed).")
    return f"{ref} published from {source} ({found}), with another digest (allowed)"


def prepare_base(engine: Engine, base: Mapping[str, Any], artifact_dir: Path, *,
                 allow_mismatch: bool = False, say: Callable[[str], None] = print) -> str:
    """Before a rebuild: the base the artifact's Dockerfile names, on this engine and the
    one recorded — the published base (:func:`ensure_published`) when the manifest has one,
    else the run's own base (:func:`check_base`, for an artifact exported before)."""
    if isinstance(base.get("published"), Mapping):
        return ensure_published(engine, base, artifact_dir, allow_mismatch=allow_mismatch,
                                say=say)
    return check_base(engine, base, allow_mismatch=allow_mismatch, say=say)
