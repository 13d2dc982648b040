"""A container image as one deterministic tar that ``docker load`` and ``podman load`` read.

The archive holds both layouts at once, as Docker 25's ``docker save`` writes them:

    oci-layout, index.json      the OCI image layout (Podman, skopeo, containerd)
    manifest.json               ``docker save``'s manifest (Docker's classic image store)
    blobs/sha256/<hex>          the config, each layer (an uncompressed tar), the OCI manifest

Entries are sorted, every mtime is the given epoch, owner 0 without names, mode 0644, so
the same image gives the same bytes. The config is written as given: the image ID an
engine shows after loading it is the config's sha256 (Docker's classic store, Podman), or
the OCI manifest's (Docker's containerd store); :class:`ImageDigests` has both.

:func:`base_config` is the config of a *published* synth base: nothing but its layers, its
architecture, ``PATH``, ``bash`` as the command and one history line naming the recipe —
no labels, no date but the recipe's ``SOURCE_DATE_EPOCH``. It is a pure function of those,
so a base rebuilt bit for bit from its recipe has the same digest (docs/export.md).
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from synth.errors import BaseImageError

CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
#: The PATH Docker and Podman give a container whose image sets none.
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CHUNK = 1 << 20
#: ``platform.machine()`` -> the OCI architecture of the same machine.
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
         "s390x": "s390x", "riscv64": "riscv64", "i686": "386"}


@dataclass(frozen=True)
class ImageDigests:
    """What identifies a written image: its config (the image ID Docker's classic store
    and Podman show), its OCI manifest (the ID of Docker's containerd store, and what a
    registry would serve if it kept the layers uncompressed) and its layers (diff IDs)."""

    config: str
    manifest: str
    layers: tuple[str, ...]


def canonical_json(doc: Mapping[str, Any] | Sequence[Any]) -> bytes:
    """Sorted keys, no spaces: one byte string per document."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def oci_arch(machine: str) -> str:
    """``x86_64`` -> ``amd64``; an architecture already in OCI's words is kept."""
    return _ARCH.get(machine, machine)


def iso_time(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def base_config(diff_ids: Sequence[str], *, architecture: str, created: int,
                created_by: str) -> bytes:
    """The config of a published base: a pure function of its layers and its recipe."""
    when = iso_time(created)
    return canonical_json({
        "architecture": architecture, "os": "linux", "created": when,
        "config": {"Cmd": ["bash"], "Env": [DEFAULT_PATH]},
        "history": [{"created": when, "created_by": created_by}],
        "rootfs": {"type": "layers", "diff_ids": list(diff_ids)},
    })


def config_digest(config: bytes) -> str:
    return "sha256:" + hashlib.sha256(config).hexdigest()


def _file_sha256(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
            size += len(chunk)
    return "sha256:" + h.hexdigest(), size


def _info(name: str, size: int, epoch: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = size, epoch, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _blob(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def write_image(dest: Path, ref: str, config: bytes, layers: Sequence[Path],
                epoch: int = 0) -> ImageDigests:
    """Write the image made of ``config`` and the uncompressed layer tars ``layers`` to
    ``dest`` as one archive both engines load under ``ref``; returns its digests. The
    config's ``rootfs.diff_ids`` must be the layers' sha256, in order."""
    sums = [_file_sha256(p) for p in layers]
    diff_ids = [d for d, _ in sums]
    if json.loads(config).get("rootfs", {}).get("diff_ids") != diff_ids:
        raise BaseImageError(f"The image config for {ref} names other layers than the ones "
                             "written with it.")
    cfg = config_digest(config)
    manifest = canonical_json({
        "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": cfg, "size": len(config)},
        "layers": [{"mediaType": LAYER_TYPE, "digest": d, "size": n} for d, n in sums]})
    man = config_digest(manifest)
    index = canonical_json({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": MANIFEST_TYPE, "digest": man, "size": len(manifest),
                       "annotations": {"io.containerd.image.name": ref,
                                       "org.opencontainers.image.ref.name": ref}}]})
    docker = canonical_json([{"Config": _blob(cfg), "RepoTags": [ref],
                              "Layers": [_blob(d) for d in diff_ids]}])
    small: dict[str, bytes] = {"oci-layout": b'{"imageLayoutVersion":"1.0.0"}',
                               "index.json": index, "manifest.json": docker,
                               _blob(cfg): config, _blob(man): manifest}
    files: dict[str, Path] = {_blob(d): p for d, p in zip(diff_ids, layers, strict=True)}
    tmp = dest.with_name(f".{dest.name}.tmp")
    with tmp.open("wb") as raw, tarfile.open(fileobj=raw, mode="w",
                                             format=tarfile.PAX_FORMAT) as tar:
        for folder in ("blobs", "blobs/sha256"):
            d = _info(folder, 0, epoch)
            d.type, d.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(d)
        for name in sorted({*small, *files}):
            if name in small:
                tar.addfile(_info(name, len(small[name]), epoch), io.BytesIO(small[name]))
            else:
                with files[name].open("rb") as fh:
                    tar.addfile(_info(name, files[name].stat().st_size, epoch), fh)
    tmp.replace(dest)
    return ImageDigests(config=cfg, manifest=man, layers=tuple(diff_ids))


# --------------------------------------------------------------- reading a docker save

def _member(tar: tarfile.TarFile, name: str) -> IO[bytes]:
    try:
        info = tar.getmember(name)
    except KeyError:
        raise BaseImageError(f"The saved image lacks {name}.") from None
    fh = tar.extractfile(info) if info.isreg() else None
    if fh is None:
        raise BaseImageError(f"The saved image's {name} is not a regular file.")
    return fh


def read_saved(saved: Path, workdir: Path) -> tuple[bytes, list[Path]]:
    """The config bytes and the layer tars (written into ``workdir``) of the one image in
    the ``docker save`` archive ``saved``."""
    with tarfile.open(saved) as tar:
        entries = json.loads(_member(tar, "manifest.json").read())
        if not isinstance(entries, list) or len(entries) != 1:
            raise BaseImageError(f"{saved} holds {len(entries)} images; one was expected.")
        entry = entries[0]
        config = _member(tar, str(entry["Config"])).read()
        layers = []
        for i, name in enumerate(entry["Layers"]):
            path = workdir / f"layer-{i}.tar"
            with path.open("wb") as out:
                shutil.copyfileobj(_member(tar, str(name)), out, _CHUNK)
            layers.append(path)
    return config, layers
