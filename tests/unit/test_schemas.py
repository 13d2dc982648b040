"""The JSON Schemas of synth's files (synth/schemas): valid schemas, real-shaped documents
validate, broken ones are reported with their JSON path."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from synth.formats.schemas import SCHEMA_NAMES, load_schema, validate
from tests.distill_runs import make_run_dir

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"
RUN_ID = "20261129-101500-a1b2c3"
SHA = "ab" * 32

RUN: dict[str, Any] = {
    "format": 1, "run_id": RUN_ID, "synth_version": "0.1.0",
    "task": {"name": "numpy-ext", "task_file": "/abs/tasks/numpy-ext/task.toml"},
    "agent": {"kind": "replay", "script": "/abs/good.sh", "argv": None, "stop_on_error": False},
    "base_image": {"ref": "synth/python:bookworm", "id": "sha256:" + SHA,
                   "labels": {"synth.kind": "base"}},
    "started": "2026-11-29T10:15:00Z", "ended": "2026-11-29T10:16:40Z",
    "status": "succeeded", "agent_exit_code": 0, "timeout": 3600.0,
    "source_tree": {"before": SHA, "after": SHA,
                    "changed": [{"path": "setup.py", "change": "modified"}]},
    "violations": [{"kind": "source_changed", "path": "setup.py", "change": "modified",
                    "detail": "/workspace/setup.py was modified by the agent"}],
    "claims": {"status": "valid", "errors": []},
    "live_image": {"ref": f"synth-live/numpy-ext:{RUN_ID}", "id": "sha256:" + SHA},
    "container": f"synth-run-numpy-ext-{RUN_ID}", "kept": False, "wheelhouse": "/opt/wheels",
    "ca_bundle": True, "secret_env": ["OPENAI_API_KEY"], "trace_exec": False,
    "capture_errors": [], "error": None,
}

AUDIT: list[dict[str, Any]] = [
    {"type": "header", "format": 1, "session": RUN_ID, "started": "2026-11-29T10:15:00Z",
     "raw_events": 4, "unparsed": 1},
    {"type": "command", "source": "synth", "session": RUN_ID, "seq": 1, "phase": "agent",
     "command": "pip install numpy", "argv": ["bash", "-c", "pip install numpy"],
     "cwd": "/workspace", "start": 1764410100.1, "end": 1764410108.0, "exit": 0,
     "pipestatus": [0], "timed_out": False},
    {"type": "command", "source": "bash-c", "session": RUN_ID, "seq": 2, "pid": 120,
     "ppid": 0, "command": "pip install numpy | tee log", "cwd": "/workspace",
     "cwd_end": "/workspace", "start": 1764410100.2, "end": 1764410107.9, "exit": 0,
     "pipestatus": [0], "depth": 0, "parent_seq": None},
    {"type": "command", "source": "bash-hook", "session": RUN_ID, "seq": 3, "pid": 120,
     "command": "pip install numpy", "cwd": "/workspace", "start": 1764410100.3,
     "end": 1764410107.8, "exit": 0, "pipestatus": [0, 0], "depth": 0, "parent_seq": 2,
     "pipeline": True},
    {"type": "command", "source": "bash-script", "session": RUN_ID, "seq": 4, "pid": 130,
     "ppid": 120, "command": "/workspace/build.sh", "cwd": "/workspace", "cwd_end": None,
     "start": 1764410101.0, "end": None, "exit": None, "pipestatus": None, "depth": 1,
     "parent_seq": 2, "incomplete": True},
    {"type": "command", "source": "exec-trace", "session": RUN_ID, "seq": 5, "pid": 131,
     "path": "/usr/bin/gcc", "argv": ["gcc", "-c", "x.c"], "command": "gcc -c x.c",
     "cwd": None, "start": 1764410102.0, "end": None, "exit": None, "pipestatus": None},
    {"type": "unparsed", "session": RUN_ID, "line": "{\"t\": 17644"},
]

APT = {"format": 1, "base": {"libc6": "2.36-9+deb12u10"},
       "final": {"libc6": "2.36-9+deb12u10", "git": "1:2.39.5-0+deb12u2"},
       "added": {"git": "1:2.39.5-0+deb12u2"},
       "changed": {"openssl": ["3.0.15-1~deb12u1", "3.0.17-1~deb12u2"]},
       "removed": {}, "manual": ["git"]}

PYTHON = {"format": 1, "primary": "/opt/venv/bin/python", "errors": [], "interpreters": [
    {"path": "/opt/venv/bin/python", "kind": "venv", "version": "3.11.2",
     "implementation": "cpython", "prefix": "/opt/venv", "base_prefix": "/usr",
     "realpath": "/usr/bin/python3.11", "sys_path": ["/opt/venv/lib/python3.11/site-packages"],
     "created_by_agent": True, "error": None, "distributions": [
         {"name": "fastops", "display_name": "fastops", "version": "0.1.0", "installer": "pip",
          "requested": True,
          "direct_url": {"url": "file:///workspace", "dir_info": {"editable": False}},
          "location": "/opt/venv/lib/python3.11/site-packages"},
         {"name": "numpy", "display_name": "numpy", "version": "1.26.4", "installer": "pip",
          "requested": True, "direct_url": None,
          "location": "/opt/venv/lib/python3.11/site-packages"}]}]}

DIFF = {"format": 1, "changes": [{"kind": "A", "path": "/opt/venv"}],
        "noise": [{"kind": "A", "path": "/root/.cache/pip", "reason": "cache"}]}

ENV = {"format": 1, "persisted": {"TORCH_CUDA_ARCH_LIST": "8.0;9.0"},
       "sources": {"TORCH_CUDA_ARCH_LIST": "/root/.bashrc"}}


def level(name: str, status: str, reason: str | None = None) -> dict[str, Any]:
    return {"level": name, "status": status, "reason": reason, "metrics": {}, "details": {},
            "seconds": 0.1}


def report(kind: str) -> dict[str, Any]:
    return {"target": {"kind": kind, "image": "img", "python": "/opt/venv/bin/python"},
            "highest": "C1",
            "levels": [level("C0", "pass"), level("C1", "pass"),
                       level("C2", "not_applicable", "numpy-only code"),
                       level("C3", "skipped", "no GPU runtime on this engine"),
                       level("C4", "not_reached", "C3 skipped"), level("C5", "pass")]}


VERIFY = {
    "format": 1, "synth_version": "0.1.0",
    "target": {"kind": "run", "path": "/abs/runs/numpy-ext/" + RUN_ID, "task": "numpy-ext",
               "artifact_dir": "/abs/export"},
    "require": "C1", "levels_selected": ["C0", "C1", "C2", "C3", "C4", "C5"],
    "decides": "rebuilt", "passed": True,
    "build": {"image": "synth-rebuilt/numpy-ext:3f2a", "image_id": "sha256:" + SHA,
              "seconds": 41.2, "log": "build.log", "no_cache": True,
              "artifact_dir": "/abs/export"},
    "reports": {"rebuilt": report("rebuilt"), "live": report("live")},
    "fidelity": {"live_highest": "C1", "rebuilt_highest": "C1", "reaches_live_level": True,
                 "gaps": []},
    "fingerprint": {"status": "compared", "a": "live", "b": "rebuilt", "equal": True},
}

CLAIMS = {"python_path": "/opt/venv/bin/python", "python_version": "3.11", "torch_version": None,
          "cuda_available": False, "gpu_count": 0, "ddp_expected_ok": None, "env_tool": "venv",
          "env_name": None, "notes": "x", "extra_field": {"anything": [1, 2]}}

DOCS: list[tuple[str, Any]] = [
    ("run", RUN), ("apt-state", APT), ("python-state", PYTHON), ("diff-state", DIFF),
    ("env-state", ENV), ("verify", VERIFY), ("claims", CLAIMS), ("claims", {}),
] + [("audit-record", rec) for rec in AUDIT]


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = load_schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schemas_ship_as_package_data() -> None:
    names = {p.name for p in resources.files("synth.formats.schemas").iterdir()}
    assert {f"{n}.schema.json" for n in SCHEMA_NAMES} <= names


@pytest.mark.parametrize(("name", "doc"), DOCS)
def test_real_shaped_documents_validate(name: str, doc: Any) -> None:
    assert validate(doc, name) == []


@pytest.mark.parametrize(("file", "name"), [
    ("manifest.json", "manifest"), ("export-report.json", "export-report"),
    ("claims.json", "claims"), ("plan.json", "plan"),
])
def test_golden_export_validates(file: str, name: str) -> None:
    doc = json.loads((GOLDEN / file).read_text(encoding="utf-8"))
    assert validate(doc, name) == []


def test_golden_manifest_with_inputs_validates() -> None:
    doc = json.loads((GOLDEN / "manifest.json").read_text(encoding="utf-8"))
    doc["inputs"] = {"run.json": SHA, "audit.jsonl": SHA}
    assert validate(doc, "manifest") == []
    doc["inputs"]["run.json"] = "not a digest"
    assert any(e.startswith("$.inputs['run.json']") for e in validate(doc, "manifest"))


def test_synthetic_run_dir_state_files_validate(tmp_path: Path) -> None:
    # make_run_dir writes simplified run.json / audit / python / diff documents; its apt,
    # env and claims files are real-shaped.
    run_dir = make_run_dir(tmp_path, apt_added={"git": "1:2.39"}, apt_manual=["git"],
                           env={"X": "1"}, claims={"python_path": "/opt/venv/bin/python"})
    for rel, name in [("state/apt.json", "apt-state"), ("state/env.json", "env-state"),
                      ("claims.json", "claims")]:
        doc = json.loads((run_dir / rel).read_text(encoding="utf-8"))
        assert validate(doc, name) == [], rel


def broken(doc: dict[str, Any], *path: str | int, value: Any = ..., drop: bool = False
           ) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target: Any = doc
    for key in path[:-1]:
        target = target[key]
    if drop:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(("name", "doc", "expect"), [
    ("run", broken(RUN, "status", drop=True), "$: 'status' is a required property"),
    ("run", broken(RUN, "status", value="done"), "$.status: 'done' is not one of"),
    ("run", broken(RUN, "format", value=2), "$.format: 1 was expected"),
    ("run", broken(RUN, "claims", "status", value="ok"), "$.claims.status:"),
    ("run", broken(RUN, "source_tree", "changed", 0, "change", value="renamed"),
     "$.source_tree.changed[0].change:"),
    ("audit-record", broken(AUDIT[3], "parent_seq", drop=True),
     "$: 'parent_seq' is a required property"),
    ("audit-record", broken(AUDIT[1], "argv", value="pip"), "$.argv: 'pip' is not of type"),
    ("audit-record", broken(AUDIT[0], "raw_events", value=-1), "$.raw_events:"),
    ("audit-record", broken(AUDIT[2], "source", value="zsh"), "$.source: 'zsh' is not one of"),
    ("python-state", broken(PYTHON, "interpreters", 0, "kind", value="docker"),
     "$.interpreters[0].kind:"),
    ("python-state", broken(PYTHON, "interpreters", 0, "distributions", 1, "name", drop=True),
     "$.interpreters[0].distributions[1]: 'name' is a required property"),
    ("diff-state", broken(DIFF, "changes", 0, "kind", value="X"), "$.changes[0].kind:"),
    ("apt-state", broken(APT, "changed", "openssl", value=["1"]), "$.changed.openssl:"),
    ("env-state", broken(ENV, "persisted", "X", value=1), "$.persisted.X:"),
    ("claims", {"gpu_count": "two"}, "$.gpu_count: 'two' is not of type"),
    ("verify", broken(VERIFY, "reports", "rebuilt", "levels", 2, "status", value="ok"),
     "$.reports.rebuilt.levels[2].status: 'ok' is not one of"),
    ("verify", broken(VERIFY, "reports", "rebuilt", "levels", 3, "reason", value=None),
     "$.reports.rebuilt.levels[3].reason: None is not of type 'string'"),
    ("verify", broken(VERIFY, "decides", value="both"), "$.decides:"),
    ("verify", broken(VERIFY, "passed", drop=True), "$: 'passed' is a required property"),
])
def test_broken_documents_name_the_path(name: str, doc: Any, expect: str) -> None:
    errors = validate(doc, name)
    assert any(e.startswith(expect) for e in errors), errors


@pytest.mark.parametrize(("name", "expect"), [
    ("manifest", "$.base_image: 'digest' is a required property"),
    ("export-report", "$.commands[0].decision: 'maybe' is not one of"),
])
def test_broken_golden_documents_name_the_path(name: str, expect: str) -> None:
    doc = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    if name == "manifest":
        del doc["base_image"]["digest"]
    else:
        doc["commands"][0]["decision"] = "maybe"
    errors = validate(doc, name)
    assert any(e.startswith(expect) for e in errors), errors


def test_unknown_schema_name() -> None:
    with pytest.raises(KeyError, match="no schema named"):
        load_schema("nope")
