"""Unaudited changes and code-loading risks are named from the run's own evidence."""

from __future__ import annotations

import json
from pathlib import Path

from distill_runs import cmd, dist, make_run_dir, system_python, venv

from synth.distill.load import load_run
from synth.distill.provenance import risks, unaudited_changes

T0 = 1764410100.0  # synthetic commands start every 2 s from here; simple ones last 0.5 s
SUBPROCESS = "python3 -c \"import subprocess; subprocess.run(['pip', 'install', 'evil'])\""


def _run(tmp_path: Path, provenance: dict[str, object], **kw: object) -> Path:
    run_dir = make_run_dir(
        tmp_path,
        [cmd("python3 -m venv /opt/venv", hooks=[("python3 -m venv /opt/venv", 0)]),
         cmd("/opt/venv/bin/pip install six", hooks=[("/opt/venv/bin/pip install six", 0)]),
         cmd("apt-get install -y jq", hooks=[("DEBIAN_FRONTEND=noninteractive apt-get install "
                                               "-y jq", 0)]),
         cmd(SUBPROCESS, hooks=[(SUBPROCESS, 0)])],
        python=[system_python(), venv(dists=[dist("six", "1.16.0"), dist("evil", "1.0")])],
        apt_added={"jq": "1.6-2.1"},
        **kw,  # type: ignore[arg-type]
    )
    audit = run_dir / "audit.jsonl"
    synth_rec = {"type": "command", "source": "synth", "session": "s", "seq": 99,
                 "command": "python3 -m venv /opt/venv", "cwd": "/workspace", "start": T0,
                 "end": T0 + 1, "exit": 0, "phase": "agent", "pipestatus": [0],
                 "argv": ["bash", "-c", "python3 -m venv /opt/venv"], "timed_out": False}
    audit.write_text(audit.read_text() + json.dumps(synth_rec) + "\n")
    (run_dir / "state" / "provenance.json").write_text(json.dumps(
        {"format": 1, "file_times": {}, "apt_times": {}, "dist_times": {}, "setuid": [],
         **provenance}))
    return run_dir


def test_changes_outside_every_audited_command_are_named(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, {
        "apt_times": {"jq": T0 + 4.2},  # during apt-get: explained
        # six during pip; evil during a python3 that ran pip itself: not an audited install
        "dist_times": {"/opt/venv/bin/python": {"six": T0 + 2.4, "evil": T0 + 6.2}},
        "file_times": {"/usr/local/bin/dropper": T0 + 40, "/opt/venv": T0 + 0.5,
                       "/etc/old": T0 - 3600},
    })
    found = unaudited_changes(load_run(run_dir))
    assert len(found) == 2, found
    assert found[0].startswith("distribution evil 1.0 in /opt/venv/bin/python")
    assert "no audited Python installer ran" in found[0]
    assert found[1].startswith("file /usr/local/bin/dropper")


def test_no_provenance_means_no_claim(tmp_path: Path) -> None:
    run_dir = _run(tmp_path, {})
    (run_dir / "state" / "provenance.json").unlink()
    assert load_run(run_dir).provenance is None
    assert unaudited_changes(load_run(run_dir)) == ()


def test_code_loading_changes_are_risks(tmp_path: Path) -> None:
    run_dir = _run(
        tmp_path, {"setuid": ["/usr/local/bin/rootme"]},
        env={"PYTHONPATH": "/tmp/evil", "OMP_NUM_THREADS": "1"},
        diff=[("A", "/opt/venv/lib/python3.11/site-packages/sitecustomize.py"),
              ("A", "/opt/venv/lib/python3.11/site-packages/zzz-hook.pth"),
              ("A", "/opt/venv/lib/python3.11/site-packages/distutils-precedence.pth"),
              ("A", "/opt/venv/lib/python3.11/site-packages/six.pth"),
              # hatchling's editable install of an installed distribution, and of none
              ("A", "/opt/venv/lib/python3.11/site-packages/_editable_impl_six.pth"),
              ("A", "/opt/venv/lib/python3.11/site-packages/_editable_impl_ghost.pth")],
    )
    found = risks(load_run(run_dir))
    text = "\n".join(found)
    assert "ENV PYTHONPATH=/tmp/evil (from /root/.bashrc) adds folders" in text
    assert "ENV PYTHONPATH points into /tmp/evil, which export does not carry" in text
    assert "sitecustomize.py: runs at every Python start" in text
    assert "zzz-hook.pth: a .pth file no installed distribution accounts for" in text
    assert "distutils-precedence" not in text and "six.pth" not in text
    assert "_editable_impl_ghost.pth: a .pth file no installed distribution" in text
    assert "/usr/local/bin/rootme: setuid/setgid file added by the agent" in text
    assert "OMP_NUM_THREADS" not in text
