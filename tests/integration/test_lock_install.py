"""The lock installs like the live environment did (real Docker).

The rebuild installs the lock with a hash-pinned uv; what it builds from source takes its
build requirements from the artifact's ``build-constraints.lock`` only. Proven by the
fingerprint: every distribution's files (RECORD's list, installer bookkeeping aside) are
equal live and rebuilt. ``good.sh`` shares the rebuild test_verify_tasks makes;
``sdist.sh`` adds one rebuild (~1 min) with an sdist-only distribution (docopt), ``legacy.sh``
another with docopt installed by pip's legacy ``setup.py install`` (an egg-info live, a
dist-info rebuilt: the same module files) and a local setup.py-only helper installed that
way from its folder (replayed as a native step: the same egg-info rebuilt).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "optional-extras"


def _content(doc: dict[str, Any]) -> list[Any]:
    fp = doc["fingerprint"]
    assert fp["status"] == "compared", fp
    return [c for c in fp["content"] if c["kind"] == "content"]


def test_wheels_install_file_for_file_with_uv(verified: Callable[..., Any]) -> None:
    outcome = verified(TASK, "good.sh")
    doc = outcome.document
    art = Path(doc["target"]["artifact_dir"])
    dockerfile = (art / "Dockerfile").read_text()
    assert "/tmp/synth/uv/bin/uv pip install" in dockerfile
    # uv comes from its hash-pinned wheel, unpacked by install-uv.py: no pip installs it
    assert "install-uv.py /tmp/synth/installer.lock /tmp/synth/uv" in dockerfile
    assert "--target /tmp/synth/uv" not in dockerfile
    assert "uv==" in (art / "installer.lock").read_text()
    assert _content(doc) == []
    assert doc["fingerprint"]["content_equal"] is True
    assert doc["fingerprint"]["unexplained"] == []


def test_sdist_builds_from_constraints_file_for_file(verified: Callable[..., Any]) -> None:
    outcome = verified(TASK, "sdist.sh")
    doc = outcome.document
    art = Path(doc["target"]["artifact_dir"])
    build = (art / "build-constraints.lock").read_text()
    assert "Sdists: docopt" in build
    assert "setuptools==" in build and "wheel==" in build and "--hash=sha256:" in build
    assert "--build-constraints /tmp/synth/build-constraints.lock --require-build-hashes" in (
        art / "Dockerfile").read_text()
    # docopt was built from its sdist in the rebuild and installed the same files as live.
    assert _content(doc) == [], doc["fingerprint"]["summary"]
    assert doc["fingerprint"]["packages_equal"] is True
    assert doc["fingerprint"]["unexplained"] == [], doc["fingerprint"]["unexplained"]
    assert outcome.exit_code == 0


def test_legacy_egg_info_install_is_the_same_code(verified: Callable[..., Any]) -> None:
    """pip 23.0 without `wheel` installs docopt through `setup.py install` (an egg-info);
    the rebuild installs it from a built wheel (a dist-info): the module files are equal,
    the metadata layout is named and explained, and fidelity holds."""
    outcome = verified(TASK, "legacy.sh")
    doc = outcome.document
    fp = doc["fingerprint"]
    assert fp["status"] == "compared", fp
    assert fp["packages_equal"] is True, fp["summary"]
    assert _content(doc) == [], fp["summary"]  # docopt.py equal, file for file
    metadata = [c for c in fp["content"] if c["kind"] == "metadata"]
    assert [(c["key"], c["a"], c["b"]) for c in metadata] == [
        ("docopt", "docopt-0.6.2.egg-info", "docopt-0.6.2.dist-info")], fp["summary"]
    assert "installed-files.txt vs RECORD" in metadata[0]["detail"]
    explained = {(d["section"], d["key"]): d["explained"] for d in fp["differences"]}
    assert "metadata layout differs" in (explained[("content", "docopt")] or "")
    assert fp["unexplained"] == [], fp["unexplained"]
    assert doc["fidelity"]["reaches_live_level"] is True, doc["fidelity"]
    assert doc["fidelity"]["failures"] == [], doc["fidelity"]
    assert outcome.exit_code == 0
    # The local helper went the same legacy way from tools/localhelper: replayed by the
    # same pip, it is the same egg-info in the rebuild (packages_equal above covers it).
    art = Path(doc["target"]["artifact_dir"])
    assert "pip-local -> localhelper==0.1" in (art / "Dockerfile").read_text()
    assert not any(c["key"] == "localhelper" for c in fp["content"]), fp["summary"]
