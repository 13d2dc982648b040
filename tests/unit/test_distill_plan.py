"""distill() over synthetic run directories: what is kept, folded, dropped, unexplained."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from distill_runs import cmd, dist, make_run_dir, system_python, venv

from synth.distill.extractors import classify
from synth.distill.load import load_run
from synth.distill.plan import BuildPlan, DistillReport, distill
from synth.distill.shell import SimpleCommand
from synth.distill.steps import VenvCreate
from synth.errors import InputFileError

REPO = Path(__file__).resolve().parents[2]
NUMPY_TASK = REPO / "tasks" / "numpy-ext" / "task.toml"


def plan_of(tmp_path: Path, audit: list[dict[str, object]], **kw: object
            ) -> tuple[BuildPlan, DistillReport]:
    return distill(load_run(make_run_dir(tmp_path, audit, **kw)))  # type: ignore[arg-type]


def decisions(report: DistillReport) -> dict[str, tuple[str, str]]:
    return {o.command: (o.decision, o.reason) for o in report.outcomes}


def test_sloppy_session(tmp_path: Path) -> None:
    audit = [
        cmd("ls -la"),
        cmd("python3 -m venv /opt/venv"),
        cmd("/opt/venv/bin/pip install numpy==2.99.0", exit=1),
        cmd("/opt/venv/bin/pip install cython"),
        cmd("cd /workspace && /opt/venv/bin/pip install .",
            hooks=[("cd /workspace", 0), ("/opt/venv/bin/pip install .", 0)]),
        cmd("/opt/venv/bin/pip uninstall -y cython fastops"),
        cmd("apt-get update && apt-get install -y build-essential",
            hooks=[("apt-get update", 0), ("apt-get install -y build-essential", 0)]),
        cmd('cd /workspace && export CFLAGS="-O2 -g0" && /opt/venv/bin/pip install '
            "--no-build-isolation .",
            hooks=[("cd /workspace", 0), ('export CFLAGS="-O2 -g0"', 0),
                   ("/opt/venv/bin/pip install --no-build-isolation .", 0)]),
        cmd("nvidia-smi", exit=127),
    ]
    py = [system_python(), venv(dists=[
        dist("numpy", "2.3.5"), dist("pip", "23.0.1"),
        dist("fastops", "0.1.0", direct_url={"url": "file:///workspace", "dir_info": {}}),
    ])]
    plan, report = plan_of(tmp_path, audit, python=py, apt_added={"build-essential": "12.9",
                                                          "gcc": "4:12.2.0-3"},
                   apt_manual=["build-essential"], task_file=NUMPY_TASK)
    d = decisions(report)
    assert d["ls -la"] == ("dropped", "read-only")
    assert d["/opt/venv/bin/pip install numpy==2.99.0"] == ("dropped", "failed (exit 1)")
    assert d["/opt/venv/bin/pip install cython"][1].startswith("undone")
    assert d["/opt/venv/bin/pip install ."][0] == "dropped"
    assert d["nvidia-smi"][0] == "dropped"
    assert d["apt-get install -y build-essential"][0] == "kept"
    assert d["apt-get update"][0] == "folded"
    assert plan.apt.pins == (("build-essential", "12.9"), ("gcc", "4:12.2.0-3"))
    assert plan.apt.auto == ("gcc",)
    [env] = plan.envs
    assert env.python == "/opt/venv/bin/python" and env.create == ("python3", "-m", "venv",
                                                                   "/opt/venv")
    assert env.pins == (("numpy", "2.3.5"), ("pip", "23.0.1"))
    [native] = plan.native
    assert native.argv == ("/opt/venv/bin/python", "-m", "pip", "install", "--no-deps",
                           "--no-build-isolation", "/workspace")
    assert native.env == (("CFLAGS", "-O2 -g0"),)
    assert native.distribution == "fastops==0.1.0"
    assert plan.source.kind == "path"
    assert ("PATH", "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            ) in plan.env


def test_replaced_pin_is_dropped_and_later_one_kept(tmp_path: Path) -> None:
    audit = [cmd("python3 -m venv /opt/venv"), cmd('/opt/venv/bin/pip install "tensorboardX==2.5"'),
             cmd("/opt/venv/bin/pip install --upgrade tensorboardX")]
    py = [system_python(), venv(dists=[dist("tensorboardx", "2.6.2")])]
    d = decisions(plan_of(tmp_path, audit, python=py)[1])
    assert d['/opt/venv/bin/pip install "tensorboardX==2.5"'][1].startswith("replaced")
    assert d["/opt/venv/bin/pip install --upgrade tensorboardX"][0] == "kept"


def test_apt_install_then_remove_is_undone(tmp_path: Path) -> None:
    audit = [cmd("apt-get install -y vim"), cmd("apt-get remove -y vim")]
    d = decisions(plan_of(tmp_path, audit)[1])
    assert d["apt-get install -y vim"][1].startswith("undone")
    assert d["apt-get remove -y vim"][0] == "folded"


def test_wheelhouse_find_links_and_local_version(tmp_path: Path) -> None:
    audit = [cmd("python3 -m venv /opt/venv"),
             cmd("/opt/venv/bin/pip install --find-links /synth/wheelhouse torch==2.13.0+cpu")]
    py = [system_python(), venv(dists=[dist("torch", "2.13.0+cpu")])]
    plan, _report = plan_of(tmp_path, audit, python=py)
    assert plan.envs[0].find_links == ("/synth/wheelhouse",)
    assert plan.uses_wheelhouse


def test_build_env_and_vcs_and_clone(tmp_path: Path) -> None:
    audit = [
        cmd("python3 -m venv /opt/venv"),
        cmd("git clone https://g/dep.git /opt/dep"),
        cmd("cd /opt/dep && TORCH_CUDA_ARCH_LIST='8.0;9.0' MAX_JOBS=2 /opt/venv/bin/pip "
            "install -e ."),
        cmd("/opt/venv/bin/pip install git+https://g/vcs.git@main"),
    ]
    py = [system_python(), venv(dists=[
        dist("dep", "1.0", direct_url={"url": "file:///opt/dep",
                                       "dir_info": {"editable": True}}),
        dist("vcs", "2.0", direct_url={"url": "https://g/vcs.git",
                                       "vcs_info": {"vcs": "git", "commit_id": "abc123"}}),
    ])]
    plan, _report = plan_of(tmp_path, audit, python=py)
    tools = [s.tool for s in plan.native]
    assert tools == ["git-clone", "pip-local", "pip-vcs"]
    clone, local, vcs = plan.native
    assert clone.argv == ("git", "clone", "https://g/dep.git", "/opt/dep")
    assert local.env == (("MAX_JOBS", "2"), ("TORCH_CUDA_ARCH_LIST", "8.0;9.0"))
    assert local.argv[-2:] == ("-e", "/opt/dep")
    assert vcs.argv[-1] == "vcs @ git+https://g/vcs.git@abc123"


def test_an_editable_install_with_extras_is_replayed(tmp_path: Path) -> None:
    # Seen on lucidrains/x-transformers: `pip install -e '.[examples]'` was taken for an
    # install of the folder "/workspace/.[examples]", dropped, and not reproduced.
    audit = [cmd("python3 -m venv /opt/venv"),
             cmd("cd /workspace && /opt/venv/bin/pip install -e '.[examples]'")]
    py = [system_python(), venv(dists=[
        dist("xt", "2.0", direct_url={"url": "file:///workspace",
                                      "dir_info": {"editable": True}})])]
    plan, report = plan_of(tmp_path, audit, python=py)
    [local] = plan.native
    assert local.tool == "pip-local" and local.argv[-2:] == ("-e", "/workspace")
    assert [o.decision for o in report.outcomes if "examples" in o.command] == ["kept"]


def test_system_python_installs_break_system_packages(tmp_path: Path) -> None:
    audit = [cmd("pip install --break-system-packages wandb")]
    py = [system_python([dist("wandb", "0.18.0",
                              location="/usr/local/lib/python3.11/dist-packages"),
                         dist("pip", "23.0.1", installer=None,
                              location="/usr/lib/python3/dist-packages")])]
    plan, _report = plan_of(tmp_path, audit, python=py, primary="/usr/bin/python3")
    [env] = plan.envs
    assert env.kind == "system" and env.create == () and env.break_system_packages
    assert env.pins == (("wandb", "0.18.0"),)
    assert plan.python == "/usr/bin/python3"


def test_conda_is_reported_with_pip_mapping(tmp_path: Path) -> None:
    audit = [cmd("conda install -y pyyaml", exit=127), cmd("mamba install -y pyyaml"),
             cmd("python3 -m venv /opt/venv"), cmd("/opt/venv/bin/pip install pyyaml")]
    py = [system_python(), venv(dists=[dist("pyyaml", "6.0.2")])]
    _plan, report = plan_of(tmp_path, audit, python=py)
    d = decisions(report)
    assert d["mamba install -y pyyaml"][0] == "dropped"
    assert "pyyaml==6.0.2" in d["mamba install -y pyyaml"][1]
    assert any("conda is not reproduced" in n for n in report.not_reproducible)


def test_persisted_env_and_unexplained(tmp_path: Path) -> None:
    audit = [cmd("echo 'export HF_HOME=/data/hf' >> ~/.bashrc"),
             cmd("wget -O /data/w.ckpt https://h/w.ckpt"), cmd("python3 -m venv /opt/venv")]
    plan, report = plan_of(tmp_path, audit, env={"HF_HOME": "/data/hf"},
                   diff=[("C", "/opt"), ("A", "/opt/venv"), ("A", "/opt/venv/bin"),
                         ("A", "/data"), ("A", "/data/w.ckpt"), ("C", "/root"),
                         ("C", "/root/.bashrc"), ("C", "/etc/motd")])
    assert ("HF_HOME", "/data/hf") in plan.env
    assert decisions(report)["echo 'export HF_HOME=/data/hf' >> ~/.bashrc"][0] == "kept"
    assert report.unexplained == ("A /data", "C /etc/motd")


def test_ca_env_never_reaches_the_image(tmp_path: Path) -> None:
    plan, _report = plan_of(tmp_path, [cmd("export PIP_CERT=/synth/ca/ca-bundle.crt && "
                                  "python3 setup.py build_ext")],
                   env={"PIP_CERT": "/synth/ca/ca-bundle.crt", "TOKEN": "***"})
    assert not any(k in ("PIP_CERT", "TOKEN") for k, _ in plan.env)
    assert all(k != "PIP_CERT" for s in plan.native for k, _ in s.env)


def test_plan_is_deterministic_and_json_serialisable(tmp_path: Path) -> None:
    a = plan_of(tmp_path / "a", [cmd("python3 -m venv /opt/venv")])
    b = plan_of(tmp_path / "b", [cmd("python3 -m venv /opt/venv")])
    assert a == b
    json.dumps(a[0].to_json())
    json.dumps(a[1].to_json())


def test_newer_format_is_refused(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, [])
    data = json.loads((run_dir / "state/python.json").read_text())
    data["format"] = 99
    (run_dir / "state/python.json").write_text(json.dumps(data))
    with pytest.raises(InputFileError, match="newer"):
        load_run(run_dir)


def test_missing_state_is_refused(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path, [])
    (run_dir / "state/apt.json").unlink()
    with pytest.raises(InputFileError, match=r"apt\.json: missing"):
        load_run(run_dir)


def test_range_pin_replaced_later_is_dropped(tmp_path: Path) -> None:
    audit = [cmd("python3 -m venv /opt/venv"),
             cmd('/opt/venv/bin/pip install "setuptools<70" pybind11'),
             cmd("/opt/venv/bin/pip uninstall -y pybind11"),
             cmd('/opt/venv/bin/pip install --upgrade "setuptools>=77"')]
    py = [system_python(), venv(dists=[dist("setuptools", "80.9.0")])]
    d = decisions(plan_of(tmp_path, audit, python=py)[1])
    assert d['/opt/venv/bin/pip install "setuptools<70" pybind11'] == (
        "dropped", "replaced: a later command changed setuptools to 80.9.0 and removed pybind11")
    assert d['/opt/venv/bin/pip install --upgrade "setuptools>=77"'][0] == "kept"


def test_partly_undone_install_is_kept_with_notes(tmp_path: Path) -> None:
    audit = [cmd("python3 -m venv /opt/venv"),
             cmd("/opt/venv/bin/pip install numpy scipy tqdm"),
             cmd('/opt/venv/bin/pip install "numpy==1.26.*"'),
             cmd("/opt/venv/bin/pip uninstall -y tqdm")]
    py = [system_python(), venv(dists=[dist("numpy", "1.26.4"), dist("scipy", "1.15.3")])]
    d = decisions(plan_of(tmp_path, audit, python=py)[1])
    assert d["/opt/venv/bin/pip install numpy scipy tqdm"] == (
        "kept", "requirements.lock (versions from the final state); later undone: tqdm; "
        "later replaced: numpy (now 1.26.4)")
    assert d['/opt/venv/bin/pip install "numpy==1.26.*"'][0] == "kept"


def test_install_fully_reinstalled_later_is_dropped(tmp_path: Path) -> None:
    audit = [cmd("python3 -m venv /opt/venv"), cmd("/opt/venv/bin/pip install numpy"),
             cmd('/opt/venv/bin/pip install "numpy==1.26.*"')]
    py = [system_python(), venv(dists=[dist("numpy", "1.26.4")])]
    d = decisions(plan_of(tmp_path, audit, python=py)[1])
    assert d["/opt/venv/bin/pip install numpy"] == (
        "dropped", "replaced: a later command changed numpy to 1.26.4")


def _local_install_of_pythonapi() -> list[dict[str, object]]:
    """A venv, numpy, then ``pip install --no-build-isolation .`` in /workspace/PythonAPI."""
    return [
        cmd("python3 -m venv /opt/venv"),
        cmd("/opt/venv/bin/pip install numpy"),
        cmd("cd /workspace/PythonAPI && /opt/venv/bin/pip install --no-build-isolation .",
            hooks=[("cd /workspace/PythonAPI", 0),
                   ("/opt/venv/bin/pip install --no-build-isolation .", 0)]),
    ]


@pytest.mark.parametrize("legacy", [True, False])
def test_a_local_install_pips_legacy_path_left_unrecorded_is_named_not_called_undone(
        tmp_path: Path, legacy: bool) -> None:
    # pip's legacy `setup.py install` (an old pip without `wheel`) leaves egg-info with no
    # INSTALLER and no direct_url.json: the install of `.` matches no distribution, and the
    # report says why instead of claiming a later command undid it.
    dists = [dist("numpy", "2.3.5")]
    if legacy:
        dists.append(dist("pycocotools", "2.0", installer=None))
    _plan, report = plan_of(tmp_path, _local_install_of_pythonapi(),
                            python=[system_python(), venv(dists=dists)])
    decision, reason = decisions(report)["/opt/venv/bin/pip install --no-build-isolation ."]
    assert decision == "dropped"
    if legacy:
        assert "legacy `setup.py install`" in reason and "pycocotools" in reason
        assert not reason.startswith("undone")
    else:
        assert reason == ("undone or replaced: a later command uninstalled or reinstalled "
                          "what it built")


@pytest.mark.parametrize(("egg_info", "replayed"), [
    ("/workspace/PythonAPI/pycocotools.egg-info", True),
    ("/workspace/PythonAPI/src/pycocotools.egg-info", True),
    ("/workspace/PythonAPI/other.egg-info", False),     # another project's metadata
    ("/workspace/elsewhere/pycocotools.egg-info", False),  # not the folder installed
])
def test_a_local_install_by_pips_legacy_path_is_replayed_from_its_egg_info(
        tmp_path: Path, egg_info: str, replayed: bool) -> None:
    # The run wrote <name>.egg-info in the folder it installed: that ties the egg-info
    # distribution (no INSTALLER, no direct_url.json) to the install, which is replayed.
    dists = [dist("numpy", "2.3.5"), dist("pycocotools", "2.0", installer=None)]
    plan, report = plan_of(tmp_path, _local_install_of_pythonapi(),
                           python=[system_python(), venv(dists=dists)],
                           diff=[("A", egg_info), ("A", f"{egg_info}/PKG-INFO")])
    decision, _reason = decisions(report)["/opt/venv/bin/pip install --no-build-isolation ."]
    steps = [s for s in plan.native if s.distribution == "pycocotools==2.0"]
    if replayed:
        assert decision == "kept"
        assert [(s.tool, s.argv, s.cwd, s.network) for s in steps] == [(
            "pip-local", ("/opt/venv/bin/python", "-m", "pip", "install", "--no-deps",
                          "--no-build-isolation", "/workspace/PythonAPI"),
            "/workspace/PythonAPI", False)]
        assert not any("pycocotools" in w for w in report.warnings)
    else:
        assert decision == "dropped" and steps == []


def test_step_index_keeps_each_kind_in_log_order(tmp_path: Path) -> None:
    """StepIndex.of(kind) is the log's commands of that step type, in order: what the
    passes of distill read instead of filtering the whole log each."""
    from synth.distill.common import StepIndex
    from synth.distill.plan import classify_log
    from synth.distill.steps import Download, PipInstall, StepBase, VenvCreate

    audit = [cmd("python3 -m venv /opt/venv"), cmd("/opt/venv/bin/pip install numpy"),
             cmd("wget -O /data/a https://example.org/a && /opt/venv/bin/pip install six"),
             cmd("ls && python3 -m venv /opt/other && curl -o /data/b https://example.org/b")]
    classified = classify_log(load_run(make_run_dir(tmp_path, audit)))
    index = StepIndex(classified)
    kinds: list[type[StepBase]] = [PipInstall, VenvCreate, Download]
    for kind in kinds:
        want = [t for t in classified if isinstance(t[2], kind)]
        assert list(index.of(kind)) == want and len(want) == 2
    assert index.of(StepBase) == ()  # no command's step is the base itself


@pytest.mark.parametrize("route", [
    "cd /workspace/PythonAPI && /opt/venv/bin/pip install --no-build-isolation .",
    "cd /workspace/PythonAPI && /opt/venv/bin/python setup.py install",
    "cd /workspace && /opt/venv/bin/python PythonAPI/setup.py build_ext install",
])
def test_both_legacy_routes_of_one_install_are_built_by_a_step(tmp_path: Path,
                                                               route: str) -> None:
    # One install, two routes (seen on two transcripts of one real repository): pip's legacy
    # `setup.py install` was replayed and credited, a direct `python setup.py install` was
    # replayed but not credited, so export called the distribution "neither locked nor built
    # by a step" and refused one of them. Both now build the distribution their egg-info names.
    dists = [dist("numpy", "2.3.5"), dist("pycocotools", "2.0", installer=None)]
    audit = [cmd("python3 -m venv /opt/venv"), cmd("/opt/venv/bin/pip install numpy"),
             cmd(route)]
    egg = "/workspace/PythonAPI/pycocotools.egg-info"
    plan, _report = plan_of(tmp_path, audit, python=[system_python(), venv(dists=dists)],
                            diff=[("A", egg), ("A", f"{egg}/PKG-INFO")])
    built = {s.distribution.split("==")[0] for s in plan.native if s.distribution}
    assert "pycocotools" in built  # what export's unreproduced() takes as built by a step
    assert [s.distribution for s in plan.native if s.cwd.endswith(("PythonAPI", "workspace"))
            and s.distribution] == ["pycocotools==2.0"]


def test_the_claims_step_is_named_as_the_claims(tmp_path: Path) -> None:
    heredoc = "cat > /synth/claims.json <<'JSON'\n{\"python_version\": \"3.11\"}\nJSON"
    _plan, report = plan_of(tmp_path, [
        cmd(heredoc), cmd("cat > /tmp/notes.txt <<'X'\nhi\nX"),
        cmd("echo '{}' | tee /synth/claims.json"), cmd("python3 report.py > /synth/claims.json")])
    got = {o.command.split(" <<")[0]: (o.extractor, o.step, o.decision, o.reason)
           for o in report.outcomes}
    claims = ("claims", "claims", "dropped", "the agent's claims: claims.json travels beside "
              "the artifact and C5 checks it; not replayed")
    assert got["cat > /synth/claims.json"] == claims
    assert got["tee /synth/claims.json"] == claims
    assert got["python3 report.py > /synth/claims.json"] == claims
    assert got["cat > /tmp/notes.txt"][1:3] == ("unclassified", "dropped")
    assert got["cat > /tmp/notes.txt"][3].startswith("unclassified, not replayed")


def test_an_install_into_a_second_environment_names_that_environment_s_lock(
        tmp_path: Path) -> None:
    audit = [cmd("python3 -m venv /opt/venv"), cmd("python3 -m venv /opt/pdm"),
             cmd("/opt/pdm/bin/pip install pdm"), cmd("/opt/venv/bin/pip install six")]
    py = [system_python(), venv(dists=[dist("six", "1.17.0")]),
          venv("/opt/pdm", dists=[dist("pdm", "2.29.4")])]
    plan, report = plan_of(tmp_path, audit, python=py)
    files = {e.prefix: e.lock_file for e in plan.envs}
    assert files["/opt/venv"] == "requirements.lock" and files["/opt/pdm"] != files["/opt/venv"]
    got = decisions(report)
    assert got["/opt/pdm/bin/pip install pdm"] == (
        "kept", f"{files['/opt/pdm']} (versions from the final state)")
    assert got["/opt/venv/bin/pip install six"] == (
        "kept", "requirements.lock (versions from the final state)")


def test_a_folder_added_only_to_hold_noise_is_not_unexplained(tmp_path: Path) -> None:
    """pdm writes its log under ~/.local/state: the folders made for it are noise too; an
    empty folder the agent made stays listed, as does one holding a real file."""
    from synth.record.snapshot import classify_diff

    run_dir = make_run_dir(tmp_path, [cmd("pdm install")])
    diff = classify_diff([("A", p) for p in (
        "/root/.local", "/root/.local/state", "/root/.local/state/pdm",
        "/root/.local/state/pdm/log", "/data", "/srv", "/srv/state", "/srv/state/x.bin")])
    (run_dir / "state" / "diff.json").write_text(json.dumps(diff))
    assert [n["path"] for n in diff["noise"]] == [
        "/root/.local/state", "/root/.local/state/pdm", "/root/.local/state/pdm/log"]
    _plan, report = distill(load_run(run_dir))
    assert report.unexplained == ("A /data", "A /srv")


def test_a_run_recorded_before_a_path_became_noise_is_read_by_todays_rules(
        tmp_path: Path) -> None:
    """The noise rules are applied again when the run is read: a run whose diff.json has
    ~/.local/state among its changes (recorded before it was noise) exports as a new one."""
    run_dir = make_run_dir(tmp_path, [cmd("pdm install")], diff=[
        ("A", "/root/.local"), ("A", "/root/.local/state"),
        ("A", "/root/.local/state/pdm/log"), ("A", "/data")])
    recorded = json.loads((run_dir / "state" / "diff.json").read_text())
    assert "/root/.local/state" in [c["path"] for c in recorded["changes"]]
    run = load_run(run_dir)
    assert sorted(c.path for c in run.changes) == ["/data", "/root/.local"]
    assert [(c.path, c.reason) for c in run.noise if c.path.startswith("/root/.local")] == [
        ("/root/.local/state", "tools' logs and state (XDG state home: pdm's, pipx's logs)"),
        ("/root/.local/state/pdm/log",
         "tools' logs and state (XDG state home: pdm's, pipx's logs)")]
    _plan, report = distill(run)
    assert report.unexplained == ("A /data",)


@pytest.mark.parametrize(("sync", "replaced"), [
    ("/opt/uv/bin/uv sync --frozen --extra scipy", True),
    ("uv run --exact python fit.py", True),
    ("uv sync --inexact", False),  # keeps what the pip command put there
    ("cd /opt && uv sync", False),  # another project's environment
])
def test_a_pip_install_a_later_exact_uv_sync_undid_is_replaced(
        tmp_path: Path, sync: str, replaced: bool) -> None:
    """Seen on HIPS/autograd: ``uv pip install matplotlib`` (3.11.2), then ``uv sync
    --frozen`` put back the lock's 3.11.0; the report called the install "kept"."""
    site = "/workspace/.venv/lib/python3.11/site-packages"
    audit = [cmd("uv pip install --python /workspace/.venv/bin/python matplotlib"), cmd(sync)]
    py = [system_python(), venv("/workspace/.venv", [
        dist("matplotlib", "3.11.0", installer="uv", location=site)])]
    d = decisions(plan_of(tmp_path, audit, python=py)[1])
    decision = d["uv pip install --python /workspace/.venv/bin/python matplotlib"]
    if replaced:
        ran = sync.rpartition(" && ")[2]
        assert decision == ("dropped", f"replaced: a later `{ran}` made the environment "
                            "exactly what the project's uv.lock selects (matplotlib 3.11.0)")
    else:
        assert decision[0] == "kept", decision
    # The environment named relative to the project, as the agent typed it.
    rel = [cmd("/opt/uv/bin/uv pip install --python .venv/bin/python matplotlib"), audit[1]]
    d = decisions(plan_of(tmp_path / "relative", rel, python=py)[1])
    assert d[rel[0]["command"]] == decision
    # A sync before the install does not undo it.
    d = decisions(plan_of(tmp_path / "before", [audit[1], audit[0]], python=py)[1])
    assert d["uv pip install --python /workspace/.venv/bin/python matplotlib"][0] == "kept"


@pytest.mark.parametrize(("line", "decision", "says"), [
    ("poetry config virtualenvs.in-project true", "dropped",
     "writes poetry's setting virtualenvs.in-project, which shaped the commands after it"),
    ("poetry config --local virtualenvs.create false", "dropped",
     "writes poetry's setting virtualenvs.create into the project's own configuration file, "
     "which travels in source/"),
    ("poetry config --unset virtualenvs.in-project", "dropped",
     "writes poetry's setting virtualenvs.in-project"),
    ("pdm config -l python.use_venv true", "dropped", "writes pdm's setting python.use_venv "
     "into the project's own"),
    ("pip config set global.index-url https://u:p@mirror/simple", "dropped",
     "writes pip's setting global.index-url, which"),
    ("conda config --add channels conda-forge", "dropped", "writes conda's setting channels"),
    ("conda config --set channel_priority strict", "dropped",
     "writes conda's setting channel_priority"),
    ("poetry config --list", "dropped", "read-only"),
    ("poetry config virtualenvs.in-project", "dropped", "read-only"),
    ("pip config list", "dropped", "read-only"),
    ("conda config --show channels", "dropped", "read-only"),
])
def test_a_tool_s_configuration_is_named_as_such_and_never_carries_its_value(
        tmp_path: Path, line: str, decision: str, says: str) -> None:
    _plan, report = plan_of(tmp_path, [cmd(line)])
    (outcome,) = report.outcomes
    assert (outcome.decision, outcome.step) == (decision, "tool-config" if says != "read-only"
                                                else "read-only")
    assert outcome.reason.startswith(says), outcome.reason
    assert "u:p@" not in outcome.reason and "strict" not in outcome.reason


@pytest.mark.parametrize(("line", "says"), [
    ("pipenv run pip install tabulate", "runs pip in the project's environment: what it "
     "installed is reproduced from the final state"),
    ("poetry run python -m pip install ./localpkg", "runs pip in the project's environment"),
    ("uv run --with rich --extra yaml pip3 install six", "runs pip3 in the project's "
     "environment"),
    ("pipenv run python setup.py develop", "runs setup.py in the project's environment"),
    ("pipenv run python main.py", "runs a program in the project's environment: a check, "
     "not a setup step; the environment"),
])
def test_a_project_tool_s_run_of_an_installer_is_named_as_an_install(
        tmp_path: Path, line: str, says: str) -> None:
    """Seen on a real pipenv project: `pipenv run pip install tabulate` was said to run 'a
    check, not a setup step'."""
    _plan, report = plan_of(tmp_path, [cmd(line)])
    (outcome,) = report.outcomes
    assert (outcome.decision, outcome.step) == ("folded", "project-tool")
    assert outcome.reason.startswith(says), outcome.reason
    assert ("a check, not a setup step" in outcome.reason) == line.endswith("main.py")


@pytest.mark.parametrize("line", ["pipenv --venv", "pipenv graph", "poetry env info --path",
                                  "poetry show --tree", "pdm list", "uv tree"])
def test_a_project_tool_s_queries_are_read_only(tmp_path: Path, line: str) -> None:
    _plan, report = plan_of(tmp_path, [cmd(line)])
    (outcome,) = report.outcomes
    assert (outcome.extractor, outcome.step, outcome.reason) == (
        "project-tool", "read-only", "read-only"), outcome


@pytest.mark.parametrize("line", ["pipenv --python 3.11", "pipenv --rm", "poetry env use 3.11",
                                  "poetry version patch"])
def test_a_project_tool_s_command_that_may_change_something_is_not_read_only(
        tmp_path: Path, line: str) -> None:
    _plan, report = plan_of(tmp_path, [cmd(line)])
    assert report.outcomes[0].step != "read-only"


def test_a_tool_s_own_environment_made_by_its_env_command_is_audited(tmp_path: Path) -> None:
    """``poetry env use`` makes poetry's environment in its own folder: that command made
    the venv the run ends with (no "no audited command created" warning), and poetry is
    not said to have installed the project."""
    cache = "/root/.cache/pypoetry/virtualenvs/proj-xS3fZVNL-py3.11"
    py = [system_python(), venv(cache, [dist("six", "1.17.0", location=f"{cache}/lib")])]
    plan, report = plan_of(tmp_path, [cmd("poetry env use python3.11"),
                                      cmd(f"{cache}/bin/pip install six"),
                                      cmd("poetry env info --path"),
                                      cmd("poetry env activate")],
                           python=py, primary=f"{cache}/bin/python")
    steps = [(o.extractor, o.step) for o in report.outcomes]
    assert steps == [("project-tool", "project-tool"), ("pip", "pip-install"),
                     ("project-tool", "read-only"), ("project-tool", "read-only")], steps
    assert not [w for w in report.warnings if "no audited command created" in w], report
    assert [e.project_install for e in plan.envs] == [None]
    # Without it the same venv is one nothing audited made.
    _plan, bare = plan_of(tmp_path / "bare", [cmd(f"{cache}/bin/pip install six")],
                          python=py, primary=f"{cache}/bin/python")
    assert [w for w in bare.warnings if f"no audited command created {cache}" in w]


def test_pdm_s_venv_and_interpreter_commands_are_classified(tmp_path: Path) -> None:
    """Seen on a pdm project: `pdm venv create --with-pip python3` and `pdm use -f
    /workspace/.venv` were unclassified."""
    _plan, report = plan_of(tmp_path, [
        cmd("/opt/pdm/bin/pdm venv create --with-pip python3"),
        cmd("/opt/pdm/bin/pdm use -f /workspace/.venv"),
        cmd("pdm venv create -w venv"), cmd("pdm venv list"),
        cmd("pdm venv create -n mine python3.11")])
    got = {o.command: (o.step, o.reason) for o in report.outcomes}
    assert got["/opt/pdm/bin/pdm use -f /workspace/.venv"] == (
        "tool-config", "writes the project's .pdm-python (the interpreter pdm uses for it), "
        "which travels in source/ (the final /workspace); not replayed")
    assert got["pdm venv list"] == ("read-only", "read-only")
    assert got["/opt/pdm/bin/pdm venv create --with-pip python3"][0] == "venv-create"
    assert got["pdm venv create -n mine python3.11"] == (
        "project-tool", "makes or removes one of pdm's environments for the project: each "
        "environment the run ended with is reproduced from the final state, locked and "
        "installed at the same path")
    made = [classify(SimpleCommand(tuple(line.split()), (), (), line, "/workspace", (), None,
                                   1, 0))[1]
            for line in ("pdm venv create --with-pip python3", "pdm venv create -w venv")]
    assert made == [VenvCreate(tool="virtualenv", path="/workspace/.venv", python="python3"),
                    VenvCreate(tool="venv", path="/workspace/.venv", python="python3",
                               options=("--without-pip",))]


@pytest.mark.parametrize("seeded", [True, False])
def test_a_local_build_in_a_tool_made_venv_runs_the_venv_s_own_pip(
        tmp_path: Path, seeded: bool) -> None:
    """pipenv made /workspace/.venv with pip 26.3 in it, and ``pipenv run pip install
    ./localpkg`` built a wheel with that pip. The artifact makes the venv without pip and its
    lock installs pip 26.3 before the native steps: the local build runs that pip, not the
    base's (Debian's pip 23 falls back to a legacy ``setup.py install`` for a project with
    only a setup.py, and leaves an egg-info where live had a dist-info). A venv whose lock
    has no pip is served by the base's."""
    site = "/workspace/.venv/lib/python3.11/site-packages"
    dists = [dist("six", "1.17.0", location=site),
             dist("localpkg", "0.1", location=site,
                  direct_url={"url": "file:///workspace/localpkg", "dir_info": {}})]
    if seeded:
        dists.append(dist("pip", "26.3", location=site))
    plan, _report = plan_of(
        tmp_path, [cmd("cd /workspace && PIPENV_VENV_IN_PROJECT=1 pipenv sync"),
                   cmd("cd /workspace && pipenv run pip install ./localpkg")],
        python=[system_python(), venv("/workspace/.venv", dists, created=False)],
        primary="/workspace/.venv/bin/python")
    [env] = [e for e in plan.envs if e.prefix == "/workspace/.venv"]
    assert env.pip == ("python3", "-m", "pip", "--python", "/workspace/.venv/bin/python")
    [step] = plan.native
    own = ("/workspace/.venv/bin/python", "-m", "pip", "install")
    assert step.argv[:4] == (own if seeded else (*env.pip[:4],)), step.argv
    assert step.argv[-1] == "/workspace/localpkg"
