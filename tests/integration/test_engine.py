"""The Docker engine layer against a real engine: exec, exit codes, copy, diff, commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from synth.engine import ContainerSpec, DockerEngine, Mount
from synth.engine.base import EXEC_KEEP_BYTES, EXEC_KEEP_TAIL
from synth.errors import EngineError
from synth.formats.store import RunDir

pytestmark = pytest.mark.docker


def test_exec_streams_output_and_returns_exit_code(engine: DockerEngine, base_image: str) -> None:
    chunks: list[tuple[str, bytes]] = []
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        result = c.sh(
            "echo one; echo two >&2; exit 7", on_output=lambda s, b: chunks.append((s, b))
        )
        assert result.exit_code == 7
        assert result.stdout == "one\n"
        assert result.stderr == "two\n"
        assert ("stdout", b"one\n") in chunks
        assert c.sh("true").ok
        assert c.exec(["false"]).exit_code == 1
        env = c.exec(["sh", "-c", "echo $X:$PWD"], env={"X": "42"}, workdir="/tmp")
        assert env.stdout == "42:/tmp\n"


def test_exec_keeps_a_bounded_part_of_a_flood_and_streams_all_of_it(
        engine: DockerEngine, base_image: str) -> None:
    seen = [0]

    def count(_stream: str, data: bytes) -> None:
        seen[0] += len(data)

    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        result = c.sh("head -c 200M /dev/zero | tr '\\0' a; echo end", on_output=count)
    assert result.ok and result.truncated
    assert seen[0] == (200 << 20) + 4  # every byte reached the stream's reader
    assert EXEC_KEEP_BYTES < len(result.stdout) < EXEC_KEEP_BYTES + EXEC_KEEP_TAIL + 100
    assert result.stdout.endswith("aaaa" + "end\n")
    assert f"[synth: {(200 << 20) + 4 - EXEC_KEEP_BYTES - EXEC_KEEP_TAIL} bytes of output " \
        "not kept]" in result.stdout


def test_exec_timeout_kills_the_command(engine: DockerEngine, base_image: str) -> None:
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        result = c.exec(["sleep", "30"], timeout=1)
        assert result.timed_out
        assert result.exit_code == 124


def test_copy_in_copy_out_and_read(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    src = tmp_path / "payload"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "a.txt").write_text("alpha\n")
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        c.copy_in(src, "/data")
        assert c.sh("cat /data/payload/sub/a.txt").stdout == "alpha\n"
        c.put_bytes(b"beta", "/data/b.bin")
        assert c.read_file("/data/b.bin") == b"beta"
        assert c.read_file("/data/none") is None
        out = tmp_path / "out"
        c.copy_out("/data/payload", out)
        assert (out / "payload" / "sub" / "a.txt").read_text() == "alpha\n"
        with pytest.raises(EngineError, match="does not exist"):
            c.copy_out("/nowhere", out)


def test_diff_and_commit(engine: DockerEngine, base_image: str) -> None:
    ref = "synth-test/engine-commit:1"
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        c.sh("mkdir -p /opt/x && echo hi > /opt/x/f && rm /etc/debian_version")
        changes = c.diff()
        assert ("A", "/opt/x/f") in changes
        assert ("D", "/etc/debian_version") in changes
        c.commit(ref, labels={"synth.temporary": "1", "synth.run": "test"})
    try:
        labels = engine.image_inspect(ref)["Config"]["Labels"]
        assert labels["synth.run"] == "test"
        assert labels["synth.managed"] == "1"
        with engine.container(ContainerSpec(image=ref, network=False)) as c2:
            assert c2.sh("cat /opt/x/f").stdout == "hi\n"
    finally:
        engine.remove_image(ref)


def test_containers_are_labelled_and_removed(engine: DockerEngine, base_image: str) -> None:
    spec = ContainerSpec(image=base_image, network=False, labels={"synth.run": "label-test"})
    with engine.container(spec) as c:
        found = engine.managed_containers("synth.run=label-test")
        assert [x.id for x in found] == [c.id]
    assert engine.managed_containers("synth.run=label-test") == []


def test_container_removed_when_body_raises(engine: DockerEngine, base_image: str) -> None:
    spec = ContainerSpec(image=base_image, network=False, labels={"synth.run": "raise-test"})
    with pytest.raises(KeyboardInterrupt), engine.container(spec):
        raise KeyboardInterrupt
    assert engine.managed_containers("synth.run=raise-test") == []


def test_missing_image_is_a_clear_error(engine: DockerEngine) -> None:
    with pytest.raises(EngineError, match="does not exist"):
        engine.create(ContainerSpec(image="synth-test/no-such-image:0"))


def test_gpu_request_without_runtime_says_so(engine: DockerEngine, base_image: str) -> None:
    if engine.has_gpu_runtime():
        pytest.skip("this engine has a GPU runtime")
    from synth.errors import GpuRuntimeUnavailableError

    with pytest.raises(GpuRuntimeUnavailableError, match="No GPU runtime"):
        engine.create(ContainerSpec(image=base_image, gpus=True, labels={"synth.run": "gpu"}))
    assert engine.managed_containers("synth.run=gpu") == []


def test_read_only_mount(engine: DockerEngine, base_image: str, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    spec = ContainerSpec(image=base_image, network=False, mounts=[Mount(tmp_path, "/m")])
    with engine.container(spec) as c:
        assert c.sh("cat /m/f").stdout == "x"
        assert not c.sh("touch /m/g").ok


def test_gc_removes_leftovers_only(engine: DockerEngine, base_image: str) -> None:
    # A container whose creator is gone is a leftover; one whose creator lives is in use.
    proc = subprocess.Popen(["true"])
    proc.wait()
    leftover = engine.create(ContainerSpec(
        image=base_image, network=False,
        labels={"synth.run": "gc", "synth.owner_pid": str(proc.pid)},
    ))
    with engine.container(ContainerSpec(
        image=base_image, network=False, labels={"synth.run": "gc"}
    )) as in_use:
        removed = engine.gc(label="synth.run=gc")
        assert f"container {leftover.name}" in removed
        assert f"container {in_use.name}" not in removed
        assert [c.id for c in engine.managed_containers("synth.run=gc")] == [in_use.id]


def test_gc_is_scoped_to_one_artifacts_folder_and_dry_run_removes_nothing(
    engine: DockerEngine, base_image: str
) -> None:
    proc = subprocess.Popen(["true"])
    proc.wait()
    dead = {"synth.run": "gc-scope", "synth.owner_pid": str(proc.pid)}
    mine = engine.create(ContainerSpec(image=base_image, network=False,
                                       labels={**dead, "synth.artifacts": "/a/mine"}))
    theirs = engine.create(ContainerSpec(image=base_image, network=False,
                                         labels={**dead, "synth.artifacts": "/b/theirs"}))
    try:
        listed = engine.gc(label="synth.run=gc-scope", scope="/a/mine", dry_run=True)
        assert listed == [f"container {mine.name}"]
        assert len(engine.managed_containers("synth.run=gc-scope")) == 2
        assert engine.gc(label="synth.run=gc-scope", scope="/a/mine") == [f"container {mine.name}"]
        assert [c.id for c in engine.managed_containers("synth.run=gc-scope")] == [theirs.id]
        assert engine.gc(label="synth.run=gc-scope", scope=None) == [f"container {theirs.name}"]
    finally:
        mine.remove()
        theirs.remove()


def _build_tracked(base_image: str, folder: Path, marker: str) -> None:
    from synth.engine import build_cache
    from synth.engine.build import BuildRequest, build_image, find_build_cli

    context = folder / "ctx"
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text(
        f"FROM {base_image}\nRUN echo {marker} > /marker && head -c 4096 /dev/urandom > /blob\n")
    cli = find_build_cli()
    with build_cache.tracked(cli.path, folder):
        build_image(cli, BuildRequest(context=context, tag=f"synth-test/cache:{marker}",
                                      labels={"synth.artifacts": str(folder)}))
    subprocess.run([cli.path, "rmi", f"synth-test/cache:{marker}"], capture_output=True,
                   check=False)


@pytest.mark.engine_alone  # a build running meanwhile adds its records to this one's ledger
def test_gc_prunes_the_build_cache_of_its_own_folder_only(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    # BuildKit's cache records carry no labels: each folder's ledger names its builds' records.
    from synth.engine import build_cache
    from synth.engine.build import find_build_cli

    cli = find_build_cli().path
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    _build_tracked(base_image, mine, f"mine-{tmp_path.name}")
    _build_tracked(base_image, theirs, f"theirs-{tmp_path.name}")
    own, other = build_cache.Ledger(mine).ids(), build_cache.Ledger(theirs).ids()
    assert own and other and not set(own) & set(other)

    listed = engine.gc(label="synth.run=gc-cache", scope=str(mine), dry_run=True)
    assert [x for x in listed if x.startswith("build cache: ")]
    records = build_cache.list_records(cli)
    assert records is not None and set(own) <= set(records)  # dry run removed nothing

    removed = engine.gc(label="synth.run=gc-cache", scope=str(mine))
    assert any(x.startswith(f"build cache: {len(own)} record(s)") for x in removed), removed
    records = build_cache.list_records(cli)
    assert records is not None
    assert not set(own) & set(records)
    assert set(other) <= set(records)  # another folder's cache is left alone
    assert build_cache.Ledger(mine).ids() == []
    build_cache.prune(cli, [theirs])


def test_gc_keep_runs_removes_only_the_older_live_images_of_each_task(
    engine: DockerEngine, base_image: str, tmp_path: Path
) -> None:
    """`synth gc --keep-runs 1`: per task, the latest run's live image stays and the older
    ones go; another task's single image stays; each pruned run says so in its run.json."""
    from distill_runs import make_run_dir

    from synth.config import Settings
    from synth.record.rundir import mark_pruned

    label = {"synth.run": "gc-keep", "synth.kind": "live"}
    refs = ["synth-live/gckeep:20261201-100000-aaaaaa", "synth-live/gckeep:20261202-100000-bbbbbb",
            "synth-live/gckeep:20261203-100000-cccccc", "synth-live/gcother:20261201-100000-dddddd"]
    with engine.container(ContainerSpec(image=base_image, network=False)) as c:
        for ref in refs:
            c.commit(ref, labels=label)
    try:
        listed = engine.gc(label="synth.run=gc-keep", keep_runs=1, dry_run=True)
        images = sorted(line.split(" ")[1] for line in listed if line.startswith("image "))
        assert images == refs[:2], listed
        # What synth run and synth verify prune after their work (SYNTH_KEEP_RUNS): the same
        # images, and nothing else of gc's.
        pruned = engine.prune_runs(1, label="synth.run=gc-keep", dry_run=True)
        assert sorted(line.split(" ")[1] for line in pruned) == refs[:2], pruned
        assert engine.prune_runs(3, label="synth.run=gc-keep", dry_run=True) == []
        settings = Settings.load(artifacts_dir=tmp_path)
        run_dir = make_run_dir(tmp_path, task="gckeep", run_id="20261201-100000-aaaaaa")
        removed = engine.gc(label="synth.run=gc-keep", keep_runs=1)
        assert mark_pruned(settings, removed, "2026-12-04T10:00:00Z") == [run_dir]
        assert RunDir(run_dir).run_record().live_image.pruned == "2026-12-04T10:00:00Z"
        assert not engine.image_exists(refs[0]) and engine.image_exists(refs[2])
        assert engine.image_exists(refs[3])
    finally:
        for ref in refs:
            if engine.image_exists(ref):
                engine.remove_image(ref)
