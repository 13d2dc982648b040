"""Base images made with debootstrap: recipe and content hash as labels, idempotent."""

from __future__ import annotations

from pathlib import Path

import pytest

from synth.engine import ContainerSpec, DockerEngine
from synth.engine.base_images import BaseRecipe, bootstrap, ensure_base_image
from synth.errors import BaseImageError

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_bootstrap_records_recipe_and_is_idempotent(engine: DockerEngine) -> None:
    ref = "synth-test/debian:bookworm"
    recipe = BaseRecipe(suite="bookworm")
    messages: list[str] = []
    engine.remove_image(ref)
    try:
        first = bootstrap(engine, ref, recipe, say=messages.append)
        labels = engine.image_inspect(ref)["Config"]["Labels"]
        assert labels["synth.base.recipe"] == recipe.describe()
        assert len(labels["synth.base.packages_sha256"]) == 64
        assert labels["synth.kind"] == "base"
        with engine.container(ContainerSpec(image=ref, network=False)) as c:
            assert c.sh(". /etc/os-release && echo $VERSION_CODENAME").stdout == "bookworm\n"
            assert c.sh("dpkg -s bash >/dev/null").ok
        again = bootstrap(engine, ref, recipe, say=messages.append)
        assert again == first
        assert any("nothing to do" in m for m in messages)
    finally:
        engine.remove_image(ref)


def test_base_image_fixture_made_the_python_base(engine: DockerEngine, base_image: str) -> None:
    labels = engine.image_inspect(base_image)["Config"]["Labels"]
    assert "python3" in labels["synth.base.recipe"]
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        assert c.sh("python3 -m venv /tmp/v && /tmp/v/bin/python -V").stdout.startswith(
            "Python 3.11"
        )


def test_unknown_missing_base_is_a_clear_error(engine: DockerEngine) -> None:
    with pytest.raises(BaseImageError, match="does not know how to make it"):
        ensure_base_image(engine, "example.org/nothing:1", say=lambda m: None)


def test_known_bases_cover_tags(tmp_path: Path) -> None:
    from synth.engine.base_images import recipe_for

    py = recipe_for("synth/python:bookworm")
    assert py is not None and "python3-venv" in py.include
    assert recipe_for("debian:bookworm") is None


def test_research_base_offers_the_tools_of_a_research_agent_image(
        engine: DockerEngine) -> None:
    """synth/research (what imported REB tasks get): made from Debian + a hashed PyPI lock
    (minutes when missing), pinned and recorded in its labels; `python`, git, rg, uv,
    poetry and pipenv run in it, without network."""
    from synth.engine.base_images import (
        KNOWN_ABSENT,
        RESEARCH_BASE,
        parse_recipe,
        pypi_digest,
        recipe_for,
    )

    recipe = recipe_for(RESEARCH_BASE)
    assert recipe is not None and recipe.pypi == "research-tools"
    bootstrap(engine, RESEARCH_BASE, recipe, say=lambda m: None)  # nothing to do if made
    labels = engine.image_inspect(RESEARCH_BASE)["Config"]["Labels"]
    assert parse_recipe(labels["synth.base.recipe"]) == recipe
    assert labels["synth.base.pypi_sha256"] == pypi_digest("research-tools")
    assert labels["synth.base.absent"] == KNOWN_ABSENT["synth/research"]
    with engine.container(ContainerSpec(image=RESEARCH_BASE, network=False)) as c:
        for command, expect in (("python --version", "Python 3.11"),
                                ("git --version", "git version"),
                                ("rg --version", "ripgrep"), ("uv --version", "uv 0.13.9"),
                                ("poetry --version", "Poetry (version 2.5.1)"),
                                ("pipenv --version", "pipenv, version 2026.10.3"),
                                ("rsync --version", "rsync"), ("cmake --version", "cmake"),
                                ("ninja --version", "1."), ("cc --version", "cc")):
            res = c.sh(command)
            assert res.ok and expect in res.stdout, (command, res.stdout, res.stderr)
        # nothing of the build stays behind: no lock, CA bundle or pip cache
        assert c.sh("ls /tmp; ls /root/.cache 2>/dev/null").stdout.strip() == ""
