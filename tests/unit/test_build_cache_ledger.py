"""The build-cache ledger: what gc may prune is exactly what the folder's builds recorded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from synth.engine import build_cache


def test_ledger_round_trip_skips_torn_lines_and_dedupes(tmp_path: Path) -> None:
    ledger = build_cache.Ledger(tmp_path)
    assert ledger.ids() == []
    ledger.add(["b", "a"])
    ledger.add(["a"])
    with ledger.path.open("a") as fh:
        fh.write('{"id": "c"')  # a build killed mid-write
    assert ledger.ids() == ["a", "b"]
    assert oct(ledger.path.stat().st_mode & 0o777) == "0o600"
    ledger.keep_only(["b"])
    assert ledger.ids() == ["b"]
    ledger.keep_only([])
    assert not ledger.path.exists()


def test_ledger_is_never_written_through_a_symlink(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    os.symlink(target, tmp_path / build_cache.LEDGER_NAME)
    with pytest.raises(OSError):
        build_cache.Ledger(tmp_path).add(["x"])
    assert target.read_text() == "keep\n"


@pytest.mark.parametrize(("text", "size"), [("0B", 0), ("5.67kB", 5670), ("1.2MB", 1_200_000),
                                            ("2GiB", 2 * 2**30), ("?", 0)])
def test_sizes_of_the_cli_table(text: str, size: int) -> None:
    assert build_cache._size(text) == size
