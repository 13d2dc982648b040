"""bench/rebuild.py's and bench/stages.py's pure parts: step times from BuildKit's plain
progress, the ratios, the agent's statements from a run's events."""

from __future__ import annotations

import base64
import importlib.util
import json
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_rebuild", BENCH / "rebuild.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LOG = """#6 [2/4] RUN python3 -m venv /opt/venv
#6 DONE 2.5s
#7 [3/4] RUN --mount=type=secret,id=cacert  && /tmp/synth/uv/bin/uv pip install \
--no-config -r /tmp/synth/requirements.lock
#7 12.1 Installed 17 packages
#7 DONE 54.0s
#8 [4/4] COPY source/ /workspace/
#8 DONE 0.1s
"""


def test_step_times_and_install_seconds() -> None:
    mod = _module()
    times = mod.step_times(LOG)
    assert [round(t, 1) for _title, t in times] == [2.5, 54.0, 0.1]
    assert times[0][0] == "RUN python3 -m venv /opt/venv"
    assert mod.install_seconds(LOG) == 54.0
    pip = LOG.replace("/tmp/synth/uv/bin/uv pip install --no-config",
                      "/opt/venv/bin/python -m pip install --no-cache-dir --require-hashes")
    assert mod.install_seconds(pip) == 54.0
    assert mod.install_seconds("#1 [1/1] RUN true\n#1 DONE 1.0s\n") is None


def test_a_steps_title_is_one_short_line_without_its_mounts() -> None:
    short = _module()._short
    title = ("RUN --mount=type=secret,id=cacert,required=false     "
                         "--mount=type=bind,source=apt.lock,target=/tmp/synth/apt.lock "
                         "sh /tmp/synth/apt-fetch.sh /tmp/synth/apt.lock /tmp/synth/debs")
    assert short(title) == "RUN sh /tmp/synth/apt-fetch.sh /tmp/synth/apt.lock /tmp/synth/debs"
    replayed = ("RUN --mount=type=secret,id=cacert,target=/synth/ca/ca-bundle.crt "
                "PIP_CERT=/synth/ca/ca-bundle.crt bash -c \"$(echo "
                + base64.b64encode(b"cd /workspace && apt-get update\n").decode()
                + ' | base64 -d)"')
    assert short(replayed) == "RUN cd /workspace && apt-get update"
    long = short(title + " && " + "x" * 200)
    assert len(long) == 100 and long.endswith("…") and "--mount" not in long


def test_ratios_put_the_artifact_beside_both_limits_and_the_naive_replay() -> None:
    rows = {"limit-cold": {"build_s": 10.0, "python_install_s": 5.0, "image_mb": 100},
            "limit-bytecode": {"build_s": 20.0, "python_install_s": 16.0, "image_mb": 120},
            "synth-uv": {"build_s": 24.0, "python_install_s": 16.8, "image_mb": 121},
            "naive": {"build_s": 48.0, "python_install_s": None, "image_mb": 130}}
    got = _module().ratios(rows)
    assert got["synth-uv install / limit-bytecode"] == 1.05
    assert got["synth-uv install / limit-cold"] == 3.36
    assert got["synth-uv image / limit-bytecode"] == 1.01
    assert got["synth-uv build / naive"] == 0.5
    assert "naive install / limit-cold" not in got  # the replay has no install step


def test_the_stage_bench_takes_the_agents_statements_from_the_events(tmp_path: Path) -> None:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_stages", BENCH / "stages.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (tmp_path / "logs").mkdir()
    events = [
        {"ev": "shell", "shell": "a", "parent": "", "cmd": "apt-get update", "cwd": "/w",
         "t": 10.0},
        {"ev": "shell", "shell": "b", "parent": "a", "cmd": "nested", "cwd": "/w", "t": 10.5},
        {"ev": "shell-end", "shell": "b", "t": 11.0},
        {"ev": "shell-end", "shell": "a", "t": 12.5},
        {"ev": "shell", "shell": "c", "parent": "", "cmd": "pip install x", "t": 13.0},
        {"ev": "shell-end", "shell": "c", "t": 14.0},
        {"ev": "shell", "shell": "d", "parent": "", "cmd": "killed", "t": 15.0},
    ]
    (tmp_path / "logs" / "events.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events))
    got = mod.statements(tmp_path)
    assert [(s["cmd"], s["cwd"], s["end"] - s["start"]) for s in got] == [
        ("apt-get update", "/w", 2.5), ("pip install x", "/", 1.0)]
