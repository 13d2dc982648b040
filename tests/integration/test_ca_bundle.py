"""The CA bundle reaches builds and containers but never an image layer.

Checked the hard way: ``docker save`` the image and search every layer for the
certificate body (``tests/image_layers.py``). A control build that COPYs the bundle proves
the search can find it.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
from image_layers import layers_containing

from synth.config import CONTAINER_CA_PATH, ca_env
from synth.engine import BuildRequest, ContainerSpec, DockerEngine, Mount, build_image
from synth.engine.build import find_build_cli

pytestmark = pytest.mark.docker


def fake_ca(tmp_path: Path) -> tuple[Path, bytes]:
    """A PEM-shaped file with a body no image could contain by chance."""
    body = secrets.token_hex(48).encode()
    path = tmp_path / "ca.pem"
    path.write_bytes(b"-----BEGIN CERTIFICATE-----\n" + body + b"\n-----END CERTIFICATE-----\n")
    return path, body


def build(tmp_path: Path, dockerfile: str, tag: str, ca: Path, base: str) -> None:
    ctx = tmp_path / tag.replace("/", "_").replace(":", "_")
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(dockerfile.format(base=base))
    (ctx / "ca.pem").write_bytes(ca.read_bytes())
    build_image(
        find_build_cli(),
        BuildRequest(context=ctx, tag=tag, secrets={"cacert": ca}, no_cache=True,
                     labels={"synth.temporary": "1"}),
        log_path=tmp_path / f"{ctx.name}.log",
    )


SECRET_DOCKERFILE = """\
FROM {base}
RUN --mount=type=secret,id=cacert test -s /run/secrets/cacert \\
 && sha256sum /run/secrets/cacert > /ca.sha256
"""

COPY_DOCKERFILE = """\
FROM {base}
COPY ca.pem /etc/ca.pem
"""


def test_build_secret_leaves_no_trace(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    ca, body = fake_ca(tmp_path)
    secret_tag, copy_tag = "synth-test/ca-secret:1", "synth-test/ca-copy:1"
    try:
        build(tmp_path, SECRET_DOCKERFILE, secret_tag, ca, base_image)
        build(tmp_path, COPY_DOCKERFILE, copy_tag, ca, base_image)
        # The secret was really there during the build ...
        with engine.container(ContainerSpec(image=secret_tag, network=False)) as c:
            assert c.sh("cat /ca.sha256").ok
        # ... and is in no layer, while the control build's COPY is found.
        assert layers_containing(engine, secret_tag, body, tmp_path) == []
        assert layers_containing(engine, copy_tag, body, tmp_path) != []
        history = engine.client.images.get(secret_tag).history()
        assert not any(body.decode() in (h.get("CreatedBy") or "") for h in history)
    finally:
        engine.remove_image(secret_tag)
        engine.remove_image(copy_tag)


def test_runtime_mount_is_not_committed(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    ca, body = fake_ca(tmp_path)
    ref = "synth-test/ca-mount:1"
    spec = ContainerSpec(
        image=base_image, network=False, env=ca_env(),
        mounts=[Mount(ca, CONTAINER_CA_PATH)],
    )
    try:
        with engine.container(spec) as c:
            assert body.decode() in c.sh(f"cat $PIP_CERT && test $SSL_CERT_FILE = "
                                         f"{CONTAINER_CA_PATH}").stdout
            c.commit(ref, labels={"synth.temporary": "1"})
        assert layers_containing(engine, ref, body, tmp_path) == []
    finally:
        engine.remove_image(ref)


def test_https_install_through_the_secret(
    engine: DockerEngine, base_image: str, ca_bundle: Path | None, tmp_path: Path
) -> None:
    """Behind this machine's intercepting proxy, pip only works with the bundle."""
    if ca_bundle is None:
        pytest.skip("no host CA bundle")
    tag = "synth-test/ca-pip:1"
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Dockerfile").write_text(
        f"FROM {base_image}\n"
        "RUN --mount=type=secret,id=cacert python3 -m venv /v "
        "&& PIP_CERT=/run/secrets/cacert /v/bin/pip install --no-cache-dir six==1.16.0\n"
    )
    try:
        build_image(find_build_cli(), BuildRequest(
            context=ctx, tag=tag, secrets={"cacert": ca_bundle}, no_cache=True,
            labels={"synth.temporary": "1"},
        ))
        with engine.container(ContainerSpec(image=tag, network=False)) as c:
            assert c.sh("/v/bin/python -c 'import six; print(six.__version__)'").stdout == (
                "1.16.0\n"
            )
        # The last certificate of the bundle (an intercepting proxy appends its own).
        last = ca_bundle.read_bytes().split(b"-----BEGIN CERTIFICATE-----")[-1]
        line = last.strip().splitlines()[3]
        assert layers_containing(engine, tag, line, tmp_path) == []
    finally:
        engine.remove_image(tag)
