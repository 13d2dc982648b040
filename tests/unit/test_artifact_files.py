"""One rule for what a file of an artifact is (synth/formats/artifact_files.py): a link is a link,
hashed by its target path and never followed; export's manifest and verify's check agree on
every kind of link; special files and setuid modes are refused with the path named."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from synth.errors import InputFileError
from synth.formats import artifact_files
from synth.verify.rebuild import check_artifact


def _tree(root: Path, outside: Path) -> Path:
    (root / "configs" / "deep").mkdir(parents=True)
    (root / "configs" / "base.yaml").write_text("lr: 1\n")
    (root / "configs" / "deep" / "x.yaml").write_text("x: 1\n")
    (root / "model.yaml").symlink_to("configs/base.yaml")          # a file link
    (root / "cfg").symlink_to("configs")                           # a folder link
    (root / "x.yaml").symlink_to("configs/deep/x.yaml")            # into a subfolder
    (root / "gone.yaml").symlink_to("configs/missing.yaml")        # dangling
    (root / "host").symlink_to(outside)                            # leaves the tree
    return root


def test_links_are_hashed_by_their_target_path_and_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("not for the manifest\n")
    root = _tree(tmp_path / "a", secret)
    d = artifact_files.digests(root)
    assert d["model.yaml"] == hashlib.sha256(b"symlink:configs/base.yaml").hexdigest()
    assert set(d) == {"configs/base.yaml", "configs/deep/x.yaml", "model.yaml", "cfg",
                      "x.yaml", "gone.yaml", "host"}
    assert hashlib.sha256(secret.read_bytes()).hexdigest() not in d.values()
    secret.write_text("changed\n")
    assert artifact_files.digests(root) == d  # nothing outside was read


def test_export_and_verify_agree_on_every_link(tmp_path: Path) -> None:
    # Export used to hash a file link's target content (and leave folder and dangling links
    # out) while verify hashed the link's text: every symlinked repository was refused.
    root = _tree(tmp_path / "a", tmp_path / "elsewhere")
    manifest = {"files": artifact_files.digests(root)}
    (root / "manifest.json").write_text("{}")
    assert check_artifact(root, manifest)[1] == []
    (root / "model.yaml").unlink()
    (root / "model.yaml").symlink_to("configs/deep/x.yaml")
    assert check_artifact(root, manifest)[1] == ["model.yaml: modified"]
    (root / "model.yaml").unlink()
    (root / "model.yaml").write_text("configs/base.yaml")  # a file holding the link's text
    assert check_artifact(root, manifest)[1] == ["model.yaml: modified"]


def test_outward_links_are_found(tmp_path: Path) -> None:
    root = tmp_path / "art"
    src = _tree(root / "source", tmp_path / "elsewhere")
    (src / "up").symlink_to("../../x")
    (src / "sideways").symlink_to("../manifest.json")
    (src / "fine").symlink_to("configs/../model.yaml")
    assert artifact_files.outward_links(root, "source") == [
        ("source/host", str(tmp_path / "elsewhere")), ("source/sideways", "../manifest.json"),
        ("source/up", "../../x")]


@pytest.mark.parametrize("kind", ["fifo", "setuid", "setgid"])
def test_special_files_are_refused_with_their_path(tmp_path: Path, kind: str) -> None:
    root = tmp_path / "art"
    root.mkdir()
    bad = root / "source" / "bad"
    bad.parent.mkdir()
    if kind == "fifo":
        os.mkfifo(bad)  # hashing it would block forever
    else:
        bad.write_text("x")
        bad.chmod(0o4755 if kind == "setuid" else 0o2755)
    with pytest.raises(InputFileError) as err:
        artifact_files.digests(root)
    assert "source/bad" in err.value.message


def test_the_walk_is_sorted_by_path(tmp_path: Path) -> None:
    for rel in ("a/b", "a.x", "a/c/d", "b"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    assert [e.rel for e in artifact_files.walk(tmp_path)] == ["a", "a.x", "a/b", "a/c",
                                                              "a/c/d", "b"]
