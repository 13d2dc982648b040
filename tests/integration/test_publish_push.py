"""``synth export --push REGISTRY``: the published base and the artifact's image, in a
registry the user names — here Debian's ``docker-registry``, started by the test on
127.0.0.1 (tests/integration/test_registry_base.py's fixture). The registry serves both
manifests by the digests export printed; the pushed image carries only OCI labels and
names its base by its published digest. The shared numpy-ext run's export, one build
(BuildKit's cache warm from the session's rebuild)."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_registry_base import registry  # noqa: F401  (the fixture)

from synth.config import Settings
from synth.export.artifact import ExportOptions, export_run
from synth.export.metadata import CitationOptions
from synth.verify.push import push_artifact

pytestmark = [pytest.mark.docker]

ACCEPT = ", ".join(("application/vnd.docker.distribution.manifest.v2+json",
                    "application/vnd.oci.image.manifest.v1+json"))


def _served_digest(host: str, repo: str, reference: str) -> str:
    req = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{reference}",
                                 method="HEAD", headers={"Accept": ACCEPT})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return str(resp.headers["Docker-Content-Digest"])


def test_export_pushes_the_base_and_the_image(
    registry: str, task_run: Callable[[str, str], Path],  # noqa: F811
    verified: Callable[..., Any], marked_ca: tuple[Path | None, bytes],
    wheelhouse: Path | None, engine: Any, tmp_path: Path,
) -> None:
    verified("numpy-ext", "good.sh")  # the session's rebuild: BuildKit's cache is warm
    run_dir = task_run("numpy-ext", "good.sh")
    host = registry.partition("|")[0]
    settings = Settings.load(artifacts_dir=tmp_path, ca_bundle=marked_ca[0],
                             wheelhouse=wheelhouse)
    art = export_run(ExportOptions(run_dir, out_dir=tmp_path / "art",
                                   citation=CitationOptions(license="MIT")),
                     settings, engine).artifact_dir
    pushed = push_artifact(art, host, settings, engine, lambda _m: None)  # what --push does
    try:
        assert pushed.base == f"{host}/synth/python:bookworm"
        assert pushed.image == f"{host}/numpy-ext:{run_dir.name}"
        for ref, digest in ((pushed.base, pushed.base_digest),
                            (pushed.image, pushed.image_digest)):
            repo, _, tag = ref.removeprefix(host + "/").rpartition(":")
            assert _served_digest(host, repo, tag) == digest
            assert _served_digest(host, repo, digest) == digest  # pullable by digest
        labels = engine.image_inspect(pushed.image)["Config"]["Labels"]
        assert all(k.startswith("org.opencontainers.image.") for k in labels), labels
        manifest = json.loads((art / "manifest.json").read_text())
        assert labels["org.opencontainers.image.base.digest"] == \
            manifest["base"]["published"]["config_digest"]
        assert pushed.lines() == [f"pushed: {pushed.base}@{pushed.base_digest}",
                                  f"pushed: {pushed.image}@{pushed.image_digest}"]
    finally:
        for ref in (pushed.base, pushed.image):
            subprocess.run(["docker", "rmi", ref], capture_output=True, check=False,
                           timeout=120)
