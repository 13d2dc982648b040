"""Content-addressed apt, pure parts: apt's print-uris lines, the snapshot source, apt.lock
and the Dockerfile's apt layer for hashed, unhashed and mixed pins."""

from __future__ import annotations

from pathlib import Path

import pytest
from distill_runs import deb, make_run_dir

from synth.diff_load import parse_apt_lock
from synth.distill.apt_source import DEFAULT_APT_SNAPSHOT, apt_sources
from synth.distill.load import load_run
from synth.distill.plan import distill, snapshot_timestamp
from synth.errors import UsageError
from synth.render import render_artifact
from synth.session.snapshot import apt_pins, parse_print_uris

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
            only: bool = False) -> dict[str, str]:
    added = {"gcc": "4:12.2.0-3", "hello": "2.10-3"}
    run = load_run(make_run_dir(tmp_path, apt_added=added, apt_manual=["hello"],
                                apt_debs=debs))
    plan = distill(run)
    return render_artifact(plan, [], apt=apt_sources(None, plan.apt.timestamp, only))


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
    assert any("predates .deb hashing" in w for w in distill(run).warnings)
