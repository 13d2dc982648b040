"""``synth export --archive``: the same run gives the same archive bytes, the base image
inside; the curator metadata validates against the schemas curators use: CITATION.cff
(the Citation File Format schema cffconvert ships), .zenodo.json (Zenodo's documented
deposit fields), the SBOM (CycloneDX's own validator) and the RO-Crate (its required
entities, read back with the ``rocrate`` library; roc-validator where installed); the
README's table names every file of the archive."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from test_render_golden import _run, fake_locker

from synth.config import Settings
from synth.export.artifact import ExportOptions, ExportResult, export_run
from synth.export.metadata import CitationOptions, parse_author
from tests.distill_runs import NO_ENGINE, fake_base

DATA = Path(__file__).resolve().parents[1] / "data"
NAME = "demo-20261129-101500-a1b2c3"
CITATION = CitationOptions(authors=("Ada Lovelace <ada@example.org>", "Turing, Alan"),
                           license="apache-2.0", release="1.0.0",
                           repository="https://example.org/demo.git")


def _export(tmp: Path, run_dir: Path, name: str, **kw: Any) -> ExportResult:
    options = {"citation": CITATION, "save_base": fake_base(run_dir), **kw}
    return export_run(ExportOptions(
        run_dir, out_dir=tmp / name / "export", locker=fake_locker, ask_live=False,
        archive=True, **options), Settings.load(artifacts_dir=tmp), NO_ENGINE)


def _members(archive: Path) -> list[tarfile.TarInfo]:
    with tarfile.open(archive) as tar:
        return tar.getmembers()


def test_two_archive_exports_have_the_same_sha256(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    a, b = _export(tmp_path, run_dir, "a"), _export(tmp_path, run_dir, "b")
    assert a.archive is not None and b.archive is not None
    assert a.archive.name == f"{NAME}.tar.gz"
    assert a.archive.read_bytes() == b.archive.read_bytes()
    digest = hashlib.sha256(a.archive.read_bytes()).hexdigest()
    assert a.archive_sha256 == digest
    assert (a.archive.parent / (a.archive.name + ".sha256")).read_text() == \
        f"{digest}  {a.archive.name}\n"
    members = _members(a.archive)
    names = [m.name for m in members]
    assert names[0] == NAME
    assert names[1:] == sorted(names[1:])
    assert {m.uid for m in members} == {0} and {m.uname for m in members} == {""}
    epoch = json.loads((a.artifact_dir / "manifest.json").read_text())["archive"][
        "source_date_epoch"]
    assert epoch == 1795947400  # 2026-11-29T10:16:40Z, the run's end
    assert {m.mtime for m in members} == {epoch}
    for extra in ("sbom.cdx.json", "ro-crate-metadata.json", ".zenodo.json",
                  "base/synth-python-bookworm.tar", "Dockerfile.legacy", ".dockerignore"):
        assert f"{NAME}/{extra}" in names, extra
    # gzip header: no name, mtime 0
    head = a.archive.read_bytes()[:10]
    assert head[3] & 0x08 == 0 and head[4:8] == b"\0\0\0\0"


def test_the_archive_carries_the_base_as_the_manifest_records_it(tmp_path: Path) -> None:
    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    base = json.loads((art / "manifest.json").read_text())["base"]
    pub = base["published"]
    assert pub["ref"] == "localhost/synth/python:bookworm"
    assert pub["archive"] == "base/synth-python-bookworm.tar"
    with tarfile.open(art / pub["archive"]) as tar:
        docker = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        index = json.loads(tar.extractfile("index.json").read())  # type: ignore[union-attr]
        config = tar.extractfile(docker[0]["Config"]).read()  # type: ignore[union-attr]
    assert docker[0]["RepoTags"] == [pub["ref"]]
    assert "sha256:" + hashlib.sha256(config).hexdigest() == pub["config_digest"]
    assert index["manifests"][0]["digest"] == pub["manifest_digest"]
    assert json.loads(config)["rootfs"]["diff_ids"] == base["rootfs"] == pub["rootfs"]
    assert "Labels" not in json.loads(config)["config"]  # nothing of synth's in the image
    dockerfile = (art / "Dockerfile").read_text()
    assert "\nFROM localhost/synth/python:bookworm\n" in dockerfile
    assert f'org.opencontainers.image.base.digest="{pub["config_digest"]}"' in dockerfile
    readme = (art / "README.md").read_text()
    assert "docker load -i base/synth-python-bookworm.tar" in readme
    assert pub["config_digest"] in readme and pub["manifest_digest"] in readme


def test_a_base_that_cannot_be_saved_is_named_not_carried(tmp_path: Path) -> None:
    from synth.errors import EngineError

    def no_engine(_image: str, _dest: Path) -> None:
        raise EngineError("Cannot connect to the Docker engine.")

    result = _export(tmp_path, _run(tmp_path), "a", save_base=no_engine)
    assert any("is not carried" in w and "Cannot connect" in w for w in result.warnings)
    assert not (result.artifact_dir / "base").exists()
    pub = json.loads((result.artifact_dir / "manifest.json").read_text())["base"]["published"]
    assert pub["archive"] is None and pub["manifest_digest"] is None
    assert "does not carry it" in (result.artifact_dir / "README.md").read_text()


def _readme_rows(readme: str) -> list[str]:
    table = readme.split("## Files", 1)[1]
    return re.findall(r"^\| `([^`]+)` \|", table, flags=re.M)


def test_the_readme_names_every_file_of_the_archive(tmp_path: Path) -> None:
    result = _export(tmp_path, _run(tmp_path), "a")
    assert result.archive is not None
    rows = _readme_rows((result.artifact_dir / "README.md").read_text())
    for m in _members(result.archive)[1:]:
        rel = m.name.split("/", 1)[1]
        covered = [r for r in rows if rel == r.rstrip("/") or fnmatch.fnmatch(rel, r)
                   or (r.endswith("/") and rel.startswith(r))
                   or (m.isdir() and r.startswith(rel + "/"))]
        assert covered, f"{rel} is in the archive, not in the README's table"


def test_citation_cff_validates_against_the_cff_schema(tmp_path: Path) -> None:
    import yaml

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    doc = yaml.safe_load((art / "CITATION.cff").read_text())
    schema = json.loads((DATA / "citation-cff-1.2.0.schema.json").read_text())
    assert sorted(e.message for e in Draft7Validator(schema).iter_errors(doc)) == []
    assert doc["authors"] == [
        {"family-names": "Lovelace", "given-names": "Ada", "email": "ada@example.org"},
        {"family-names": "Turing", "given-names": "Alan"}]
    assert doc["version"] == "1.0.0" and doc["date-released"] == "2026-11-29"
    assert doc["license"] == "Apache-2.0"
    assert doc["repository-code"] == "https://example.org/demo.git"


def test_citation_without_any_author_still_validates_and_warns(tmp_path: Path) -> None:
    import yaml

    result = _export(tmp_path, _run(tmp_path), "a", citation=CitationOptions())
    doc = yaml.safe_load((result.artifact_dir / "CITATION.cff").read_text())
    schema = json.loads((DATA / "citation-cff-1.2.0.schema.json").read_text())
    assert list(Draft7Validator(schema).iter_errors(doc)) == []
    assert any("name no author" in w for w in result.warnings)
    assert any("no licence" in w for w in result.warnings)
    zenodo = json.loads((result.artifact_dir / ".zenodo.json").read_text())
    assert zenodo["access_right"] == "closed" and "license" not in zenodo


#: Zenodo's deposit metadata as its REST API documents it (developers.zenodo.org,
#: "Deposit metadata"): the fields, their types and vocabularies, what is required.
ZENODO_DEPOSIT = {
    "type": "object", "additionalProperties": False,
    "required": ["upload_type", "title", "creators", "description"],
    "properties": {
        "upload_type": {"enum": ["publication", "poster", "presentation", "dataset", "image",
                                 "video", "software", "lesson", "physicalobject", "other"]},
        "publication_date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
        "title": {"type": "string", "minLength": 1},
        "creators": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["name"], "additionalProperties": False,
            "properties": {"name": {"type": "string", "minLength": 1},
                           "affiliation": {"type": "string"}, "orcid": {"type": "string"},
                           "gnd": {"type": "string"}}}},
        "description": {"type": "string", "minLength": 1},
        "access_right": {"enum": ["open", "embargoed", "restricted", "closed"]},
        "license": {"type": "string", "pattern": r"^[a-z0-9.+-]+$"},
        "embargo_date": {"type": "string"}, "access_conditions": {"type": "string"},
        "doi": {"type": "string"}, "prereserve_doi": {"type": "boolean"},
        "keywords": {"type": "array", "items": {"type": "string", "minLength": 1}},
        "notes": {"type": "string"}, "version": {"type": "string"},
        "language": {"type": "string"},
        "related_identifiers": {"type": "array", "items": {
            "type": "object", "required": ["identifier", "relation"],
            "properties": {"identifier": {"type": "string"}, "resource_type": {"type": "string"},
                           "relation": {"enum": [
                               "isCitedBy", "cites", "isSupplementTo", "isSupplementedBy",
                               "isContinuedBy", "continues", "isDescribedBy", "describes",
                               "hasMetadata", "isMetadataFor", "isNewVersionOf",
                               "isPreviousVersionOf", "isPartOf", "hasPart", "isReferencedBy",
                               "references", "isDocumentedBy", "documents", "isCompiledBy",
                               "compiles", "isVariantFormOf", "isOriginalFormOf",
                               "isIdenticalTo", "isAlternateIdentifier", "isReviewedBy",
                               "reviews", "isDerivedFrom", "isSourceOf", "requires",
                               "isRequiredBy", "isObsoletedBy", "obsoletes"]}}}},
        "contributors": {"type": "array"}, "references": {"type": "array"},
        "communities": {"type": "array"}, "grants": {"type": "array"},
        "subjects": {"type": "array"},
    },
    "allOf": [{"if": {"properties": {"access_right": {"enum": ["open", "embargoed"]}},
                      "required": ["access_right"]},
               "then": {"required": ["license"]}}],
}


def test_zenodo_json_has_only_the_documented_deposit_fields(tmp_path: Path) -> None:
    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    doc = json.loads((art / ".zenodo.json").read_text())
    errors = [e.message for e in Draft202012Validator(ZENODO_DEPOSIT).iter_errors(doc)]
    assert errors == []
    assert doc["creators"] == [{"name": "Lovelace, Ada"}, {"name": "Turing, Alan"}]
    assert doc["license"] == "apache-2.0" and doc["access_right"] == "open"
    assert doc["publication_date"] == "2026-11-29" and doc["version"] == "1.0.0"
    assert doc["related_identifiers"][0]["identifier"] == "https://example.org/demo.git"


def _purls(components: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in components:
        if "purl" in c:
            out[c["purl"]] = c
        out.update(_purls(c.get("components", [])))
    return out


def test_sbom_validates_and_lists_every_component(tmp_path: Path) -> None:
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    text = (art / "sbom.cdx.json").read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    doc = json.loads(text)
    comps = _purls(doc["components"])
    gcc = comps["pkg:deb/debian/gcc@4:12.2.0-3?arch=amd64&distro=bookworm"]
    assert gcc["hashes"][0]["alg"] == "SHA-256" and len(gcc["hashes"][0]["content"]) == 64
    assert "pkg:deb/debian/git@1:2.39.5-0%2Bdeb12u2?distro=bookworm" in comps  # no hash known
    assert comps["pkg:pypi/numpy@2.3.5"]["hashes"]
    assert "pkg:pypi/torch@2.13.0%2Bcpu" in comps
    base = next(c for c in doc["components"] if c["type"] == "container")
    assert base["name"] == "localhost/synth/python:bookworm"
    assert {c["name"] for c in base["components"]} >= {"libc6", "python3"}
    assert all(c["purl"].endswith("?distro=bookworm") for c in base["components"])
    local = next(c for c in doc["components"] if c["bom-ref"].startswith("local:"))
    assert (local["name"], local["version"]) == ("demo", "0.0.0")
    assert [t["name"] for t in doc["metadata"]["tools"]["components"]] == ["synth"]


def test_ro_crate_has_licence_checksums_and_the_source(tmp_path: Path) -> None:
    from rocrate.rocrate import ROCrate

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    doc = json.loads((art / "ro-crate-metadata.json").read_text())
    graph = {e["@id"]: e for e in doc["@graph"]}
    meta = graph["ro-crate-metadata.json"]
    assert meta["about"] == {"@id": "./"}
    assert meta["conformsTo"]["@id"].startswith("https://w3id.org/ro/crate/1.")
    root = graph["./"]
    assert root["@type"] == "Dataset"
    assert root["name"] and root["description"] and root["datePublished"].startswith("2026-11-29")
    assert root["mainEntity"] == {"@id": "Dockerfile"}
    assert root["license"] == {"@id": "https://spdx.org/licenses/Apache-2.0"}
    assert graph["https://spdx.org/licenses/Apache-2.0"]["@type"] == "CreativeWork"
    assert [graph[a["@id"]]["name"] for a in root["author"]] == ["Ada Lovelace", "Alan Turing"]
    parts = {p["@id"] for p in root["hasPart"]}
    assert {"Dockerfile", "apt.lock", "manifest.json", "sbom.cdx.json", "task.toml",
            "source/", "source/setup.py", "source/demo/__init__.py",
            "base/synth-python-bookworm.tar"} <= parts
    assert graph["source/"]["hasPart"] == [{"@id": "source/demo/"}, {"@id": "source/setup.py"}]
    for part in parts:  # every data entity is in the folder, every file has its sha256
        assert (art / part).exists(), part
        entity = graph[part]
        if (art / part).is_file() and part != "manifest.json":
            assert entity["sha256"] == hashlib.sha256((art / part).read_bytes()).hexdigest()
    inputs = [e for e in doc["@graph"] if e["@id"].startswith("#input-")]
    assert {e["name"] for e in inputs} >= {"run.json", "audit.jsonl"}
    assert graph["#export"]["@type"] == "CreateAction"
    crate = ROCrate(str(art))  # the library reads it back
    assert crate.root_dataset["name"] == root["name"]
    assert crate.mainEntity.id == "Dockerfile"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's, inside the validator
def test_ro_crate_passes_roc_validator_where_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """roc-validator (PyPI ``roc-validator``, a development dependency) finds nothing the
    RO-Crate 1.3 profile requires missing; the crate's JSON-LD context is served from the
    ``rocrate`` library's copy (no network)."""
    import io
    from importlib import resources

    from requests.adapters import HTTPAdapter
    from rocrate_validator import models, services
    from urllib3.response import HTTPResponse

    context = resources.files("rocrate").joinpath("data/ro-crate.jsonld").read_bytes()

    def offline(self: HTTPAdapter, request: Any, **_kw: Any) -> Any:
        assert request.url.rstrip("/").endswith("/ro/crate/1.3/context"), request.url
        return self.build_response(request, HTTPResponse(
            body=io.BytesIO(context), status=200, preload_content=False,
            headers={"Content-Type": "application/ld+json"}, request_url=request.url))

    monkeypatch.setattr(HTTPAdapter, "send", offline)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    result = services.validate(models.ValidationSettings(
        rocrate_uri=str(art), profile_identifier="ro-crate-1.3",
        requirement_severity=models.Severity.REQUIRED))
    assert [str(i.message) for i in result.get_issues()] == []
    assert result.passed()


def test_manifest_with_archive_validates(tmp_path: Path) -> None:
    from synth.formats.schemas import validate

    art = _export(tmp_path, _run(tmp_path), "a").artifact_dir
    assert validate(json.loads((art / "manifest.json").read_text()), "manifest") == []


@pytest.mark.parametrize(("text", "cff"), [
    ("Ada Lovelace <ada@example.org>",
     {"given-names": "Ada", "family-names": "Lovelace", "email": "ada@example.org"}),
    ("van der Berg, Jan", {"given-names": "Jan", "family-names": "van der Berg"}),
    ("Mary Ann Evans", {"given-names": "Mary Ann", "family-names": "Evans"}),
    ("The Lab", {"given-names": "The", "family-names": "Lab"}),
    ("Consortium", {"name": "Consortium"}),
])
def test_authors_are_parsed_as_given(text: str, cff: dict[str, str]) -> None:
    assert parse_author(text).cff() == cff


def test_git_config_names_the_author_when_nothing_else_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's own git identity (``--global``), never a repository's configuration."""
    import importlib

    metadata = importlib.import_module("synth.export.metadata")
    monkeypatch.undo()  # the unit suite's stand-in for git_author (tests/unit/conftest.py)
    (tmp_path / "gitconfig").write_text("[user]\n\tname = Grace Hopper\n"
                                        "\temail = grace@example.org\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    author = metadata.git_author()
    assert author is not None and author.cff() == {
        "given-names": "Grace", "family-names": "Hopper", "email": "grace@example.org"}
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "none"))
    assert metadata.git_author() is None


def test_a_registry_to_push_to_is_a_host_not_a_url() -> None:
    from synth.errors import UsageError
    from synth.verify.push import registry_name

    assert registry_name("127.0.0.1:5000/lab/") == "127.0.0.1:5000/lab"
    for bad in ("https://registry.example.org", "", "a b", "host:1:2"):
        with pytest.raises(UsageError):
            registry_name(bad)


def test_a_licence_that_is_not_a_listed_spdx_id_says_where_it_came_from() -> None:
    from synth.errors import UsageError
    from synth.export.metadata import spdx_id

    assert spdx_id("mit") == "MIT"
    with pytest.raises(UsageError, match=r"^--license 'Beerware-9' is not an SPDX licence id\.$"):
        spdx_id("Beerware-9")
    with pytest.raises(UsageError) as err:
        spdx_id("LicenseRef-Allen-Institute", "task.toml citation.license")
    assert err.value.message.startswith("task.toml citation.license 'LicenseRef-Allen-Institute'")
    assert "CITATION.cff" in err.value.message and "leave the licence out" in str(err.value.hint)
