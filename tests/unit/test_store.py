"""The store (synth/formats/store.py): one loader per file, one error policy; and the commands that
read through it (diff, runs list, verify's claims) on bad files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from synth.errors import InputFileError
from synth.formats.audit import AuditRecord
from synth.formats.schemas import validate
from synth.formats.state import PythonState
from synth.formats.store import (
    AUDIT_LOG,
    CLAIMS,
    INPUT_FILES,
    MANIFEST,
    PYTHON_STATE,
    RUN_RECORD,
    ArtifactDir,
    RunDir,
    read_audit,
)
from tests.distill_runs import cmd, make_run_dir
from tests.fuzz_inputs import HOSTILE, run_cli


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run_dir(tmp_path, [cmd("python3 -m venv /opt/venv", hooks=[("python3", 0)])],
                        claims={"python_path": "/opt/venv/bin/python"})


def test_every_file_of_a_run_loads_typed(run_dir: Path) -> None:
    run = RunDir(run_dir)
    assert run.run_record().status == "succeeded"
    assert [r.source for r in run.audit().commands()] == ["bash-c", "bash-hook"]
    assert run.python_state().primary == "/opt/venv/bin/python"
    assert run.apt_state().final["libc6"]
    assert run.diff_state().noise[0].path == "/root/.cache/pip"
    assert run.env_state().persisted == {}
    claims = run.claims()
    assert claims is not None and claims.python_path == "/opt/venv/bin/python"
    assert claims.to_json() == {"python_path": "/opt/venv/bin/python"}
    assert sorted(run.input_hashes()) == sorted(k.rel for k in INPUT_FILES)


@pytest.mark.parametrize(("content", "message"), [
    (None, r"python\.json: missing"),
    (b"", r"python\.json: not valid JSON"),
    (b'{"format": 1,\n "x": \xff}', r"python\.json:2: not UTF-8"),
    (b"[" * 100_000, r"nested too deeply"),
    (b"[1, 2]", r"not a JSON object \(a list\)"),
    (b'{"format": 2, "interpreters": []}', r"format 2 is newer than this synth reads"),
    (b'{"format": true}', r"no integer `format`"),
    (b'{"format": 1, "interpreters": [], "primary": NaN, "errors": []}', r"NaN is not JSON"),
    (b'{"format": 1, "interpreters": [{"path": 1}], "primary": null, "errors": []}',
     r"not a valid state/python\.json: \$\.interpreters\[0\]"),
    (b'{"format": 1, "interpreters": [], "primary": "\\ud800", "errors": []}',
     r"lone UTF-16 surrogate"),
])
def test_a_bad_state_file_is_a_located_error(run_dir: Path, content: bytes | None,
                                             message: str) -> None:
    path = run_dir / "state" / "python.json"
    if content is None:
        path.unlink()
    else:
        path.write_bytes(content)
    with pytest.raises(InputFileError, match=message) as info:
        RunDir(run_dir).python_state()
    assert str(path) in info.value.message


def test_links_and_folders_are_not_followed(run_dir: Path) -> None:
    path = run_dir / "run.json"
    path.unlink()
    path.symlink_to("/etc/passwd")
    with pytest.raises(InputFileError, match="a symbolic link; links are never followed"):
        RunDir(run_dir).run_record()
    path.unlink()
    path.mkdir()
    with pytest.raises(InputFileError, match="not a regular file"):
        RunDir(run_dir).run_record()


def test_an_oversized_claims_file_is_refused_unread(run_dir: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = run_dir / "claims.json"
    with path.open("r+b") as fh:
        fh.truncate(200 << 20)  # sparse: 200 MB that must never be read
    import synth.formats.store

    def no_reading(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the oversized file was opened for reading")

    with monkeypatch.context() as m:
        m.setattr(synth.formats.store.os, "fdopen", no_reading)
        with pytest.raises(InputFileError,
                           match=r"209715200 bytes, over the 1048576-byte limit"):
            RunDir(run_dir).claims()
    from synth.distill.load import load_run

    with pytest.raises(InputFileError, match="refused unread"):
        load_run(run_dir)


def test_audit_errors_name_the_line(run_dir: Path) -> None:
    path = run_dir / "audit.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([*lines[:2], "{not json", *lines[2:]]) + "\n")
    with pytest.raises(InputFileError, match=r"audit\.jsonl:3: not valid JSON"):
        read_audit(path)
    path.write_text("\n".join([*lines[:2], '{"type": "command", "source": "zsh"}']) + "\n")
    with pytest.raises(InputFileError, match=r"audit\.jsonl:3: not a valid audit\.jsonl"):
        read_audit(path)
    path.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(InputFileError, match=r"audit\.jsonl:1: a record before the header"):
        read_audit(path)


def test_audit_lines_end_at_newline_only(run_dir: Path) -> None:
    """A command holding U+2028, U+2029 or U+0085 is written unescaped (JSON allows it,
    the session's writer does it); it stays one record, and its line is read as it was
    written. Any other character that ends a line of text does not end a record."""
    from synth.record.audit import dumps_records

    path = run_dir / "audit.jsonl"
    header, *records = [json.loads(line) for line in path.read_text().split("\n") if line]
    text = "echo a\u2028b\u2029c\x85d"
    records[0]["command"] = text
    path.write_text(dumps_records([header, *records]), encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")
    first = read_audit(path).records[0]
    assert isinstance(first, AuditRecord) and first.command == text
    assert RunDir(run_dir).audit_commands()[0].command == text


def test_audit_bytes_that_are_not_utf8_are_located(run_dir: Path) -> None:
    path = run_dir / "audit.jsonl"
    data = path.read_bytes()
    first = data.index(b"\n") + 1
    broken = data[:first] + data[first:].replace(b'"command": "', b'"command": "\xff', 1)
    path.write_bytes(broken)
    at = broken.index(b"\xff")
    with pytest.raises(InputFileError, match=rf"audit\.jsonl:2: not UTF-8 \(byte {at}\)"):
        read_audit(path)


def test_long_values_are_clipped_in_messages(run_dir: Path) -> None:
    doc = json.loads((run_dir / "run.json").read_text())
    doc["status"] = "x" * 100_000
    (run_dir / "run.json").write_text(json.dumps(doc))
    with pytest.raises(InputFileError) as info:
        RunDir(run_dir).run_record()
    assert len(info.value.message) < 1000


def test_artifact_manifest_and_claims(tmp_path: Path) -> None:
    golden = Path(__file__).resolve().parents[1] / "golden" / "export-basic"
    art = ArtifactDir(golden)
    assert art.manifest().task == json.loads((golden / "manifest.json").read_text())["task"]
    assert art.export_report() is not None
    (tmp_path / MANIFEST.rel).write_text('{"format": 1}')
    with pytest.raises(InputFileError, match="'base_image' is a required property"):
        ArtifactDir(tmp_path).manifest()
    assert ArtifactDir(tmp_path).claims() is None
    (tmp_path / CLAIMS.rel).write_text('{"gpu_count": "two"}')
    with pytest.raises(InputFileError, match=r"\$\.gpu_count"):
        ArtifactDir(tmp_path).claims()


def test_typed_python_state_is_the_one_reader(run_dir: Path) -> None:
    state = RunDir(run_dir).python_state()
    assert isinstance(state, PythonState)
    prim = state.primary_interpreter()
    assert prim is not None and prim.kind == "venv"


# ------------------------------------------------------------- the types and the schemas
def _documents() -> list[tuple[str, Any]]:
    from tests.unit.test_schemas import AUDIT, RUN

    docs: list[tuple[str, Any]] = [("run", RUN), *(("audit-record", a) for a in AUDIT)]
    for name, doc in list(docs):
        for key in list(doc):
            for value in HOSTILE[:12]:
                docs.append((name, {**doc, key: value}))
            docs.append((name, {k: v for k, v in doc.items() if k != key}))
    return docs


def _typed(doc: Any, name: str, tmp: Path) -> bool:
    """Does the store take ``doc``: a run.json, or one line of an audit.jsonl (after a
    header, or itself the header)?"""
    from tests.unit.test_schemas import AUDIT

    if name == "run":
        path, kind = tmp / RUN_RECORD.rel, RUN_RECORD
        path.write_text(json.dumps(doc))
    else:
        path, kind = tmp / AUDIT_LOG.rel, AUDIT_LOG
        lines = [doc] if doc.get("type") == "header" else [AUDIT[0], doc]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    try:
        read_audit(path) if kind is AUDIT_LOG else RunDir(tmp).run_record()
    except InputFileError:
        return False
    return True


def test_the_reader_refuses_what_the_published_schema_refuses(tmp_path: Path) -> None:
    """The types decide, the generated schemas describe them: on 500-odd hostile variants of
    real documents, the typed reader never takes what jsonschema refuses against the
    published schema, and refuses what it takes only where JSON Schema calls a number
    without a fraction an integer (``2.0``, ``1e308``): the types want an integer there."""
    checked = 0
    for name, doc in _documents():
        typed, valid = _typed(doc, name, tmp_path), validate(doc, name) == []
        assert not typed or valid, (name, doc)
        integral = any(isinstance(v, float) and v.is_integer() for v in doc.values())
        assert typed == valid or integral, (name, doc, validate(doc, name))
        checked += 1
    assert checked > 500


def test_valid_files_are_read_by_their_types_and_valid_by_their_schemas(run_dir: Path) -> None:
    """Every file synth writes is taken by its type and valid against its published
    schema (jsonschema): the two say the same about real files."""
    from synth.formats.store import (
        APT_STATE,
        DIFF_STATE,
        ENV_STATE,
        EXPORT_REPORT,
        PLAN,
        PROVENANCE,
        VERIFY_DOCUMENT,
        decode,
    )

    golden = Path(__file__).resolve().parents[1] / "golden"
    files = [(run_dir / k.rel, k) for k in (RUN_RECORD, APT_STATE, PYTHON_STATE,
                                            DIFF_STATE, ENV_STATE, PROVENANCE, CLAIMS)]
    files += [(golden / "export-basic" / k.rel, k) for k in (MANIFEST, EXPORT_REPORT, PLAN,
                                                            CLAIMS)]
    files += [(golden / "verify" / VERIFY_DOCUMENT.rel, VERIFY_DOCUMENT)]
    for path, kind in files:
        data = path.read_bytes()
        assert validate(json.loads(data), kind.schema) == [], path
        assert isinstance(decode(data, kind, str(path)), kind.model), path
    log = read_audit(run_dir / AUDIT_LOG.rel)
    for line in (run_dir / AUDIT_LOG.rel).read_text().splitlines():
        assert validate(json.loads(line), AUDIT_LOG.schema) == [], line
    assert len(log.records) == len((run_dir / AUDIT_LOG.rel).read_text().splitlines()) - 1


@pytest.mark.parametrize(("change", "message"), [
    ({"seq": 0}, r"audit\.jsonl:2: not a valid audit\.jsonl: \$\.seq: Expected `int` >= 1"),
    ({"seq": "1"}, r"audit\.jsonl:2: not a valid audit\.jsonl: \$\.seq: Expected `int`"),
    ({"depth": -1}, r"\$\.depth: Expected `int` >= 0"),
    ({"argv": "pip"}, r"\$\.argv: Expected `array`"),
    ({"source": "zsh"}, r"\$\.source: Invalid enum value 'zsh'"),
    ({"type": "cmd"}, r"\$\.type: Invalid enum value 'cmd'"),
    ({"pid": None, "ppid": "x"}, r"\$\.ppid: Expected `int \| null`, got `str`"),
    ({"cwd_end": ...}, r"\$: 'cwd_end' is a required property"),
    ({"command": None, "argv": ...}, None),  # a shell record with no text: read, not a command
])
def test_a_bad_audit_record_is_refused_with_its_line_and_path(
        run_dir: Path, change: dict[str, Any], message: str | None) -> None:
    """What the compiled schema check refused, the line's type refuses, naming the line,
    the field and what is wrong with it (a field set to ``...`` is removed)."""
    path = run_dir / "audit.jsonl"
    header, first, *rest = [json.loads(line) for line in path.read_text().splitlines()]
    assert first["source"] == "bash-c"
    first = {k: v for k, v in {**first, **change}.items() if v is not ...}
    path.write_text("".join(json.dumps(r) + "\n" for r in [header, first, *rest]))
    if message is None:
        log = read_audit(path)
        assert len(log.records) == 1 + len(rest) and first["seq"] not in {
            r.seq for r in log.commands()}
        assert [r.seq for r in RunDir(run_dir).audit_commands()] == [
            r.seq for r in log.commands()]
        return
    with pytest.raises(InputFileError, match=message):
        read_audit(path)


# ------------------------------------------------------------------------- commands
def test_diff_exits_2_when_a_state_file_is_missing(run_dir: Path) -> None:
    for rel in ("state/apt.json", "state/python.json", "state/diff.json", "state/env.json"):
        data = (run_dir / rel).read_bytes()
        (run_dir / rel).unlink()
        code, stdout, stderr = run_cli("diff", str(run_dir), str(run_dir))
        assert code == 2, (rel, stdout)
        assert f"{rel}: missing" in stderr.replace("\n", ""), stderr
        (run_dir / rel).write_bytes(data)
    assert run_cli("diff", str(run_dir), str(run_dir))[0] == 0


def test_runs_list_skips_a_bad_run_json_with_a_warning(tmp_path: Path) -> None:
    good = make_run_dir(tmp_path, [], run_id="20261129-101500-aaaaaa")
    bad = make_run_dir(tmp_path, [], run_id="20261129-101600-bbbbbb")
    (bad / RUN_RECORD.rel).write_text('{"format": 1, "status": "[/]"}')
    code, stdout, stderr = run_cli("runs", "list", "--artifacts", str(tmp_path))
    assert code == 0
    assert good.name in stdout and bad.name not in stdout
    assert "warning: skipped" in stderr and bad.name in stderr.replace("\n", "")
    code, stdout, _ = run_cli("runs", "list", "--artifacts", str(tmp_path), "--json")
    doc = json.loads(stdout)["result"]
    assert [r["run_id"] for r in doc["runs"]] == [good.name]
    assert len(doc["skipped"]) == 1 and bad.name in doc["skipped"][0]


def test_runs_show_lists_an_unreadable_state_file(run_dir: Path) -> None:
    (run_dir / APT_STATE_REL).write_text("{")
    code, stdout, _ = run_cli("runs", "show", str(run_dir), "--json")
    assert code == 0
    unreadable = json.loads(stdout)["result"]["summary"]["unreadable"]
    assert len(unreadable) == 1 and "apt.json: not valid JSON" in unreadable[0]


APT_STATE_REL = "state/apt.json"


def test_a_bad_claims_file_fails_c5_alone(tmp_path: Path) -> None:
    from synth.engine.host import HostRuntime
    from synth.formats.task import load_task
    from synth.pyramid.claims import BadClaims
    from synth.pyramid.runner import PyramidSpec, run_pyramid
    from synth.verify.command import _claims, parse_levels, pyramid_task
    from tests.unit.test_verify_cmd import make_task

    (tmp_path / "claims.json").write_text('{"python_path": ')
    reason = _claims(RunDir(tmp_path))
    assert isinstance(reason, BadClaims) and "not valid JSON" in reason.reason
    task = load_task(make_task(tmp_path))
    assert task.repo_path is not None

    def levels(claims: Any) -> dict[str, str]:
        spec = PyramidSpec(python=sys.executable, task=pyramid_task(task), claims=claims,
                           repo_dir=task.repo_path, workdir=str(task.repo_path),
                           gpu_access="none", levels=parse_levels("C0,C1,C5"))
        report = run_pyramid(HostRuntime(Path(sys.executable)), spec)
        return {r.level: r.summary for r in report.levels}

    bad, none = levels(reason), levels(None)
    assert bad["C5"].startswith("fail: claims.json cannot be checked:")
    assert "not valid JSON" in bad["C5"]
    assert {k: v for k, v in bad.items() if k != "C5"} == {
        k: v for k, v in none.items() if k != "C5"}


def test_pure_modules_do_not_load_docker() -> None:
    modules = ["synth.compare.diff", "synth.compare.load", "synth.distill.plan",
               "synth.distill.load",
               "synth.distill.envs", "synth.distill.native", "synth.distill.outcomes",
               "synth.export.render", "synth.formats.store", "synth.formats.schemas",
               "synth.formats.schemas.generate",
               "synth.compare.fingerprint", "synth.engine", "synth.engine.base", "synth.distill",
               "synth.record.audit", "synth.record.recorder", "synth.record.transcript",
               "synth.engine.base_images"]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}:\n"
            "    importlib.import_module(m)\n"
            "    assert 'docker' not in sys.modules, m\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr


def test_python_json_has_one_reader() -> None:
    root = Path(__file__).resolve().parents[2] / "synth"
    readers = [p.relative_to(root).as_posix() for p in root.rglob("*.py")
               if '"python.json"' in p.read_text(encoding="utf-8")
               or "'python.json'" in p.read_text(encoding="utf-8")]
    # The runner writes it; the store reads it. Nothing else names it.
    assert sorted(readers) == ["record/runner.py"], readers
    assert PYTHON_STATE.rel == "state/python.json" and AUDIT_LOG.rel == "audit.jsonl"


def test_valid_files_never_load_jsonschema(run_dir: Path) -> None:
    # Importing jsonschema takes seconds (its format checkers build grammars): the types
    # read every file, and a valid one never needs jsonschema's messages.
    golden = Path(__file__).resolve().parents[1] / "golden" / "export-basic"
    code = ("import sys\nfrom pathlib import Path\n"
            "from synth.formats.store import ArtifactDir, RunDir\n"
            f"run = RunDir(Path({str(run_dir)!r}))\n"
            "run.run_record(); run.audit(); run.apt_state(); run.python_state()\n"
            "run.diff_state(); run.env_state(); run.claims()\n"
            f"art = ArtifactDir(Path({str(golden)!r}))\n"
            "art.manifest(); art.export_report()\n"
            "assert 'jsonschema' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr


def test_model_classes_read_every_schema_shaped_document(tmp_path: Path) -> None:
    # The documents test_schemas.py proves valid are exactly what the typed classes read.
    from synth.formats.manifest import Manifest
    from synth.formats.run import RunRecord
    from synth.formats.state import AptState, DiffState, EnvState
    from synth.record.audit import write_audit
    from tests.unit.test_schemas import APT, AUDIT, DIFF, ENV, PYTHON, RUN

    golden = Path(__file__).resolve().parents[1] / "golden" / "export-basic"
    record = RunRecord.from_json(RUN)
    assert record.live_image is not None and record.live_image.ref == RUN["live_image"]["ref"]
    write_audit(tmp_path / "audit.jsonl", AUDIT)
    log = read_audit(tmp_path / "audit.jsonl")
    assert [r.seq for r in log.commands()] == sorted(
        r["seq"] for r in AUDIT[1:] if r["type"] == "command")
    assert AptState.from_json(APT).base == APT["base"]
    assert PythonState.from_json(PYTHON).primary == PYTHON["primary"]
    assert len(DiffState.from_json(DIFF).changes) == len(DIFF["changes"])
    assert EnvState.from_json(ENV).persisted == ENV["persisted"]
    manifest = json.loads((golden / "manifest.json").read_text(encoding="utf-8"))
    assert Manifest.from_json(manifest).files == manifest["files"]
    for name, doc in [("run", RUN), ("apt-state", APT), ("python-state", PYTHON),
                      ("diff-state", DIFF), ("env-state", ENV), ("manifest", manifest)]:
        assert validate(doc, name) == [], name


def test_verify_json_reads_typed_and_its_text_is_checked_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_verify gives a VerifyDocument; a verify.json's text that came another way (a
    bench worker sends it back) is checked as the file is: format, schema, size."""
    import dataclasses

    import synth.formats.store
    from synth.formats.store import VERIFY_DOCUMENT, parse_verify, read_verify
    from synth.formats.verify import VERIFY_FORMAT

    text = (Path(__file__).resolve().parents[1] / "golden" / "verify" / "verify.json"
            ).read_text(encoding="utf-8")
    path = tmp_path / "verify.json"
    path.write_text(text)
    doc = read_verify(path)
    assert doc == parse_verify(text, "cell/verify.json")
    c1 = doc.deciding.get("C1")
    assert c1 is not None and c1.status == "fail"
    newer = json.dumps({**json.loads(text), "format": VERIFY_FORMAT + 1})
    with pytest.raises(InputFileError, match=rf"cell/verify\.json: format {VERIFY_FORMAT + 1} "
                       "is newer than this synth reads"):
        parse_verify(newer, "cell/verify.json")
    path.write_text(newer)
    with pytest.raises(InputFileError, match="is newer than this synth reads"):
        read_verify(path)
    with pytest.raises(InputFileError, match=r"not a valid verify\.json: \$\.passed"):
        parse_verify(json.dumps({**json.loads(text), "passed": "yes"}), "cell/verify.json")
    monkeypatch.setattr(synth.formats.store, "VERIFY_DOCUMENT",
                        dataclasses.replace(VERIFY_DOCUMENT, max_bytes=100))
    with pytest.raises(InputFileError, match="over the 100-byte limit"):
        parse_verify(text, "cell/verify.json")
