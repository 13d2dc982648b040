"""Fingerprints of real images: the same image twice is equal, a changed one differs exactly."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synth.compare.fingerprint import compare_fingerprints
from synth.engine.base import ContainerSpec
from synth.engine.fingerprint import ImageProbe, fingerprint

PKG_SETUP = """\
from setuptools import setup
setup(name="tiny_extra", version="0.3.0", packages=["tiny_extra"])
"""


@pytest.fixture(scope="module")
def extra_image(engine: Any, base_image: str, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[str]:
    """The base plus a venv with one legacy `setup.py install` package and a workspace .so."""
    src = tmp_path_factory.mktemp("pkg") / "tiny"
    (src / "tiny_extra").mkdir(parents=True)
    (src / "tiny_extra" / "__init__.py").write_text("VALUE = 3\n")
    (src / "setup.py").write_text(PKG_SETUP)
    ref = f"synth-test/fingerprint:{uuid.uuid4().hex[:8]}"
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        c.copy_in(src, "/tmp")
        r = c.sh(
            "python3 -m venv /opt/venv && /opt/venv/bin/pip install -q --no-index "
            "--no-build-isolation /tmp/tiny && mkdir -p /workspace && "
            "printf '\\177ELFfake' > /workspace/_native.so && rm -rf /tmp/tiny"
        )
        assert r.ok, r.output
        c.commit(ref, labels={"synth.temporary": "1"})
    try:
        yield ref
    finally:
        engine.remove_image(ref)


def test_same_image_twice_is_equal(engine: Any, base_image: str) -> None:
    a = ImageProbe(engine).fingerprint(base_image, "python3")
    b = ImageProbe(engine).fingerprint(base_image, "python3")
    cmp = compare_fingerprints(a, b)
    assert cmp.equal, cmp.summary()
    assert a.glibc and a.glibc.startswith("2.")
    assert a.dpkg and "python3" in a.dpkg
    assert "pip" in a.effective


def test_extra_package_and_native_file_differ(engine: Any, base_image: str,
                                              extra_image: str) -> None:
    base = ImageProbe(engine).fingerprint(base_image, "python3")
    same_interp = ImageProbe(engine).fingerprint(extra_image, "python3")
    # The system interpreter sees the same packages; the .so in /workspace is new.
    cmp = compare_fingerprints(base, same_interp)
    assert cmp.packages_equal and cmp.content_equal, cmp.summary()
    assert [(c.kind, c.key) for c in cmp.native] == [("added", "/workspace/_native.so")]

    venv = ImageProbe(engine).fingerprint(extra_image, "/opt/venv/bin/python")
    added = {c.key: c for c in compare_fingerprints(base, venv).packages if c.kind == "added"}
    assert "tiny-extra" in added
    assert added["tiny-extra"].b == "0.3.0"
    assert added["tiny-extra"].detail == "setup.py install"


def test_fingerprint_in_running_container(engine: Any, extra_image: str, tmp_path: Path) -> None:
    with engine.container(ContainerSpec(image=extra_image, network=False)) as c:
        fp = fingerprint(c, "/opt/venv/bin/python", workdir="/workspace")
        left = c.sh("ls /tmp")
    assert fp.effective["tiny-extra"].source == "setup.py install"
    assert "synth-fingerprint" not in left.stdout  # the probe cleans up after itself


@pytest.fixture(scope="module")
def dpkg_images(engine: Any, base_image: str) -> Iterator[dict[str, str]]:
    """The base with Debian's python3-wheel removed by dpkg (the package set differs), and the
    base with a file of python3-wheel edited in place (same package version)."""
    refs: dict[str, str] = {}
    scripts = {
        "removed": "dpkg --remove --force-depends python3-wheel",
        "edited": "sed -i '1i # edited by the agent' "
                  "/usr/lib/python3/dist-packages/wheel/__init__.py",
    }
    try:
        for name, script in scripts.items():
            with engine.container(ContainerSpec(image=base_image, network=False)) as c:
                r = c.sh(script)
                assert r.ok, r.output
                refs[name] = f"synth-test/fingerprint-dpkg:{name}-{uuid.uuid4().hex[:8]}"
                c.commit(refs[name], labels={"synth.temporary": "1"})
        yield refs
    finally:
        for ref in refs.values():
            engine.remove_image(ref)


def test_paths_of_a_changed_debian_package_are_explained_by_it(
        engine: Any, base_image: str, dpkg_images: dict[str, str]) -> None:
    from synth.verify.command import compare_images

    out = compare_images(engine, base_image, dpkg_images["removed"], "python3", "python3",
                         "/workspace")
    assert out.status == "compared", out.reason
    diffs = {(d["section"], d["key"]): d for d in out.comparison["differences"]}
    wheel = diffs[("packages", "wheel")]
    assert wheel["kind"] == "removed"
    assert re.search(r"Debian package python3-wheel \(\S+ -> absent\)", wheel["explained"] or "")
    # The package set is compared on its own: the one unexplained line is the package.
    assert list(out.unexplained) == ["dpkg: removed python3-wheel"], out.unexplained


def test_edited_file_of_a_debian_package_is_named_not_explained(
        engine: Any, base_image: str, dpkg_images: dict[str, str]) -> None:
    from synth.verify.command import compare_images

    out = compare_images(engine, dpkg_images["edited"], base_image, "python3", "python3",
                         "/workspace")
    assert out.status == "compared", out.reason
    assert out.comparison["dpkg"] == []
    lines = "\n".join(out.unexplained)
    assert "content: content wheel" in lines
    assert "1 file differs: changed wheel/__init__.py" in lines, lines
    assert ("patched: patched wheel: wheel/__init__.py" in lines
            and "md5 differs from python3-wheel's md5sums" in lines
            and re.search(r"Debian package python3-wheel \S+ on both sides", lines)), lines
    assert out.explained == ()


SAME_SETUP = """\
from setuptools import setup
setup(name="tiny_same", version="1.0.0", packages=["tiny_same"])
"""


@pytest.fixture(scope="module")
def same_version_images(engine: Any, base_image: str, tmp_path_factory: pytest.TempPathFactory
                        ) -> Iterator[tuple[str, str]]:
    """Two images, each with a wheel of tiny_same 1.0.0 built here and installed in a venv:
    the second's module has other content and one more file."""
    refs: list[str] = []
    try:
        for i, extra in enumerate(({}, {"extra.py": "X = 1\n"})):
            src = tmp_path_factory.mktemp(f"same{i}") / "tiny"
            (src / "tiny_same").mkdir(parents=True)
            (src / "tiny_same" / "__init__.py").write_text(f"VALUE = {i}\n")
            for name, text in extra.items():
                (src / "tiny_same" / name).write_text(text)
            (src / "setup.py").write_text(SAME_SETUP)
            with engine.container(ContainerSpec(image=base_image, network=False)) as c:
                c.copy_in(src, "/tmp")
                # The wheel is built by the system Python (Debian's python3-wheel).
                r = c.sh("python3 -m venv /opt/venv && cd /tmp/tiny && python3 setup.py -q "
                         "bdist_wheel -d /tmp/wheels && /opt/venv/bin/pip install -q "
                         "--no-index /tmp/wheels/*.whl && rm -rf /tmp/tiny /tmp/wheels")
                assert r.ok, r.output
                refs.append(f"synth-test/fingerprint-same:{i}-{uuid.uuid4().hex[:8]}")
                c.commit(refs[-1], labels={"synth.temporary": "1"})
        yield refs[0], refs[1]
    finally:
        for ref in refs:
            engine.remove_image(ref)


def test_content_difference_at_the_same_version_is_named_file_by_file(
        engine: Any, same_version_images: tuple[str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    """verify's comparison and ``synth diff`` name the files of a distribution whose
    content differs between two images at the same name and version."""
    import json

    from synth.compare.load import DiffOptions, diff_command
    from synth.verify.command import compare_images

    live, rebuilt = same_version_images
    venv = "/opt/venv/bin/python"
    out = compare_images(engine, live, rebuilt, venv, venv, "/workspace")
    assert out.status == "compared", out.reason
    (content,) = out.comparison["content"]
    assert (content["kind"], content["key"]) == ("content", "tiny-same")
    assert [(f["kind"], f["key"]) for f in content["files"]] == [
        ("changed", "tiny_same/__init__.py"), ("added", "tiny_same/extra.py")]
    assert content["files_differing"] == 2
    (line,) = [x for x in out.unexplained if x.startswith("content:")]
    assert ("2 files differ: changed tiny_same/__init__.py; added tiny_same/extra.py"
            in line), line

    code = diff_command(DiffOptions(a=f"image:{live}", b=f"image:{rebuilt}", json=True,
                                    python=venv), ImageProbe(engine))
    data = json.loads(capsys.readouterr().out)["result"]
    assert code == 1
    files = next(s for s in data["sections"] if s["name"] == "python_files")
    assert [(i["kind"], i["key"]) for i in files["items"]] == [
        ("changed", "tiny-same: tiny_same/__init__.py"),
        ("added", "tiny-same: tiny_same/extra.py")]
