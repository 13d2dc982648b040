"""Rendering against golden files, and byte-identical re-export.

Regenerate the golden files after an intended change with
``SYNTH_UPDATE_GOLDEN=1 pytest tests/unit/test_render_golden.py`` and review the diff.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from distill_runs import NO_ENGINE, cmd, deb, dist, make_run_dir, system_python, venv

from synth.config import Settings
from synth.distill.plan import PythonEnvPlan
from synth.export.artifact import ExportOptions, export_run
from synth.export.lock import Lock, LockedPin, LockTarget
from synth.export.metadata import CitationOptions
from synth.export.render import environment, shvalue, templates_dir

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "export-basic"
UPDATE = os.environ.get("SYNTH_UPDATE_GOLDEN") == "1"


def fake_locker(env: PythonEnvPlan, target: LockTarget) -> Lock:
    pins = []
    for name, version in env.pins:
        digest = hashlib.sha256(f"{name}=={version}".encode()).hexdigest()
        files = (f"{name}-{version}-cp311-cp311-manylinux_2_28_x86_64.whl",) if "+" in version \
            else ()
        pins.append(LockedPin(name=name, version=version, hashes=(digest,), wheel_files=files))
    uv = LockedPin(name="uv", version="0.13.9",
                   hashes=(hashlib.sha256(b"uv==0.13.9").hexdigest(),))
    return Lock(env=env, pins=tuple(pins), locker="uv", installer=uv)


def _task(tmp: Path) -> Path:
    task_dir = tmp / "tasks" / "demo"
    (task_dir / "repo" / "demo").mkdir(parents=True)
    (task_dir / "repo" / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    (task_dir / "repo" / "demo" / "__init__.py").write_text("")
    (task_dir / "task.toml").write_text(
        'name = "demo"\nbase_image = "synth/python:bookworm"\n[repo]\npath = "repo"\n'
        '[probes.cpu]\ncommand = "python -c \'import demo\'"\n'
        '[not_applicable]\nC3 = "cpu"\nC4 = "cpu"\n')
    return task_dir / "task.toml"


def _run(tmp: Path) -> Path:
    audit = [
        cmd("ls -la && nvidia-smi", exit=127,
            hooks=[("ls -la", 0), ("nvidia-smi", 127)]),
        cmd("apt-get update && apt-get install -y build-essential git",
            hooks=[("apt-get update", 0), ("apt-get install -y build-essential git", 0)]),
        cmd("python3 -m venv /opt/venv"),
        cmd("/opt/venv/bin/pip install --find-links /synth/wheelhouse torch==2.13.0+cpu numpy"),
        cmd("/opt/venv/bin/pip install cython"),
        cmd("/opt/venv/bin/pip uninstall -y cython"),
        cmd("cd /workspace && export MAX_JOBS=2 && TORCH_CUDA_ARCH_LIST='8.0;9.0' "
            "/opt/venv/bin/pip install --no-build-isolation -e ."),
        cmd("echo 'export OMP_NUM_THREADS=1' >> ~/.bashrc"),
        cmd("wget -O /data/w.ckpt https://example.org/w.ckpt"),
    ]
    py = [system_python(), venv(dists=[
        dist("torch", "2.13.0+cpu"), dist("numpy", "2.3.5"), dist("pip", "23.0.1"),
        dist("demo", "0.0.0", direct_url={"url": "file:///workspace",
                                          "dir_info": {"editable": True}}),
    ])]
    return make_run_dir(
        tmp, audit, task="demo", python=py, task_file=_task(tmp),
        apt_added={"build-essential": "12.9", "git": "1:2.39.5-0+deb12u2", "gcc": "4:12.2.0-3"},
        apt_manual=["build-essential", "git"],
        apt_debs={"build-essential": deb("build-essential", "12.9"),
                  "gcc": deb("gcc", "4:12.2.0-3")},
        env={"OMP_NUM_THREADS": "1"},
        diff=[("C", "/opt"), ("A", "/opt/venv"), ("A", "/data"), ("A", "/data/w.ckpt"),
              ("C", "/root"), ("C", "/root/.bashrc")],
        claims={"python_path": "/opt/venv/bin/python"},
    )


#: Who made the golden export and how it is published (CITATION.cff, labels).
CITATION = CitationOptions(authors=("Ada Lovelace <ada@example.org>",), license="mit",
                           repository="https://example.org/demo")


def _export(tmp: Path, out: Path) -> Path:
    return export_run(ExportOptions(
        _run(tmp), out_dir=out, locker=fake_locker, ask_live=False, citation=CITATION),
        Settings.load(artifacts_dir=tmp), NO_ENGINE).artifact_dir


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_golden(tmp_path: Path) -> None:
    art = _export(tmp_path, tmp_path / "out")
    got = _files(art)
    manifest = json.loads(got.pop("manifest.json"))
    manifest.pop("inputs")  # run.json names the tmp task file: differs per machine
    got["manifest.json"] = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    if UPDATE:
        for name, data in got.items():
            (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
            (GOLDEN / name).write_bytes(data)
    want = _files(GOLDEN)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].decode() == want[name].decode(), name


def test_export_twice_is_byte_identical(tmp_path: Path) -> None:
    run_dir = _run(tmp_path)
    settings = Settings.load(artifacts_dir=tmp_path)
    opts = ExportOptions(run_dir, locker=fake_locker, ask_live=False)
    a = export_run(replace(opts, out_dir=tmp_path / "a"), settings, NO_ENGINE).artifact_dir
    b = export_run(replace(opts, out_dir=tmp_path / "b"), settings, NO_ENGINE).artifact_dir
    assert _files(a) == _files(b)
    # Re-exporting in place (--force) replaces the artifact atomically, same bytes.
    before = _files(a)
    export_run(replace(opts, out_dir=tmp_path / "a", force=True), settings, NO_ENGINE)
    assert _files(a) == before


def test_the_report_is_freed_without_the_cyclic_collector(tmp_path: Path) -> None:
    # A template with macros is a reference cycle through its context; if the context
    # kept the render values, the whole distill report (an outcome per audited command)
    # would be left for the collector: on 100,000 commands, a 0.3 s pass at the end.
    run_dir = _run(tmp_path)
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        export_run(ExportOptions(
            run_dir, out_dir=tmp_path / "out", locker=fake_locker, ask_live=False),
            Settings.load(artifacts_dir=tmp_path), NO_ENGINE)
        gc.collect()
        left = {type(o).__name__ for o in gc.garbage}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left & {"DistillReport", "CommandOutcome", "BuildPlan", "LoadedRun"}, left


def test_no_dates_or_host_paths(tmp_path: Path) -> None:
    """No file says when it was exported: the one date is the run's end (SOURCE_DATE_EPOCH,
    in the citation and the image's `created` label)."""
    art = _export(tmp_path, tmp_path / "out")
    for name, data in _files(art).items():
        if name.startswith("source/"):
            continue
        text = data.decode()
        assert str(tmp_path) not in text, name
        assert set(re.findall(r"20\d\d-\d\d-\d\d", text)) <= {"2026-11-29"}, name


def test_every_generated_file_names_the_regenerating_command(tmp_path: Path) -> None:
    art = _export(tmp_path, tmp_path / "out")
    for name in ("Dockerfile", "README.md", "export-report.md", "apt.lock",
                 "requirements.lock"):
        head = (art / name).read_text().splitlines()[:3]
        assert any("synth export demo/" in line for line in head), name


def test_dockerfile_shape(tmp_path: Path) -> None:
    text = (_export(tmp_path, tmp_path / "out") / "Dockerfile").read_text()
    assert "# syntax" not in text
    assert "nvidia-smi" not in text and "cython" not in text and "wget" not in text
    assert "--mount=type=secret,id=cacert,required=false" in text
    assert "--mount=type=bind,source=wheelhouse,target=/synth/wheelhouse" in text
    assert "--require-hashes --no-deps" in text
    assert "MAX_JOBS=2 TORCH_CUDA_ARCH_LIST='8.0;9.0'" in text
    # The venv and its lock in a stage of their own (synth.export.env_stage), then the
    # image: apt, the venv copied from the stage, the source, the native build, ENV.
    base = "FROM localhost/synth/python:bookworm"
    order = [text.index(s) for s in (
        f"{base} AS python-env", "python3 -m venv", "--require-hashes",
        f"{base}\n", "apt-get install", "COPY --from=python-env",
        "COPY source/", "-e /workspace", "ENV ", "WORKDIR /workspace")]
    assert order == sorted(order)
    # Dockerfile.legacy: one stage, in the run's order.
    legacy = (tmp_path / "out" / "Dockerfile.legacy").read_text()
    order = [legacy.index(s) for s in ("FROM ", "apt-get install", "python3 -m venv",
                                       "--require-hashes", "COPY source/", "-e /workspace",
                                       "ENV ", "WORKDIR /workspace")]
    assert order == sorted(order) and legacy.count("FROM ") == 1
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["wheelhouse_required"] is True
    assert manifest["wheel_files"] == ["torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"]
    assert manifest["python"] == "/opt/venv/bin/python"
    assert manifest["claims"] == "claims.json" and manifest["probes"] == "task.toml"


def test_templates_are_strict() -> None:
    env = environment()
    assert templates_dir().is_dir()
    with pytest.raises(Exception, match="undefined"):
        env.get_template("Dockerfile.j2").render({})


def test_compiled_templates_are_kept_and_a_bad_cache_is_no_cache(tmp_path: Path) -> None:
    """A process after the first reads a template's compiled code from the cache and
    renders the same text; a cache file that is not Jinja's, or a cache that cannot be
    read or written, only means compiling again."""
    import jinja2

    from synth.export.render import _TemplateCodeCache

    (tmp_path / "t.j2").write_text("{% for i in range(3) %}{{ name }}{{ i }} {% endfor %}")

    def render_with(cache: jinja2.BytecodeCache) -> str:
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(tmp_path)),
                                 bytecode_cache=cache)
        return env.get_template("t.j2").render(name="x")

    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    assert render_with(_TemplateCodeCache(str(cache_dir))) == "x0 x1 x2 "
    kept = list(cache_dir.iterdir())
    assert len(kept) == 1 and kept[0].stat().st_size > 0
    assert render_with(_TemplateCodeCache(str(cache_dir))) == "x0 x1 x2 "
    data = kept[0].read_bytes()
    kept[0].write_bytes(data[:len(data) // 2])  # cut short: marshal cannot read it
    assert render_with(_TemplateCodeCache(str(cache_dir))) == "x0 x1 x2 "
    not_a_folder = tmp_path / "t.j2"  # neither readable nor writable as a cache
    with pytest.raises(NotADirectoryError):
        render_with(jinja2.FileSystemBytecodeCache(str(not_a_folder)))  # Jinja's own fails
    assert render_with(_TemplateCodeCache(str(not_a_folder))) == "x0 x1 x2 "
    assert environment().bytecode_cache is not None


@pytest.mark.parametrize(("value", "rendered"), [
    ("4", "4"), ("-O2 -g0", "'-O2 -g0'"), ("/usr/local/cuda/bin:$PATH",
                                           "/usr/local/cuda/bin:$PATH"),
    ("a b:$PATH", '"a b:$PATH"'),
])
def test_shvalue(value: str, rendered: str) -> None:
    assert shvalue(value) == rendered


def test_pinned_download_is_replayed_and_checked(tmp_path: Path) -> None:
    from synth.distill.load import load_run
    from synth.distill.plan import distill, download_candidates
    from synth.export.render import render_artifact

    run = load_run(_run(tmp_path))
    assert download_candidates(run) == ("/data/w.ckpt",)
    plan, report = distill(run, download_hashes={"/data/w.ckpt": "ab" * 32})
    text = render_artifact(plan, report, [fake_locker(e, None) for e in plan.envs])["Dockerfile"]  # type: ignore[arg-type]
    assert "wget -q -O /data/w.ckpt https://example.org/w.ckpt" in text
    assert f"echo '{'ab' * 32}  /data/w.ckpt' | sha256sum -c -" in text
    assert "mkdir -p /workspace /data" in text
    assert "A /data" not in report.unexplained
    kept = {o.command: o.decision for o in report.outcomes}
    assert kept["wget -O /data/w.ckpt https://example.org/w.ckpt"] == "kept"


def test_reader_facts_url_source_cuda_and_labels(tmp_path: Path) -> None:
    from dataclasses import replace

    from msgspec import structs

    from synth.distill.load import load_run
    from synth.distill.plan import SourcePlan, distill
    from synth.export.render import ReaderFacts, check_line, render_artifact

    plan, report = distill(load_run(_run(tmp_path)))
    plan = structs.replace(plan, source=SourcePlan(
        "url", "/workspace", "https://example.org/r.git", "0123abcd" * 5))
    locks = [fake_locker(e, None) for e in plan.envs]  # type: ignore[arg-type]
    reader = ReaderFacts(description='A "quoted" task', cpu_command="python run.py --fast",
                         workdir="/workspace/sub")
    files = render_artifact(plan, report, locks, reader=reader)
    docker = files["Dockerfile"]
    assert 'org.opencontainers.image.source="https://example.org/r.git"' in docker
    assert f'org.opencontainers.image.revision="{"0123abcd" * 5}"' in docker
    assert 'org.opencontainers.image.description="A \\"quoted\\" task"' in docker
    assert "synth." not in docker.split("\nLABEL ")[1]  # no internal label
    assert 'org.opencontainers.image.created="2026-11-29T10:16:40Z"' in docker
    assert docker.rstrip().endswith(
        'CMD ["bash", "-c", "cd /workspace/sub && python run.py --fast"]')
    cff = files["CITATION.cff"]
    assert 'repository-code: "https://example.org/r.git"' in cff
    assert f'commit: "{"0123abcd" * 5}"' in cff
    readme = files["README.md"]
    assert f"https://example.org/r.git at commit `{'0123abcd' * 5}`" in readme
    assert "CPU-only" in readme
    cuda = [replace(lk, pins=(*lk.pins, replace(lk.pins[0], name="nvidia-cublas-cu12")))
            for lk in locks]
    assert "--gpus all" in render_artifact(plan, report, cuda, reader=reader)["README.md"]
    assert check_line("t:r", ReaderFacts(cpu_command="echo $HOME")) == \
        "docker run --rm -w /workspace t:r bash -c 'echo $HOME'"
    no_check = render_artifact(plan, report, locks)
    assert "No CPU check in task.toml" in no_check["Dockerfile"]
