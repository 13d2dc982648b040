"""The base check before a rebuild, on a real engine: an artifact whose base image on the
engine has other rootfs layers than manifest.json records is refused (before any build),
and the real base matches what a run records. One tiny image build (one file)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from synth.base_images import check_base
from synth.config import Settings
from synth.errors import BaseImageError
from synth.verify_cmd import VerifyOptions, verify

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
                   Settings.load(artifacts_dir=tmp_path), say=lambda _m: None)
        assert f"The base image {OTHER} on this engine is not the one" in err.value.message
        assert not (tmp_path / "v" / "build.log").exists()  # refused before building
    finally:
        engine.remove_image(OTHER)
