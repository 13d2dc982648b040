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
              ("A", "/opt/venv/lib/python3.11/site-packages/_editable_impl_ghost.pth"),
              # a package's own data, never read at start (pdm's PEP 582 helper)
              ("A", "/opt/pdm/lib/python3.11/site-packages/pdm/pep582/sitecustomize.py"),
              ("A", "/opt/venv/lib/python3.11/site-packages/pkg/data/datahook.pth")],
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
    assert "pep582" not in text and "datahook.pth" not in text, text


def test_code_loading_risks_name_every_pth_preload_and_changed_module() -> None:
    """A .pth as its distribution installed it (``_ok.pth``) comes with the lock: not a
    risk, or every venv with setuptools or an editable install would have one."""
    from synth.distill.provenance import code_loading_risks, merged_risks

    found = {"pth": [
        {"path": "/v/site/evil.pth", "executable_lines": 1, "first": "import os; os.system('x')",
         "owner": None, "matches_record": False},
        {"path": "/v/site/distutils-precedence.pth", "executable_lines": 1,
         "first": "import os; x", "owner": "setuptools", "matches_record": False},
        {"path": "/v/site/_ok.pth", "executable_lines": 1, "first": "import _ok",
         "owner": "ok", "matches_record": True},
        {"path": "/v/site/paths.pth", "executable_lines": 0, "first": None, "owner": None,
         "matches_record": False}],
        "startup": ["/v/site/sitecustomize.py"], "ld_so_preload": "/lib/libhook.so\n"}
    risks = code_loading_risks(found, [("/v/site/six.py", "six"), ("/v/site/d.txt", "d")])
    assert risks == (
        "/etc/ld.so.preload: loads /lib/libhook.so into every process",
        "/v/site/distutils-precedence.pth: a .pth file of setuptools changed after install: "
        "1 line(s) Python runs at every start (`import os; x`)",
        "/v/site/evil.pth: a .pth file no installed distribution lists: 1 line(s) Python "
        "runs at every start (`import os; os.system('x')`)",
        "/v/site/sitecustomize.py: runs at every Python start",
        "/v/site/six.py: code of six changed after install (its RECORD says otherwise); the "
        "artifact carries the changed file")
    # What the base image came with and the run never touched (Debian's own .pth in
    # dist-packages) is not the run's doing; what it added or changed still is.
    changed = {"/v/site/evil.pth", "/v/site/six.py"}
    assert code_loading_risks(found, [("/v/site/six.py", "six")], changed) == (
        "/etc/ld.so.preload: loads /lib/libhook.so into every process", risks[2], risks[4])
    diff_based = ("/v/site/evil.pth: a .pth file no installed distribution accounts for "
                  "(its import lines run at every Python start)", "ENV LD_PRELOAD=x")
    assert merged_risks(diff_based, risks, probe_ran=True) == tuple(sorted(
        {"ENV LD_PRELOAD=x", *risks}))
    assert set(diff_based) <= set(merged_risks(diff_based, (), probe_ran=False))


def test_the_code_loading_probe_reads_a_real_environment(tmp_path: Path) -> None:
    import json
    import subprocess
    import venv

    from synth.export.live_facts import CODE_LOADING_PROBE

    venv.EnvBuilder(with_pip=False).create(tmp_path / "v")
    python = tmp_path / "v" / "bin" / "python"
    site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "evil.pth").write_text("/tmp/somewhere\nimport os; os.environ['X'] = '1'\n")
    Path(site, "sitecustomize.py").write_text("")
    out = subprocess.run([python, "-c", CODE_LOADING_PROBE.read_text()], capture_output=True,
                         text=True, check=True).stdout
    found = json.loads(out)
    evil = [p for p in found["pth"] if p["path"].endswith("evil.pth")]
    assert evil == [{"path": str(Path(site).resolve() / "evil.pth"), "executable_lines": 1,
                     "first": "import os; os.environ['X'] = '1'", "owner": None,
                     "matches_record": False}]
    assert any(p.endswith("sitecustomize.py") for p in found["startup"])


def test_the_code_loading_probe_takes_a_conda_packages_pth_as_owned(tmp_path: Path) -> None:
    """A .pth a conda package installed is listed in its ``conda-meta`` record with its
    sha256 (conda's Python has one): owned while unchanged, "changed after install" once
    edited, never "no installed distribution lists it"."""
    import hashlib
    import json
    import subprocess
    import sys

    probe = (Path(__file__).resolve().parents[2] / "synth" / "pyramid" / "probes"
             / "code_loading.py")
    site_dir = tmp_path / "lib" / "python3.11" / "site-packages"
    site_dir.mkdir(parents=True)
    pth = site_dir / "conda-site.pth"
    pth.write_text("import os\n")
    (tmp_path / "conda-meta").mkdir()
    (tmp_path / "conda-meta" / "python-3.11.2-0.json").write_text(json.dumps(
        {"name": "python", "paths_data": {"paths": [
            {"_path": "lib/python3.11/site-packages/conda-site.pth", "path_type": "hardlink",
             "sha256": hashlib.sha256(b"import os\n").hexdigest()}]}}))

    def probed() -> dict[str, object]:
        code = (f"import sys, site; sys.prefix = sys.base_prefix = {str(tmp_path)!r}; "
                f"site.getsitepackages = lambda: [{str(site_dir)!r}]; "
                f"exec(compile(open({str(probe)!r}).read(), 'probe', 'exec'))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        (entry,) = [p for p in json.loads(out)["pth"] if p["path"] == str(pth)]
        return entry

    assert probed()["owner"] == "python (conda)" and probed()["matches_record"] is True
    pth.write_text("import os; import evil\n")
    assert probed()["owner"] == "python (conda)" and probed()["matches_record"] is False


def test_pipenv_and_wrapped_installers_explain_what_they_installed(tmp_path: Path) -> None:
    """Seen on a real pipenv project: every distribution `pipenv sync` installed was listed
    as changed while no installer ran. Installers behind assignments, wrappers such as
    ``sudo`` and ``<tool> run`` count too."""
    lines = ["PIPENV_VENV_IN_PROJECT=1 /opt/pipenv/bin/pipenv sync",
             "sudo -u root -H /opt/venv/bin/pip install attrs",
             "pipenv run pip install tabulate",
             "env PIP_NO_CACHE_DIR=1 nice -n 5 pip3 install idna"]
    run_dir = make_run_dir(
        tmp_path, [cmd(line, hooks=[(line, 0)]) for line in lines],
        python=[system_python(), venv(dists=[dist(n, "1.0") for n in
                                             ("six", "attrs", "tabulate", "idna", "evil")])])
    audit = run_dir / "audit.jsonl"  # the session's start, as synth records it
    audit.write_text(audit.read_text() + json.dumps(
        {"type": "command", "source": "synth", "session": "s", "seq": 99, "command": "true",
         "cwd": "/workspace", "start": T0, "end": T0 + 1, "exit": 0, "phase": "agent",
         "pipestatus": [0], "argv": ["true"], "timed_out": False}) + "\n")
    (run_dir / "state" / "provenance.json").write_text(json.dumps(
        {"format": 1, "file_times": {}, "apt_times": {}, "setuid": [],
         "dist_times": {"/opt/venv/bin/python": {
             "six": T0 + 0.3, "attrs": T0 + 2.3, "tabulate": T0 + 4.3, "idna": T0 + 6.3,
             "evil": T0 + 9.0}}}))
    found = unaudited_changes(load_run(run_dir))
    assert [f.split(" (")[0] for f in found] == [
        "distribution evil 1.0 in /opt/venv/bin/python"], found
