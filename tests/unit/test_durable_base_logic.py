"""A base that can be checked: recipe round trip, registry digests rendered as
``FROM name@sha256:…``, and the rootfs check before a rebuild (fake engine: pure logic)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from distill_runs import make_run_dir

from synth.distill.load import load_run, repo_digest, repo_name
from synth.distill.plan import distill
from synth.engine.base_images import BaseRecipe, base_manifest, check_base, parse_recipe
from synth.errors import BaseImageError
from synth.export.render import render_artifact

L1, L2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64


@pytest.mark.parametrize("recipe", [
    BaseRecipe("bookworm"),
    BaseRecipe("trixie", ("python3", "python3-venv"), "http://127.0.0.1:8000/debian"),
    BaseRecipe("bookworm", ("python3",), "https://snapshot.debian.org/archive/debian/"
               "20261129T101640Z/", tool="mmdebstrap", source_date_epoch=1795947400),
    BaseRecipe("bookworm", ("python3", "ripgrep"), pypi="research-tools"),
])
def test_recipe_round_trip(recipe: BaseRecipe) -> None:
    assert parse_recipe(recipe.describe()) == recipe


def test_unknown_recipes_parse_to_none() -> None:
    assert parse_recipe("mmdebstrap bookworm") is None
    assert parse_recipe("debootstrap --variant=minbase bookworm") is None


def test_repo_name_and_digest() -> None:
    assert repo_name("synth/python:bookworm") == "synth/python"
    assert repo_name("localhost:5000/lab/py:3.11") == "localhost:5000/lab/py"
    assert repo_name("debian@sha256:" + "a" * 64) == "debian"
    digests = ["other/x@sha256:" + "b" * 64, "localhost:5000/lab/py@sha256:" + "c" * 64]
    assert repo_digest("localhost:5000/lab/py:3.11", digests) == "sha256:" + "c" * 64
    # another repository's digest would render an unresolvable FROM elsewhere@sha256:…
    assert repo_digest("elsewhere:1", digests) is None
    assert repo_digest("x", []) is None


def test_a_registry_base_renders_from_name_at_digest(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    data = json.loads((run_dir / "run.json").read_text())
    data["base_image"]["ref"] = "localhost:5000/lab/py:3.11"
    data["base_image"]["repo_digests"] = ["localhost:5000/lab/py@sha256:" + "c" * 64]
    (run_dir / "run.json").write_text(json.dumps(data))
    files = render_artifact(*distill(load_run(run_dir)), [])
    assert "FROM localhost:5000/lab/py@sha256:" + "c" * 64 + "\n" in files["Dockerfile"]


def test_base_manifest_records_the_recipe() -> None:
    labels = {"synth.base.recipe": BaseRecipe("bookworm", ("python3",)).describe(),
              "synth.base.packages_sha256": "d" * 64, "synth.base.tool_version": "1.0.128"}
    m = base_manifest("synth/python:bookworm", "sha256:x", None, [L1], [], labels)
    assert m["rootfs"] == [L1]
    assert m["recipe"]["suite"] == "bookworm" and m["recipe"]["include"] == ["python3"]
    assert m["recipe"]["tool"] == "debootstrap" and m["recipe"]["tool_version"] == "1.0.128"
    assert m["recipe"]["packages_sha256"] == "d" * 64


class FakeEngine:
    def __init__(self, images: dict[str, dict[str, Any]]) -> None:
        self.images = images

    def image_exists(self, ref: str) -> bool:
        return ref in self.images

    def image_inspect(self, ref: str) -> dict[str, Any]:
        return self.images[ref]


def _base(layers: list[str], recipe: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"ref": "synth/python:bookworm", "digest": None, "rootfs": layers, "recipe": recipe}


def test_a_base_with_other_layers_is_refused_unless_allowed() -> None:
    engine: Any = FakeEngine({"synth/python:bookworm": {"RootFS": {"Layers": [L2]}}})
    with pytest.raises(BaseImageError) as err:
        check_base(engine, _base([L1]), say=lambda _m: None)
    assert "not the one the artifact was made on" in err.value.message
    assert "--allow-base-mismatch" in (err.value.hint or "")
    said: list[str] = []
    assert "allowed" in check_base(engine, _base([L1]), allow_mismatch=True, say=said.append)
    assert said


def test_the_same_base_passes() -> None:
    engine: Any = FakeEngine({"synth/python:bookworm": {"RootFS": {"Layers": [L1]}}})
    assert check_base(engine, _base([L1]), say=lambda _m: None) == "matches the recorded rootfs"


def test_a_missing_base_without_recipe_is_a_clear_error() -> None:
    with pytest.raises(BaseImageError, match="records no recipe"):
        check_base(FakeEngine({}), _base([L1]), say=lambda _m: None)  # type: ignore[arg-type]


@pytest.mark.parametrize("made_packages, allow, expect", [
    ("c" * 64, False, "recreated from the recorded recipe"),
    ("d" * 64, False, "packages differ"),
    ("d" * 64, True, "recreated from the recorded recipe"),
])
def test_a_missing_base_is_recreated_from_its_recipe_and_checked(
        monkeypatch: pytest.MonkeyPatch, made_packages: str, allow: bool, expect: str) -> None:
    import synth.engine.base_images as bi

    made: list[tuple[str, BaseRecipe]] = []
    engine = FakeEngine({})

    def fake_bootstrap(eng: Any, ref: str, recipe: BaseRecipe, **_kw: Any) -> str:
        made.append((ref, recipe))
        eng.images[ref] = {"Config": {"Labels": {"synth.base.packages_sha256": made_packages}}}
        return "sha256:" + "9" * 64

    monkeypatch.setattr(bi, "bootstrap", fake_bootstrap)
    recipe = {"tool": "mmdebstrap", "suite": "bookworm", "include": ["python3"],
              "mirror": "http://127.0.0.1:8000/debian", "source_date_epoch": 1795947400,
              "packages_sha256": "c" * 64}
    if expect == "packages differ":
        with pytest.raises(BaseImageError, match=expect) as err:
            check_base(engine, _base([L1], recipe), say=lambda _m: None)  # type: ignore[arg-type]
        assert "--allow-base-mismatch" in (err.value.hint or "")
    else:
        got = check_base(engine, _base([L1], recipe), allow_mismatch=allow,  # type: ignore[arg-type]
                         say=lambda _m: None)
        assert got == expect
    assert made == [("synth/python:bookworm",
                     BaseRecipe("bookworm", ("python3",), "http://127.0.0.1:8000/debian",
                                tool="mmdebstrap", source_date_epoch=1795947400))]
