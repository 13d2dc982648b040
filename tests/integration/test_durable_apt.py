"""Content-addressed apt on a real engine, without the Debian mirror.

The shared numpy-ext ``good.sh`` run (conftest ``task_run``) recorded, from apt's own
indexes in the live container, the sha256, size and pool path of every .deb it pins. Here
a local "snapshot" mirror on 127.0.0.1 is laid out from those exact files (pool paths, the
way snapshot.debian.org serves them), the artifact is exported with ``--apt-snapshot``
pointing at it, and built with the recorded mirror's host resolving to 127.0.0.1 (where
nothing listens), so every .deb must come from the local mirror. Then the same artifact,
with one .deb's bytes changed on the mirror, must fail the build naming that file.
Two builds in all; the second fails at its first RUN.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shutil
import socket
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from synth.config import Settings
from synth.errors import BuildError
from synth.export.artifact import ExportOptions, export_run
from synth.verify.build import build_artifact

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "numpy-ext"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    served: list[str]

    def log_message(self, format: str, *args: Any) -> None:
        self.served.append(self.path)


@pytest.fixture(scope="module")
def apt_run(task_run: Callable[[str, str], Path]) -> tuple[Path, dict[str, Any]]:
    run_dir = task_run(TASK, "good.sh")
    apt = json.loads((run_dir / "state" / "apt.json").read_text())
    return run_dir, apt


@pytest.fixture(scope="module")
def mirror(apt_run: tuple[Path, dict[str, Any]],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, list[str]]]:
    """``(root, url, served paths)``: the exact .debs under their pool paths, on 127.0.0.1."""
    _run_dir, apt = apt_run
    root = tmp_path_factory.mktemp("apt-mirror")
    for rec in apt["debs"].values():
        dest = root / rec["filename"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        url = rec["mirror"] + "/" + urllib.parse.quote(rec["filename"])
        with urllib.request.urlopen(url, timeout=120) as resp:
            dest.write_bytes(resp.read())
        # The hash apt's index gave is the hash of the file the mirror serves.
        assert hashlib.sha256(dest.read_bytes()).hexdigest() == rec["sha256"], rec
        assert dest.stat().st_size == rec["size"]
    served: list[str] = []
    handler = type("Handler", (_Quiet,), {"served": served})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}/", served
    finally:
        server.shutdown()
        server.server_close()


def _nothing_on_port_80() -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", 80)) != 0


def test_the_run_recorded_every_deb_from_apt_indexes(apt_run: tuple[Path, dict[str, Any]]
                                                     ) -> None:
    _run_dir, apt = apt_run
    pins = {n: v for n, v in apt["final"].items() if apt["base"].get(n) != v}
    assert "gcc" in pins
    assert apt["debs_missing"] == []
    assert sorted(apt["debs"]) == sorted(pins)
    for name, rec in apt["debs"].items():
        assert rec["version"] == pins[name]
        assert len(rec["sha256"]) == 64 and rec["size"] > 0
        assert rec["filename"].startswith("pool/main/") and rec["filename"].endswith(".deb")
        assert rec["arch"] in ("amd64", "all", "arm64")


def test_rebuilds_from_a_local_snapshot_mirror_and_refuses_a_changed_deb(
    apt_run: tuple[Path, dict[str, Any]], mirror: tuple[Path, str, list[str]],
    marked_ca: tuple[Path | None, bytes], wheelhouse: Path | None, engine: Any,
    tmp_path: Path,
) -> None:
    if not _nothing_on_port_80():
        pytest.skip("something listens on 127.0.0.1:80, so the mirror cannot be made "
                    "unreachable there")
    run_dir, apt = apt_run
    root, url, served = mirror
    settings = Settings.load(artifacts_dir=run_dir.parents[2], ca_bundle=marked_ca[0],
                             wheelhouse=wheelhouse)
    art = export_run(ExportOptions(
        run_dir, out_dir=tmp_path / "art", apt_snapshot=url), settings, engine).artifact_dir
    manifest = json.loads((art / "manifest.json").read_text())
    assert manifest["apt"]["hashed"] == len(apt["debs"]) and manifest["apt"]["unhashed"] == []
    assert manifest["apt"]["snapshot_template"] == url
    lock = (art / "apt.lock").read_text()
    for name, rec in apt["debs"].items():
        assert f"{name}={rec['version']} {rec['arch']} {rec['sha256']} {rec['size']} " in lock
    dockerfile = (art / "Dockerfile").read_text()
    assert "apt-get update" not in dockerfile  # every .deb is fetched by URL
    # The recorded mirror's hosts resolve to 127.0.0.1, where nothing listens.
    dead = {urllib.parse.urlsplit(r["mirror"]).hostname or "": "127.0.0.1"
            for r in apt["debs"].values()}
    tag = "synth-test/durable-apt:mirror"
    build_artifact(art, tag, settings, network="host", add_hosts=dead,
                   log_path=tmp_path / "build.log")
    try:
        fetched = {urllib.parse.unquote(p.lstrip("/")) for p in served}
        assert {r["filename"] for r in apt["debs"].values()} <= fetched
        log = (tmp_path / "build.log").read_text()
        assert "not fetched from http://" in log  # the dead mirror was tried first
        from synth.engine import ContainerSpec

        with engine.container(ContainerSpec(image=tag, network=False)) as c:
            res = c.exec(["dpkg-query", "-W", "-f", "${Package}=${Version}\n", "gcc"])
        assert res.stdout.strip() == f"gcc={apt['debs']['gcc']['version']}"
    finally:
        engine.remove_image(tag)

    # One .deb on the mirror differs from apt.lock: the build fails naming it.
    victim = apt["debs"]["gcc"]
    path = root / victim["filename"]
    original = path.read_bytes()
    path.write_bytes(original[:-1] + bytes([original[-1] ^ 0xFF]))
    try:
        with pytest.raises(BuildError) as err:
            build_artifact(art, "synth-test/durable-apt:bad", settings, network="host",
                           add_hosts=dead, log_path=tmp_path / "bad.log")
    finally:
        shutil.copyfile(root / victim["filename"], tmp_path / "tampered.deb")
        path.write_bytes(original)
    deb = victim["filename"].rsplit("/", 1)[-1]
    assert f"{deb}: FAILED" in err.value.message, err.value.message
    assert "differ from the sha256 apt.lock records" in err.value.message
