"""A venv's own files (activation scripts, pyvenv.cfg, the interpreter's links) in the
fingerprint: real venvs made by Python's ``venv`` and by uv, probed by their own python."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from uv import find_uv_bin

from synth.compare.fingerprint import compare_fingerprints, differences
from synth.engine.fingerprint import PROBE_PATH
from synth.errors import VerifyError
from synth.formats.fingerprint import Fingerprint

BASE_PYTHON = "/usr/bin/python3"

pytestmark = pytest.mark.skipif(not Path(BASE_PYTHON).exists(),
                                reason=f"no {BASE_PYTHON} to make venvs from")


def make_venv(prefix: Path, how: str = "venv") -> None:
    shutil.rmtree(prefix, ignore_errors=True)
    if how == "uv":
        cmd = [find_uv_bin(), "venv", "--quiet", "--python", BASE_PYTHON, str(prefix)]
    else:
        cmd = [how if how != "venv" else BASE_PYTHON, "-m", "venv", "--without-pip", str(prefix)]
    subprocess.run(cmd, check=True, capture_output=True)


def probe(prefix: Path, tmp: Path) -> Fingerprint:
    proc = subprocess.run([str(prefix / "bin" / "python"), str(PROBE_PATH), "--workdir",
                           str(tmp / "no-workdir")], capture_output=True, text=True,
                          check=True, env={"PATH": "/usr/bin:/bin"})
    return Fingerprint.from_json(json.loads(proc.stdout))


def unexplained(a: Fingerprint, b: Fingerprint) -> list[str]:
    return [d.line for d in differences(compare_fingerprints(a, b)) if d.explained is None]


def test_the_probe_lists_a_venvs_own_files_and_what_made_it(tmp_path: Path) -> None:
    prefix = tmp_path / "v"
    make_venv(prefix)
    venv = probe(prefix, tmp_path).venv
    assert venv is not None
    assert (venv.prefix, venv.tool) == (str(prefix), "venv")
    assert {"bin/activate", "bin/activate.fish", "bin/python", "bin/python3"} <= set(venv.files)
    assert venv.files["bin/python"] == "symlink:python3"
    assert venv.cfg["include-system-site-packages"] == "false"
    assert "pyvenv.cfg" not in venv.files  # compared by key instead
    make_venv(prefix, "uv")
    uv_venv = probe(prefix, tmp_path).venv
    assert uv_venv is not None and uv_venv.tool.startswith("uv ")
    assert "bin/activate_this.py" in uv_venv.files


def test_the_system_interpreter_has_no_venv_section(tmp_path: Path) -> None:
    proc = subprocess.run([BASE_PYTHON, str(PROBE_PATH), "--workdir", str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout)["venv"] is None


def test_an_edit_or_a_file_added_in_the_venv_is_unexplained(tmp_path: Path) -> None:
    prefix = tmp_path / "v"
    make_venv(prefix)
    live = probe(prefix, tmp_path)
    make_venv(prefix)
    assert compare_fingerprints(live, probe(prefix, tmp_path)).venv == ()  # made again: same
    with (prefix / "bin" / "activate").open("a") as fh:
        fh.write("export LD_LIBRARY_PATH=/opt/cuda/lib64\n")
    (prefix / "bin" / "mytool").write_text("#!/bin/sh\necho hi\n")
    rebuilt = probe(prefix, tmp_path)
    cmp = compare_fingerprints(live, rebuilt)
    assert [(c.kind, c.key) for c in cmp.venv] == [
        ("changed", f"{prefix}/bin/activate"), ("added", f"{prefix}/bin/mytool")]
    assert not cmp.equal
    assert unexplained(live, rebuilt) == [
        f"venv: changed {prefix}/bin/activate ({live.venv.files['bin/activate'][:12]} -> "  # type: ignore[union-attr]
        f"{rebuilt.venv.files['bin/activate'][:12]})",  # type: ignore[union-attr]
        f"venv: added {prefix}/bin/mytool"]


def test_a_venv_made_by_another_tool_differs_in_the_tools_files_only(tmp_path: Path) -> None:
    prefix = tmp_path / "v"
    make_venv(prefix, "uv")
    live = probe(prefix, tmp_path)
    make_venv(prefix)
    rebuilt = probe(prefix, tmp_path)
    diffs = differences(compare_fingerprints(live, rebuilt))
    keys = {d.change.key[len(str(prefix)) + 1:] for d in diffs if d.section == "venv"}
    assert {"bin/activate", "bin/activate_this.py", "pyvenv.cfg: uv"} <= keys
    assert all(d.explained and "made by uv" in d.explained and "by venv in the rebuild"
               in d.explained for d in diffs if d.section == "venv")
    # The tool's own files only: anything else in the venv is still the agent's.
    (prefix / "bin" / "mytool").write_text("#!/bin/sh\n")
    assert unexplained(live, probe(prefix, tmp_path)) == [f"venv: added {prefix}/bin/mytool"]


def test_the_venv_command_as_typed_is_explained(tmp_path: Path) -> None:
    python311 = Path("/usr/bin/python3.11")
    if not python311.exists() or python311.resolve() != Path(BASE_PYTHON).resolve():
        pytest.skip("/usr/bin/python3.11 is not the base python3")
    prefix = tmp_path / "v"
    make_venv(prefix, str(python311))
    live = probe(prefix, tmp_path)
    make_venv(prefix)
    rebuilt = probe(prefix, tmp_path)
    # The same interpreter by another name: the command and the links' chain differ.
    assert {c.key[len(str(prefix)) + 1:] for c in compare_fingerprints(live, rebuilt).venv} == {
        "pyvenv.cfg: command", "bin/python", "bin/python3", "bin/python3.11"}
    assert unexplained(live, rebuilt) == []
    # A link to another file is not a name: still unexplained.
    (prefix / "bin" / "python3.11").unlink()
    (prefix / "bin" / "python3.11").write_text("#!/bin/sh\n")
    assert unexplained(live, probe(prefix, tmp_path))


def _fp(venv: Any) -> dict[str, Any]:
    return {"format": 1, "python": {"version": "3.11.2", "implementation": "CPython",
                                    "executable": "/opt/venv/bin/python"},
            "distributions": [], "native": [], "dpkg": None, "venv": venv}


def test_a_fingerprint_without_the_section_compares_nothing_of_it() -> None:
    made = {"prefix": "/opt/venv", "tool": "venv", "files": {"bin/x": "1"}}
    assert Fingerprint.from_json(_fp(None)).venv is None
    cmp = compare_fingerprints(Fingerprint.from_json(_fp(None)), Fingerprint.from_json(_fp(made)))
    assert (cmp.venv, cmp.venv_made) == ((), None)


@pytest.mark.parametrize("bad", [{"prefix": "/opt/venv"}, {"prefix": "/v", "tool": "venv",
                                                           "files": ["bin/x"]}])
def test_a_malformed_venv_section_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(VerifyError, match="Malformed fingerprint"):
        Fingerprint.from_json(_fp(bad))


def test_uvs_empty_lock_file_is_explained_and_only_when_empty(tmp_path: Path) -> None:
    prefix = tmp_path / "v"
    make_venv(prefix)
    live = probe(prefix, tmp_path)
    (prefix / ".lock").write_bytes(b"")  # what `uv pip install --python` leaves
    assert unexplained(live, probe(prefix, tmp_path)) == []
    (prefix / ".lock").write_text("not uv's\n")
    assert unexplained(live, probe(prefix, tmp_path)) == [f"venv: added {prefix}/.lock"]


def test_pipenvs_project_marker_is_the_tools_own(tmp_path: Path) -> None:
    """pipenv writes ``.project`` (the project folder) into the virtualenv it makes: the
    rebuild's ``python3 -m venv`` has none (seen on the env-tools pipenv transcript)."""
    prefix = tmp_path / "v"
    make_venv(prefix, "uv")  # another tool than the rebuild's venv
    (prefix / ".project").write_text("/workspace")
    live = probe(prefix, tmp_path)
    make_venv(prefix)
    assert unexplained(live, probe(prefix, tmp_path)) == []


def test_synth_diff_counts_the_venv_files_its_makers_do_not_write(tmp_path: Path) -> None:
    """``synth diff image:LIVE image:REBUILT`` lists what verify leaves unexplained and names
    the rest in the section's note, as it does launcher scripts (uv's empty .lock made an
    equal rebuild 'differ')."""
    from synth.compare.diff import Side, compare_fingerprint_sections

    prefix = tmp_path / "v"
    make_venv(prefix)
    live = probe(prefix, tmp_path)
    (prefix / ".lock").write_bytes(b"")
    rebuilt = probe(prefix, tmp_path)

    def files(a: Fingerprint, b: Fingerprint) -> Any:
        sides = [Side(kind="image", label=x, fingerprint=fp) for x, fp in (("a", a), ("b", b))]
        return compare_fingerprint_sections(*sides)[1]

    section = files(live, rebuilt)
    assert section.status == "equal", section.to_json()
    assert "the venv's own files differ as its makers write them, not counted: 1 file " \
           f"differs: added {prefix}/.lock" in (section.note or "")
    (prefix / "bin" / "mytool").write_text("#!/bin/sh\n")
    section = files(live, probe(prefix, tmp_path))
    assert section.status == "differ"
    assert [(i.kind, i.key) for i in section.items] == [("added", f"{prefix}/bin/mytool")]


def test_tool_caches_in_the_working_folder_are_never_compared(tmp_path: Path) -> None:
    """Seen on a pdm project: the agent's pytest left /workspace/.pytest_cache, which no
    artifact's source/ holds, and the rebuilt image was said not to match the live one."""
    from synth.engine.fingerprint import fingerprint
    from synth.engine.host import HostRuntime

    prefix, work = tmp_path / "v", tmp_path / "work"
    make_venv(prefix)
    for rel in ("src/a.py", ".pytest_cache/v/cache/nodeids", ".ruff_cache/x",
                "src/__pycache__/a.cpython-311.pyc", "b.pyc", ".mypy_cache/3.11/a.json"):
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text("x\n")
    python = str(prefix / "bin" / "python")
    fp = fingerprint(HostRuntime(Path(python)), python, str(work))
    assert sorted(fp.workspace or {}) == ["src/a.py"]
