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


#: An engine CLI that keeps its build cache in a JSON file: ``system df`` lists it, and
#: ``builder prune --filter id=X`` removes X only when no record was made from it, as
#: BuildKit keeps a parent while a child is there.
FAKE_CLI = """#!{python}
import json, sys
state = {state!r}
records = json.load(open(state))
if sys.argv[1:3] == ["system", "df"]:
    print(json.dumps([{{"ID": r, "Size": "1MB", "InUse": "false"}} for r in records]))
elif sys.argv[1:3] == ["builder", "prune"]:
    rid = sys.argv[-1].split("=", 1)[1]
    if rid in records and not any(p == rid for p in records.values()):
        del records[rid]
    json.dump(records, open(state, "w"))
"""


def test_gc_removes_a_chain_of_records_in_one_run(tmp_path: Path) -> None:
    """A record comes out only after the ones made from it: one gc takes the whole chain
    the ledger names (it took three runs), and leaves what the ledger does not name."""
    import json
    import sys

    state = tmp_path / "cache.json"
    # c was made from b, b from a; d stands alone; e is another build's.
    state.write_text(json.dumps({"a": None, "b": "a", "c": "b", "d": None, "e": None}))
    cli = tmp_path / "docker"
    cli.write_text(FAKE_CLI.format(python=sys.executable, state=str(state)))
    cli.chmod(0o755)
    build_cache.Ledger(tmp_path).add(["a", "b", "c", "d"])
    assert build_cache.prune(str(cli), [tmp_path], dry_run=True).ids == ["a", "b", "c", "d"]
    assert set(json.loads(state.read_text())) == {"a", "b", "c", "d", "e"}  # dry run
    pruned = build_cache.prune(str(cli), [tmp_path])
    assert (sorted(pruned.ids), pruned.size) == (["a", "b", "c", "d"], 4_000_000)
    assert set(json.loads(state.read_text())) == {"e"}
    assert build_cache.Ledger(tmp_path).ids() == []
