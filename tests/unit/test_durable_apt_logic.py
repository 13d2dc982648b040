"""Content-addressed apt, pure parts: apt's print-uris lines, the snapshot source, apt.lock
and the Dockerfile's apt layer for hashed, unhashed and mixed pins."""

from __future__ import annotations

import functools
import hashlib
import http.server
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest
from distill_runs import deb, make_run_dir

from synth.compare.load import parse_apt_lock
from synth.distill.load import load_run
from synth.distill.plan import distill, snapshot_timestamp
from synth.engine.base import ExecResult
from synth.engine.file_server import serve_folder
from synth.errors import UsageError
from synth.export.apt_source import DEFAULT_APT_SNAPSHOT, apt_sources
from synth.export.render import render_artifact
from synth.record.snapshot import apt_pins, deb_records, parse_print_uris

SHA = "ba4f88f73dbc3ae9055f3c20f4523bfdbaf1ad13ff95e258924f77d20b4fbedf"


def test_parse_print_uris_splits_mirror_and_unquoted_pool_path() -> None:
    text = (
        "'http://deb.debian.org/debian/pool/main/g/glibc/libc6_2.36-9%2bdeb12u14_amd64.deb' "
        f"libc6_2.36-9+deb12u14_amd64.deb 2759320 SHA256:{SHA}\n"
        "'http://deb.debian.org/debian/pool/main/z/zlib/zlib1g_1.2.13.dfsg-1_amd64.deb' "
        f"zlib1g_1%3a1.2.13.dfsg-1_amd64.deb 86684 SHA256:{SHA}\n"
        "E: Version '9.9' for 'hello' was not found\n"
    )
    got = parse_print_uris(text)
    assert got["libc6"] == {"sha256": SHA, "size": 2759320,
                            "mirror": "http://deb.debian.org/debian",
                            "filename": "pool/main/g/glibc/libc6_2.36-9+deb12u14_amd64.deb"}
    assert got["zlib1g"]["filename"] == "pool/main/z/zlib/zlib1g_1.2.13.dfsg-1_amd64.deb"
    assert sorted(got) == ["libc6", "zlib1g"]


def test_apt_pins_are_added_and_changed_packages() -> None:
    assert apt_pins({"a": "1", "b": "1", "c": "1"}, {"a": "1", "b": "2", "d": "3"}) == {
        "b": "2", "d": "3"}


def test_snapshot_timestamp() -> None:
    assert snapshot_timestamp("2026-11-29T10:16:40Z") == "20261129T101640Z"
    assert snapshot_timestamp(None) is None
    assert snapshot_timestamp("yesterday") is None


def test_apt_sources_fill_the_template() -> None:
    s = apt_sources(None, "20261129T101640Z")
    assert s.template == DEFAULT_APT_SNAPSHOT
    assert s.url == "https://snapshot.debian.org/archive/{archive}/20261129T101640Z/"
    assert s.order == ("mirror", "snapshot")
    local = apt_sources("http://127.0.0.1:8080/debian", None, snapshot_only=True)
    assert local.url == "http://127.0.0.1:8080/debian/" and local.order == ("snapshot",)
    # No time to fill {timestamp} with: the mirror only.
    assert apt_sources(None, None).order == ("mirror",)


@pytest.mark.parametrize("template, expect", [
    ("ftp://mirror/debian", "http:// or https://"),
    ("https://snap/{when}/", "unknown placeholder {when}"),
    ("https://snap/$(id)/", "not allowed"),
])
def test_bad_templates_are_usage_errors(template: str, expect: str) -> None:
    with pytest.raises(UsageError) as err:
        apt_sources(template, "20261129T101640Z")
    assert expect in err.value.message


def test_snapshot_only_needs_a_time_for_timestamp_templates() -> None:
    with pytest.raises(UsageError, match="records no time"):
        apt_sources(None, None, snapshot_only=True)


def _render(tmp_path: Path, debs: dict[str, dict[str, object]] | None,
            only: bool = False, snapshot: str | None = None) -> dict[str, str]:
    added = {"gcc": "4:12.2.0-3", "hello": "2.10-3"}
    run = load_run(make_run_dir(tmp_path, apt_added=added, apt_manual=["hello"],
                                apt_debs=debs))
    plan, report = distill(run)
    return render_artifact(plan, report, [],
                           apt=apt_sources(snapshot, plan.apt.timestamp, only))


def test_all_hashed_fetches_by_url_and_never_updates(tmp_path: Path) -> None:
    files = _render(tmp_path, {"gcc": deb("gcc", "4:12.2.0-3"), "hello": deb("hello", "2.10-3")})
    df = files["Dockerfile"]
    assert "apt-get update" not in df
    assert "sh /tmp/synth/apt-fetch.sh /tmp/synth/apt.lock /tmp/synth/debs" in df
    assert "/tmp/synth/debs/gcc_12.2.0-3_amd64.deb" in df
    assert "--mount=type=secret,id=cacert,required=false" in df
    lock = files["apt.lock"]
    assert f"hello=2.10-3 amd64 {deb('hello', '2.10-3')['sha256']} " in lock
    assert "# run ended: 20261129T101640Z" in lock
    assert parse_apt_lock(lock) == {"gcc": "4:12.2.0-3", "hello": "2.10-3"}
    script = files["apt-fetch.sh"]
    assert "sources='mirror snapshot'" in script and "sha256sum -c" in script


def test_snapshot_only_renders_one_source(tmp_path: Path) -> None:
    files = _render(tmp_path, {"gcc": deb("gcc", "4:12.2.0-3"), "hello": deb("hello", "2.10-3")},
                    only=True)
    assert "sources='snapshot'" in files["apt-fetch.sh"]


def test_mixed_pins_update_for_the_unhashed_ones(tmp_path: Path) -> None:
    files = _render(tmp_path, {"gcc": deb("gcc", "4:12.2.0-3")})
    df = files["Dockerfile"]
    assert " && apt-get update \\" in df and "      hello=2.10-3 \\" in df
    assert "hello=2.10-3 - - - - -" in files["apt.lock"]


def test_a_run_without_hashes_installs_by_version(tmp_path: Path) -> None:
    files = _render(tmp_path, None)
    assert "RUN apt-get update \\" in files["Dockerfile"]
    assert "apt-fetch.sh" not in files
    run = load_run(make_run_dir(tmp_path / "w", apt_added={"gcc": "1"}))
    assert any("predates .deb hashing" in w for w in distill(run)[1].warnings)


class FakeContainer:
    """Answers the three commands deb_records runs, like apt in a container would."""

    def __init__(self, lists: int, known: dict[str, str]) -> None:
        self.lists, self.known, self.calls = lists, known, 0

    def exec(self, argv: list[str], **_kw: object) -> ExecResult:
        self.calls += 1
        if argv[0] == "dpkg-query":
            return ExecResult(tuple(argv), 0, "gcc\tamd64\nhello\tamd64\ntzdata\tall\n", "")
        if argv[0] == "sh":
            return ExecResult(tuple(argv), 0 if self.lists else 1, f"{self.lists}\n", "")
        lines, missing = [], False
        for spec in argv[3:]:
            name, _, version = spec.partition("=")
            if self.known.get(name) != version:
                missing = True
                continue
            lines.append(f"'http://deb.debian.org/debian/pool/main/{name[0]}/{name}/"
                         f"{name}_{version}_amd64.deb' {name}_{version}_amd64.deb 10 SHA256:{SHA}")
        if missing:
            return ExecResult(tuple(argv), 100, "", "E: Version not found")
        return ExecResult(tuple(argv), 0, "\n".join(lines), "")


def test_deb_records_ask_one_by_one_when_a_version_is_unknown() -> None:
    c = FakeContainer(lists=1, known={"gcc": "12", "hello": "2.10-3"})
    got = deb_records(c, {"gcc": "12", "hello": "2.10-3", "tzdata": "2025a"})  # type: ignore[arg-type]
    assert sorted(got["debs"]) == ["gcc", "hello"] and got["debs_missing"] == ["tzdata"]
    assert got["debs"]["hello"] == {
        "version": "2.10-3", "arch": "amd64", "sha256": SHA, "size": 10,
        "mirror": "http://deb.debian.org/debian",
        "filename": "pool/main/h/hello/hello_2.10-3_amd64.deb"}


def test_deb_records_without_lists_name_every_package_missing() -> None:
    c = FakeContainer(lists=0, known={"gcc": "12"})
    got = deb_records(c, {"gcc": "12", "hello": "2.10-3"})  # type: ignore[arg-type]
    assert got == {"debs": {}, "debs_missing": ["gcc", "hello"]}
    assert c.calls == 2  # no apt-get call at all


@pytest.mark.skipif(not Path("/usr/lib/apt/apt-helper").exists(), reason="no apt-helper here")
def test_apt_fetch_takes_each_deb_from_the_first_source_that_has_it(tmp_path: Path) -> None:
    """One apt-helper call per source: the mirror's files from the mirror, the one it lacks
    from the snapshot, a file no source has named; then every file's sha256 checked."""
    debs = {n: f"{n} {v} bytes".encode() for n, v in
            (("gcc", "12.2.0-3"), ("hello", "2.10-3"), ("zlib", "1.2.13"))}
    mirror, snap = tmp_path / "mirror", tmp_path / "snap" / "debian"
    for name, data in debs.items():
        for root in (mirror, snap):
            if (root, name) != (mirror, "hello"):  # the mirror no longer has hello
                (root / "pool" / name).mkdir(parents=True, exist_ok=True)
                (root / "pool" / name / f"{name}_1_amd64.deb").write_bytes(data)
    with serve_folder(mirror, "127.0.0.1") as m, serve_folder(tmp_path / "snap", "127.0.0.1") as s:
        script = tmp_path / "apt-fetch.sh"
        script.write_text(_render(tmp_path / "run", {"gcc": deb("gcc", "4:12.2.0-3")},
                                  snapshot=f"{s}/{{archive}}/")["apt-fetch.sh"])
        lock = tmp_path / "apt.lock"

        def fetch(names: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
            lock.write_text("# a lock\n" + "".join(
                f"{n}=1 amd64 {hashlib.sha256(debs.get(n, b'')).hexdigest()} 9 {m} "
                f"pool/{n}/{n}_1_amd64.deb\n" for n in names))
            return subprocess.run(["sh", str(script), str(lock), str(tmp_path / "debs")],
                                  capture_output=True, text=True, timeout=120, check=False,
                                  env={k: v for k, v in os.environ.items()
                                       if "proxy" not in k.lower()})

        ok = fetch(("gcc", "hello", "zlib"))
        assert ok.returncode == 0, ok.stderr
        got = {p.name: p.read_bytes() for p in (tmp_path / "debs").glob("*.deb")}
        assert got == {f"{n}_1_amd64.deb": d for n, d in debs.items()}
        assert ok.stderr.count("not fetched from") == 1
        assert f"hello=1 (amd64, 9 bytes): not fetched from {m}/pool/hello/" in ok.stderr
        missing = fetch(("gcc", "nowhere"))
        assert missing.returncode != 0
        assert "synth: nowhere=1: no source has pool/nowhere/nowhere_1_amd64.deb" in (
            missing.stderr)
        assert f"not fetched from {s}/debian/pool/nowhere/" in missing.stderr


class _SlowHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder, each file after a pause, counting the requests in flight at once
    and the connections they came on."""

    lock = threading.Lock()
    in_flight = 0
    most = 0
    clients: ClassVar[set[tuple[str, int]]] = set()

    def do_GET(self) -> None:
        cls = type(self)
        with cls.lock:
            cls.in_flight += 1
            cls.most = max(cls.most, cls.in_flight)
            cls.clients.add(self.client_address[:2])
        try:
            time.sleep(0.3)
            super().do_GET()
        finally:
            with cls.lock:
                cls.in_flight -= 1

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.skipif(not Path("/usr/lib/apt/apt-helper").exists(), reason="no apt-helper here")
def test_apt_fetch_fetches_a_sources_files_side_by_side(tmp_path: Path) -> None:
    """apt fetches one host's files on one connection, one after the other: the script
    deals them to several apt-helper calls at once, and every file still arrives whole."""
    _SlowHandler.most, _SlowHandler.clients = 0, set()
    debs = {f"pkg{i}": f"pkg{i} {'x' * (100 * i)}".encode() for i in range(6)}
    for name, data in debs.items():
        (tmp_path / "mirror" / "pool").mkdir(parents=True, exist_ok=True)
        (tmp_path / "mirror" / "pool" / f"{name}_1_amd64.deb").write_bytes(data)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_SlowHandler, directory=str(tmp_path / "mirror")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    m = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        script = tmp_path / "apt-fetch.sh"
        script.write_text(_render(tmp_path / "run", {"gcc": deb("gcc", "4:12.2.0-3")})[
            "apt-fetch.sh"])
        lock = tmp_path / "apt.lock"
        lock.write_text("# a lock\n" + "".join(
            f"{n}=1 amd64 {hashlib.sha256(d).hexdigest()} {len(d)} {m} pool/{n}_1_amd64.deb\n"
            for n, d in debs.items()))
        done = subprocess.run(["sh", str(script), str(lock), str(tmp_path / "debs")],
                              capture_output=True, text=True, timeout=120, check=False,
                              env={k: v for k, v in os.environ.items()
                                   if "proxy" not in k.lower()})
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 0, done.stderr
    got = {p.name: p.read_bytes() for p in (tmp_path / "debs").glob("*.deb")}
    assert got == {f"{n}_1_amd64.deb": d for n, d in debs.items()}
    assert _SlowHandler.most >= 2, "the files were fetched one after the other"
    assert len(_SlowHandler.clients) >= 2
