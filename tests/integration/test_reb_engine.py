"""REB's contract on a real engine: the session's REB report path (one file, two names),
and the assets step of an imported task, run without network from a cache folder, then
installed into a network-less container where REB's CPU stage reads what it left.
Cheap: the session is the shared numpy-ext/good run; the assets step is two containers."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from synth.engine.base import ContainerSpec
from synth.reb.assets import install_assets, plan_assets, prepare_assets
from synth.reb.importer import RebRepo, task_toml

PREPARE = """#!/usr/bin/env bash
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$root/benchmark_assets/model" "$root/build_output/prepare"
if python3 -c "import socket; socket.create_connection(('pypi.org', 443), 3)" 2>/dev/null
then echo online; else echo offline; fi
cp "$root/benchmark_assets/cache/tiny.bin" "$root/benchmark_assets/model/tiny.bin"
echo '{"status": "success", "exit_code": 0}' > "$root/build_output/prepare/results.json"
"""
CPU = """#!/usr/bin/env bash
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
test -f "$root/build_output/prepare/results.json"
echo "cpu stage: model $(cat "$root/benchmark_assets/model/tiny.bin")"
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


def test_assets_step_offline_from_a_cache(engine: Any, base_image: str, tmp_path: Path) -> None:
    task = tmp_path / "task"
    scripts = task / "reb" / "benchmark_scripts"
    scripts.mkdir(parents=True)
    (scripts / "prepare_assets.sh").write_text(PREPARE)
    (scripts / "run_cpu_entrypoint.sh").write_text(CPU)
    (scripts / "runner.py").write_text("# REB's helpers travel with the folder\n")
    entry = {"repo_id": "acme-alpha", "repo_url": "https://github.com/acme/alpha",
             "commit_sha": "abc1234", "hardware_bucket": "cpu"}
    (task / "reb" / "manifest-entry.json").write_text(json.dumps(entry))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "tiny.bin").write_text("weights-v1")
    plan = plan_assets(task, cache_dir=cache, offline=True)
    assert plan is not None
    with prepare_assets(engine, base_image, plan) as assets:
        assert assets.exit_code == 0, assets.output_tail
        assert "offline" in assets.output_tail
        assert [p for p, _ in assets.archives] == ["/workspace", "/workspace",
                                                   "/workspace/build_output"]
        spec = ContainerSpec(image=base_image, network=False, workdir="/workspace")
        with engine.container(spec) as c:
            install_assets(c, assets)
            # the C1 probe exactly as import-reb writes it
            toml = task_toml(RebRepo("acme-alpha", entry["repo_url"], "abc1234", "cpu", entry),
                             entry["repo_url"], scripts)
            import tomllib

            probe = tomllib.loads(toml)["probes"]["cpu"]["command"]
            res = c.exec(["bash", "-c", probe], workdir="/workspace")
            listing = c.exec(["ls", "/workspace/benchmark_scripts"]).stdout.split()
    assert (res.exit_code, res.stdout) == (0, "cpu stage: model weights-v1\n"), res.stderr
    assert sorted(listing) == ["prepare_assets.sh", "run_cpu_entrypoint.sh", "runner.py"]
    assert (cache / "tiny.bin").read_text() == "weights-v1"  # the cache is read-only input


def test_reb_scoring_of_a_real_verification(
    verified: Callable[..., Any], tmp_path: Path
) -> None:
    """`--scoring reb` on the shared numpy-ext/good verification: REB's files beside it.
    C0 runs pyright in the rebuilt image where the host has pyright[nodejs] (importable,
    or SYNTH_PYRIGHT=DIR); elsewhere it says why it was skipped."""
    from synth.reb.pyright import find_pyright
    from synth.reb.results import read_results
    from synth.reb.scoring import score

    outcome = verified("numpy-ext", "good.sh")
    result = score(outcome.document, tmp_path)
    assert result["C5"] == {"reb": "success", "synth": "pass", "path": 0, "version": 0,
                            "capability": 0, "failure_category": ""}
    pyright = json.loads((tmp_path / "reb" / "benchmark" / "build_output" / "pyright" /
                          "results.json").read_text())
    if find_pyright() is None:
        assert result["C0"]["reb"] == "skipped"
        assert result["C0"]["reason"].startswith("pyright[nodejs] not found")
    else:  # numpy-ext's good transcript installs what its package imports
        assert (result["C0"]["reb"], pyright["missing_packages"]) == ("success", []), pyright
        assert pyright["metrics"]["missing_package_ratio"].startswith("0/")
        assert pyright["metrics"]["total_imported_packages_count"] > 0
    assert result["C0"]["synth"] == "pass"
    stages = read_results(tmp_path / "reb" / "benchmark")
    assert (stages["cpu"]["status"], stages["cuda"]["status"]) == ("success", "failure")
    assert json.loads((tmp_path / "reb" / "agent" / "report.json").read_text()) == \
        json.loads((Path(outcome.document["target"]["path"]) / "claims.json").read_text())
