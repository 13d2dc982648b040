"""A base a reader can always get: the image archive synth writes (both ``docker load``'s
and the OCI layout, byte-identical twice, the config as given so the image ID is its
sha256), the published base's digest as a pure function of its layers and recipe, and
verify's way to it — on the engine, from the artifact's ``base/`` archive, or published
anew from the run's base (a fake engine that loads archives as Docker does)."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from synth.engine import image_archive
from synth.engine.base_images import (
    PublishedBase,
    ensure_published,
    prepare_base,
    publish_image,
    published_base,
    recipe_for,
)
from synth.errors import BaseImageError


def _layer(tmp: Path, text: bytes = b"hello\n") -> tuple[Path, str]:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        info = tarfile.TarInfo("etc/hello")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    path = tmp / f"layer-{hashlib.sha256(text).hexdigest()[:8]}.tar"
    path.write_bytes(raw.getvalue())
    return path, "sha256:" + hashlib.sha256(raw.getvalue()).hexdigest()


def _published(diff_id: str, **kw: Any) -> PublishedBase:
    return PublishedBase(**{"ref": "localhost/synth/python:bookworm", "rootfs": (diff_id,),
                            "architecture": "amd64", "created": 0,
                            "created_by": "debootstrap --variant=minbase bookworm x", **kw})


def test_the_archive_is_both_layouts_and_the_same_bytes_twice(tmp_path: Path) -> None:
    layer, diff_id = _layer(tmp_path)
    base = _published(diff_id)
    one = image_archive.write_image(tmp_path / "a.tar", base.ref, base.config(), [layer])
    two = image_archive.write_image(tmp_path / "b.tar", base.ref, base.config(), [layer])
    assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
    assert one == two and one.config == base.digest and one.layers == (diff_id,)
    with tarfile.open(tmp_path / "a.tar") as tar:
        names = tar.getnames()
        read = {n: tar.extractfile(n).read() for n in names  # type: ignore[union-attr]
                if tar.getmember(n).isreg()}
        assert {m.mtime for m in tar.getmembers()} == {0}
    assert names[:2] == ["blobs", "blobs/sha256"] and names[2:] == sorted(names[2:])
    assert {n for n in names if "/" not in n} == {"blobs", "index.json", "manifest.json",
                                                  "oci-layout"}
    docker = json.loads(read["manifest.json"])
    assert docker == [{"Config": "blobs/sha256/" + base.digest[7:], "Layers": [
        "blobs/sha256/" + diff_id[7:]], "RepoTags": [base.ref]}]
    index = json.loads(read["index.json"])
    assert index["manifests"][0]["digest"] == one.manifest
    assert index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"] == base.ref
    manifest = read["blobs/sha256/" + one.manifest[7:]]
    assert "sha256:" + hashlib.sha256(manifest).hexdigest() == one.manifest
    assert json.loads(manifest)["layers"][0] == {
        "mediaType": image_archive.LAYER_TYPE, "digest": diff_id, "size": layer.stat().st_size}
    assert read["blobs/sha256/" + diff_id[7:]] == layer.read_bytes()


def test_a_config_naming_other_layers_is_refused(tmp_path: Path) -> None:
    layer, _ = _layer(tmp_path)
    _, other = _layer(tmp_path, b"other\n")
    with pytest.raises(BaseImageError, match="other layers"):
        image_archive.write_image(tmp_path / "a.tar", "x", _published(other).config(), [layer])


def test_the_published_digest_depends_on_layers_and_recipe_only() -> None:
    a = _published("sha256:" + "1" * 64)
    assert a.digest == _published("sha256:" + "1" * 64).digest
    assert a.digest != _published("sha256:" + "2" * 64).digest
    assert a.digest != _published("sha256:" + "1" * 64, created=1795947400).digest
    config = json.loads(a.config())
    assert "Labels" not in config["config"]  # no label of synth's reaches the image
    assert config["config"] == {"Cmd": ["bash"], "Env": [image_archive.DEFAULT_PATH]}
    assert config["created"] == "1970-01-01T00:00:00Z"


def test_a_synth_base_is_published_under_localhost() -> None:
    labels = {"synth.base.recipe": "mmdebstrap --variant=minbase --include=python3 bookworm "
                                   "https://snapshot.example/ SOURCE_DATE_EPOCH=1795947400"}
    pub = published_base("synth/python:bookworm", ["sha256:" + "1" * 64], labels, "amd64")
    assert pub is not None and pub.ref == "localhost/synth/python:bookworm"
    assert pub.created == 1795947400 and pub.created_by == labels["synth.base.recipe"]
    assert published_base("localhost/synth/python:bookworm", ["sha256:" + "1" * 64], {},
                          "amd64") is not None
    assert published_base("debian:bookworm", ["sha256:" + "1" * 64], {}, "amd64") is None
    assert published_base("synth/python:bookworm", [], {}, "amd64") is None  # no layers known
    assert recipe_for("localhost/synth/python:bookworm") == recipe_for("synth/python:bookworm")


def test_only_a_base_the_artifact_cannot_name_warns_of_its_missing_digest(
        tmp_path: Path) -> None:
    """synth's own base is named by the digest synth publishes it under (README, section
    1): the "rebuild on a machine that has that same image" warning would be stale there;
    another local base without a registry digest still gets it, in every report."""
    from distill_runs import make_run_dir

    from synth.distill.load import load_run
    from synth.distill.plan import distill
    from synth.distill.report import no_digest_warning
    from synth.export.publish import without_stale_base_warning

    for name, base in (("ours", "synth/python:bookworm"), ("theirs", "lab/python:3.11")):
        run_dir = make_run_dir(tmp_path / name)
        record = json.loads((run_dir / "run.json").read_text())
        record["base_image"]["ref"] = base
        (run_dir / "run.json").write_text(json.dumps(record))
        run = load_run(run_dir)
        plan, report = distill(run)
        assert no_digest_warning(run) in report.warnings  # distill does not know
        kept = without_stale_base_warning(plan, run, report).warnings
        assert (no_digest_warning(run) in kept) == (name == "theirs"), kept
        assert [w for w in report.warnings if w not in kept] == (
            [no_digest_warning(run)] if name == "ours" else [])


class LoadingEngine:
    """Images by name; ``docker save`` writes the named one, ``docker load`` reads an
    archive's ``manifest.json`` and tags its image as Docker does (ID: the config's
    sha256)."""

    def __init__(self, tmp: Path) -> None:
        self.images: dict[str, dict[str, Any]] = {}
        self.layers: dict[str, Path] = {}
        self.loaded: list[Path] = []
        self.tmp = tmp

    def add(self, ref: str, layer: Path, diff_id: str) -> None:
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Labels": {"synth.kind": "base"}},
                             "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()
        self.layers[diff_id] = layer
        self.images[ref] = {"Id": "sha256:" + hashlib.sha256(config).hexdigest(),
                            "RootFS": {"Layers": [diff_id]}, "config": config,
                            "Config": {"Labels": {}}}

    def image_exists(self, ref: str) -> bool:
        return ref in self.images

    def image_inspect(self, ref: str) -> dict[str, Any]:
        return self.images[ref]

    def save_image(self, ref: str, dest: Path) -> None:
        image = self.images[ref]
        with tarfile.open(dest, "w") as tar:
            blobs = {"c.json": image["config"], "manifest.json": json.dumps([{
                "Config": "c.json", "RepoTags": [ref], "Layers": ["l/layer.tar"]}]).encode(),
                "l/layer.tar": self.layers[image["RootFS"]["Layers"][0]].read_bytes()}
            for name, data in blobs.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    def load_image(self, archive: Path) -> None:
        self.loaded.append(archive)
        with tarfile.open(archive) as tar:
            entry = json.loads(tar.extractfile("manifest.json").read())[0]  # type: ignore[union-attr]
            config = tar.extractfile(entry["Config"]).read()  # type: ignore[union-attr]
        self.images[entry["RepoTags"][0]] = {
            "Id": "sha256:" + hashlib.sha256(config).hexdigest(), "config": config,
            "RootFS": {"Layers": json.loads(config)["rootfs"]["diff_ids"]}}


def _manifest_base(pub: PublishedBase, archive: str | None = None) -> dict[str, Any]:
    return {"ref": "synth/python:bookworm", "digest": None, "rootfs": list(pub.rootfs),
            "recipe": None, "published": {**pub.to_json(), "archive": archive,
                                          "manifest_digest": None}}


def test_verify_finds_the_published_base_three_ways(tmp_path: Path) -> None:
    layer, diff_id = _layer(tmp_path)
    pub = _published(diff_id)
    engine: Any = LoadingEngine(tmp_path)
    engine.add("synth/python:bookworm", layer, diff_id)
    said: list[str] = []
    # 1. from the run's base on the engine: published anew, loaded, the recorded digest
    got = prepare_base(engine, _manifest_base(pub), tmp_path, say=said.append)
    assert "published from synth/python:bookworm" in got and "as recorded" in got
    assert engine.images[pub.ref]["Id"] == pub.digest
    # 2. already there
    assert "on this engine at the recorded digest" in ensure_published(
        engine, _manifest_base(pub), tmp_path, say=said.append)
    # 3. from the artifact's own archive, on an engine that has neither
    art = tmp_path / "art"
    (art / "base").mkdir(parents=True)
    publish_image(engine.save_image, "synth/python:bookworm", pub, art / "base" / "b.tar")
    bare: Any = LoadingEngine(tmp_path)
    got = ensure_published(bare, _manifest_base(pub, "base/b.tar"), art, say=said.append)
    assert got.startswith(f"{pub.ref} loaded from base/b.tar")
    assert bare.images[pub.ref]["Id"] == pub.digest and said == []


def test_an_archive_of_another_base_is_refused(tmp_path: Path) -> None:
    layer, diff_id = _layer(tmp_path)
    other, other_id = _layer(tmp_path, b"other\n")
    engine: Any = LoadingEngine(tmp_path)
    engine.add("synth/python:bookworm", other, other_id)
    with pytest.raises(BaseImageError, match="not the base the run was made on"):
        publish_image(engine.save_image, "synth/python:bookworm", _published(diff_id),
                      tmp_path / "b.tar")
    art = tmp_path / "art"
    (art / "base").mkdir(parents=True)
    publish_image(engine.save_image, "synth/python:bookworm", _published(other_id),
                  art / "base" / "b.tar")
    with pytest.raises(BaseImageError, match="not the recorded"):
        ensure_published(LoadingEngine(tmp_path), _manifest_base(_published(diff_id),
                                                                 "base/b.tar"), art)
    assert layer.exists()
