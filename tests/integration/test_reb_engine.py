"""REB's contract on a real engine: the session's REB report path (one file, two names),
and verify's probe container of an imported task: the assets step run without network from
a cache folder, what it left and the agent's report installed in the network-less probe
container, where REB's CPU stage reads them and records `skipped`.
Cheap: the session is the shared numpy-ext/good run; the verification is two containers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synth.engine.base import ContainerSpec
from synth.plugins.reb.importer import RebRepo, task_toml
from synth.pyramid.runner import PyramidSpec
from synth.verify.command import ProbeContext, _verify_image, load_task_copy, pyramid_task

PREPARE = """#!/usr/bin/env bash
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/benchmark_assets/model" "$root/build_output/prepare"
if python3 -c "import socket; socket.create_connection(('pypi.org', 443), 3)" 2>/dev/null
then echo online; else echo offline; fi > "$root/benchmark_assets/network.txt"
cp "$root/benchmark_assets/cache/tiny.bin" "$root/benchmark_assets/model/tiny.bin"
echo '{"status": "success", "exit_code": 0}' > "$root/build_output/prepare/results.json"
"""
# REB's CPU stage as verify runs it: reads what the assets step left and the agent's report
# at REB's path, then records `skipped` (with its reason) and exits 0.
CPU = """#!/usr/bin/env bash
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test -f "$root/build_output/prepare/results.json"
report=/opt/scimlopsbench/report.json
py="$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['python_path'])" $report)"
assets="$root/benchmark_assets"
why="model $(cat "$assets/model/tiny.bin"), $(cat "$assets/network.txt"), python $py"
mkdir -p "$root/build_output/cpu"
echo "{\\"status\\": \\"skipped\\", \\"skip_reason\\": \\"$why\\"}" \\
  > "$root/build_output/cpu/results.json"
"""


def test_session_offers_reb_report_path(
    engine: Any, task_run: Callable[[str, str], Path]
) -> None:
    run_dir = task_run("numpy-ext", "good.sh")
    run = json.loads((run_dir / "run.json").read_text())
    assert run["claims"]["status"] == "valid"  # written at synth's name, read as before
    with engine.container(ContainerSpec(image=run["live_image"]["ref"], network=False)) as c:
        res = c.exec(["readlink", "/opt/scimlopsbench/report.json"])
    assert res.stdout.strip() == "/synth/claims.json", res.stderr
    diff = json.loads((run_dir / "state" / "diff.json").read_text())
    assert not [c for c in diff["changes"] if c["path"].startswith("/opt/scimlopsbench")]
    assert {"kind": "A", "path": "/opt/scimlopsbench/report.json",
            "reason": "REB's report path, a second name of the claims file"} in diff["noise"]


def test_verify_runs_the_assets_step_offline_then_reb_probes(
    engine: Any, base_image: str, tmp_path: Path
) -> None:
    """verify's probe container of a REB task (``_verify_image`` with the task's probe
    context, as ``synth verify --assets-cache DIR --assets-offline`` builds it): the assets
    step runs without network from the cache; the probe container gets what it left and the
    agent's report at REB's path; REB's CPU stage writes `skipped` and exits 0, and C1 reads
    `skipped` with REB's reason."""
    task_dir = tmp_path / "task"
    scripts = task_dir / "reb" / "benchmark_scripts"
    scripts.mkdir(parents=True)
    (scripts / "prepare_assets.sh").write_text(PREPARE)
    (scripts / "run_cpu_entrypoint.sh").write_text(CPU)
    entry = {"repo_id": "acme-alpha", "repo_url": "https://github.com/acme/alpha",
             "commit_sha": "abc1234", "hardware_bucket": "cpu"}
    (task_dir / "reb" / "manifest-entry.json").write_text(json.dumps(entry))
    (task_dir / "task.toml").write_text(task_toml(  # the task exactly as import-reb writes it
        RebRepo("acme-alpha", entry["repo_url"], "abc1234", "cpu", entry), entry["repo_url"],
        {"run_cpu_entrypoint.sh": CPU}))
    task = load_task_copy(task_dir / "task.toml")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tiny.bin").write_text("weights-v1")
    claims = tmp_path / "claims.json"
    claims.write_text(json.dumps({"python_path": "/usr/bin/python3"}))
    said: list[str] = []
    spec = PyramidSpec(python="/usr/bin/python3", task=pyramid_task(task),
                       levels=frozenset({"C1"}), target={"kind": "rebuilt"})
    ctx = ProbeContext(task_dir, claims, task.probes.workdir, cache, assets_offline=True)
    report = _verify_image(engine, base_image, spec, said.append, ctx)
    c1 = report.get("C1")
    assert c1 is not None and (c1.status, c1.reason) == (
        "skipped", "REB's cpu stage skipped: model weights-v1, offline, python "
        "/usr/bin/python3"), (c1, said)
    assert said[0].startswith("Assets: REB prepare_assets.sh without network from the cache")
    assert said[1].startswith("Assets: exit 0")
    assert (cache / "tiny.bin").read_text() == "weights-v1"  # the cache is read-only input


def test_reb_scoring_of_a_real_verification(
    verified: Callable[..., Any], engine: Any, tmp_path: Path
) -> None:
    """`--scoring reb` on the shared numpy-ext/good verification, through verify's scoring
    hook (the reb profile's scoring): REB's files beside it, its summary as verify.json's
    `scores.reb`.
    C0 runs pyright in the rebuilt image where the host has pyright[nodejs] (importable,
    or SYNTH_PYRIGHT=DIR); elsewhere it says why it was skipped."""
    from dataclasses import replace

    from synth.formats.schemas import validate
    from synth.plugins.reb.pyright import find_pyright
    from synth.plugins.reb.results import read_results
    from synth.verify.command import _score

    outcome = verified("numpy-ext", "good.sh")
    said: list[str] = []
    scored = _score(replace(outcome, out_dir=tmp_path, options=replace(
        outcome.options, scoring=("reb",))), engine, said.append)
    result = scored.document["scores"]["reb"]
    assert json.loads((tmp_path / "reb" / "scoring.json").read_text()) == result
    assert [line.split(":")[0] for line in said] == ["REB scoring", "REB scoring"]
    assert validate(json.loads(json.dumps(scored.document)), "verify") == []
    assert result["C5"] == {"reb": "success", "synth": "pass", "path": 0, "version": 0,
                            "capability": 0, "failure_category": "", "by": "synth"}
    pyright = json.loads((tmp_path / "reb" / "benchmark" / "build_output" / "pyright" /
                          "results.json").read_text())
    if find_pyright() is None:  # synth's C0 scan's counts stand, and say why
        assert (result["C0"]["reb"], result["C0"]["by"]) == ("success", "synth C0 scan")
        assert "pyright[nodejs] not found" in result["C0"]["reason"]
        assert pyright["missing_package_ratio"].startswith("0/")
    else:  # numpy-ext's good transcript installs what its package imports
        assert (result["C0"]["reb"], pyright["missing_packages"]) == ("success", []), pyright
        assert result["C0"]["by"] == "synth pyright"
        assert pyright["metrics"]["missing_package_ratio"].startswith("0/")
        assert pyright["metrics"]["total_imported_packages_count"] > 0
    assert result["C0"]["synth"] == "pass"
    stages = read_results(tmp_path / "reb" / "benchmark")
    assert (stages["cpu"]["status"], stages["cuda"]["status"]) == ("success", "failure")
    assert json.loads((tmp_path / "reb" / "agent" / "report.json").read_text()) == \
        json.loads((Path(outcome.document["target"]["path"]) / "claims.json").read_text())


# A C0 script shaped like REB's run_pyright_missing_imports.sh (our own): --repo, the
# report's interpreter, `python -m pyright` over the package, REB's counts in results.json.
C0_SCRIPT = r"""#!/usr/bin/env bash
set -uo pipefail
repo=""
while [[ $# -gt 0 ]]; do case "$1" in --repo) repo="$2"; shift 2;; *) shift;; esac; done
out="$repo/build_output/pyright"; mkdir -p "$out"
py="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["python_path"])' \
      "$SCIMLOPSBENCH_REPORT" 2>/dev/null || echo python3)"
"$py" -m pyright "$repo/src" --outputjson > "$out/pyright_output.json"
python3 - "$out" "$py" <<'PY'
import json, re, sys
out, py = sys.argv[1], sys.argv[2]
diags = json.load(open(out + "/pyright_output.json")).get("generalDiagnostics", [])
missing = sorted({m.group(1) for d in diags if d.get("rule") == "reportMissingImports"
                  for m in [re.search(r'Import "([^."]+)', d.get("message", ""))] if m})
json.dump({"stage": "pyright", "status": "success", "exit_code": 0, "meta": {"python": py},
           "missing_packages": missing, "missing_packages_count": len(missing),
           "total_imported_packages_count": 3,
           "missing_package_ratio": "%d/3" % len(missing)}, open(out + "/results.json", "w"))
PY
"""


def test_rebs_own_c0_script_runs_in_the_rebuilt_image(
    verified: Callable[..., Any], engine: Any, tmp_path: Path
) -> None:
    """--scoring reb's C0 for a task with REB's scripts: the repository's own C0 script,
    run offline in the rebuilt image with the host's pyright importable and the agent's
    report at REB's path; its results.json is the stage file. Needs pyright[nodejs] on the
    host (SYNTH_PYRIGHT=DIR, e.g. the site-packages of a venv that has it)."""
    import pytest

    from synth.plugins.reb.c0script import run_reb_c0
    from synth.plugins.reb.pyright import find_pyright

    install = find_pyright()
    if install is None:
        pytest.skip("pyright[nodejs] not found on this host (SYNTH_PYRIGHT=DIR)")
    outcome = verified("numpy-ext", "good.sh")
    image = outcome.document["reports"]["rebuilt"]["target"]["image"]
    scripts = tmp_path / "benchmark_scripts"
    scripts.mkdir()
    (scripts / "run_pyright_missing_imports.sh").write_text(C0_SCRIPT)
    claims = Path(outcome.document["target"]["path"]) / "claims.json"
    got = run_reb_c0(engine, image, "/workspace", scripts, claims, install)
    assert (got["status"], got["measured_by"]) == ("success", "reb script"), got
    assert got["meta"]["python"] == json.loads(claims.read_text())["python_path"]
    # the venv the agent built resolves numpy; fastops._ext is the repo's own module
    assert "numpy" not in got["missing_packages"], got
