"""The base check before a rebuild, on a real engine: an artifact whose base image on the
engine has other rootfs layers than manifest.json records is refused (before any build),
and the real base matches what a run records. One tiny image build (one file)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.engine.base_images import (
    BaseRecipe,
    PublishedBase,
    bootstrap,
    check_base,
    parse_recipe,
    publish_image,
)
from synth.errors import BaseImageError
from synth.verify.command import VerifyOptions, verify

pytestmark = [pytest.mark.docker]

OTHER = "synth-test/durable-base:other"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"


def _layers(engine: Any, ref: str) -> list[str]:
    return list(engine.image_inspect(ref)["RootFS"]["Layers"])


def test_an_artifact_on_another_base_is_refused(engine: Any, base_image: str,
                                                tmp_path: Path) -> None:
    recorded = _layers(engine, base_image)
    assert check_base(engine, {"ref": base_image, "rootfs": recorded},
                      say=lambda _m: None) == "matches the recorded rootfs"
    subprocess.run(["docker", "build", "-q", "-t", OTHER, "-"], check=True, text=True,
                   capture_output=True, timeout=300,
                   input=f"FROM {base_image}\nRUN touch /synth-test-other-base\n")
    try:
        assert _layers(engine, OTHER) != recorded
        art = tmp_path / "art"
        shutil.copytree(GOLDEN, art)  # an exported artifact (tests/unit/test_render_golden)
        manifest = json.loads((art / "manifest.json").read_text())
        manifest["base"].update(ref=OTHER, rootfs=recorded)
        (art / "manifest.json").write_text(json.dumps(manifest))
        with pytest.raises(BaseImageError) as err:
            verify(VerifyOptions(target=str(art), rebuild=True, out_dir=tmp_path / "v"),
                   Settings.load(artifacts_dir=tmp_path), engine, say=lambda _m: None)
        assert f"The base image {OTHER} on this engine is not the one" in err.value.message
        assert not (tmp_path / "v" / "build.log").exists()  # refused before building
    finally:
        engine.remove_image(OTHER)


@pytest.mark.skipif(os.environ.get("SYNTH_TEST_BOOTSTRAP") != "1",
                    reason="two mmdebstrap bootstraps take over 3 minutes on 2 cores: opt in "
                    "with SYNTH_TEST_BOOTSTRAP=1")
def test_two_reproducible_bootstraps_give_the_same_rootfs(engine: Any, tmp_path: Path) -> None:
    """...and the same published base, bit for bit: the same archive bytes, the same digest,
    which is the image ID once it is loaded."""
    if shutil.which("mmdebstrap") is None:
        pytest.skip("mmdebstrap is not installed")
    recipe = BaseRecipe("bookworm", tool="mmdebstrap", source_date_epoch=1795947400)
    refs = ["synth-test/repro:a", "synth-test/repro:b"]
    published = "localhost/synth-test/repro:published"
    try:
        for ref in refs:
            bootstrap(engine, ref, recipe, force=True, say=lambda _m: None)
        a, b = (_layers(engine, ref) for ref in refs)
        assert a == b and len(a) == 1
        labels = engine.image_inspect(refs[0])["Config"]["Labels"]
        assert labels["synth.base.recipe"] == recipe.describe()
        assert parse_recipe(labels["synth.base.recipe"]) == recipe
        pubs = [PublishedBase(published, tuple(_layers(engine, ref)), "amd64", 1795947400,
                              recipe.describe()) for ref in refs]
        assert pubs[0].digest == pubs[1].digest
        for ref, pub in zip(refs, pubs, strict=True):
            publish_image(engine.save_image, ref, pub, tmp_path / f"{ref[-1]}.tar")
        assert (tmp_path / "a.tar").read_bytes() == (tmp_path / "b.tar").read_bytes()
        engine.load_image(tmp_path / "a.tar")
        assert engine.image_inspect(published)["Id"] == pubs[0].digest
    finally:
        for ref in [*refs, published]:
            if engine.image_exists(ref):
                engine.remove_image(ref)
