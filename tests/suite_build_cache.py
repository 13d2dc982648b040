"""The BuildKit cache the test session's own builds leave, pruned as it goes.

Every artifact build synth runs writes the cache records it made to its artifacts folder's
ledger (``build-cache.jsonl``, :mod:`synth.engine.build_cache`), and ``synth gc`` prunes
what the ledgers name. A ``--no-cache`` rebuild keeps about as much cache as its image
holds, so a session of torch rebuilds would otherwise end with tens of GB of cache nobody
reuses. After each Docker test, :meth:`SuiteCache.prune` runs the same pruning over the
ledgers that changed under the session's temporary folder. Records in use are kept, and
pruning a record that another process's build made costs that build a cache miss, never
data (the tests that count records run alone, ``engine_alone``). :func:`may_prune` says
when a process may prune: never while the other part of ``./dev test`` still builds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from synth.engine import build_cache

#: Artifacts folders sit at most this deep under the session's temporary folder.
_PATTERNS = ("*/" + build_cache.LEDGER_NAME, "*/*/" + build_cache.LEDGER_NAME,
             "*/*/*/" + build_cache.LEDGER_NAME)


#: ``./dev test`` runs two parts at once. Pruning while another process builds can stall
#: that build (docker/cli#4021), so the part that shares task runs prunes only once the
#: other part (this pid) has ended, and that other part never prunes. Both are read when
#: the session imports this module: each test runs with the SYNTH_* variables removed.
_THIS_PART = os.environ.get("SYNTH_TEST_PART")
_OTHER_PART_PID = int(os.environ.get("SYNTH_TEST_OTHER_PID") or 0)


def may_prune() -> bool:
    if _THIS_PART == "rest":
        return False
    if _OTHER_PART_PID:
        try:
            os.kill(_OTHER_PART_PID, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False  # still running
    return True


@dataclass
class SuiteCache:
    root: Path
    cli: str
    seen: dict[Path, tuple[int, int]] = field(default_factory=dict)
    records: int = 0
    size: int = 0

    def _ledgers(self) -> dict[Path, tuple[int, int]]:
        found: dict[Path, tuple[int, int]] = {}
        for pattern in _PATTERNS:
            for path in self.root.glob(pattern):
                try:
                    st = path.stat()
                except OSError:
                    continue
                found[path] = (st.st_mtime_ns, st.st_size)
        return found

    def prune(self) -> None:
        """Prune the records of the ledgers written since the last call."""
        changed = [p for p, stamp in self._ledgers().items() if self.seen.get(p) != stamp]
        if not changed:
            return
        pruned = build_cache.prune(self.cli, [p.parent for p in changed])
        self.records += len(pruned.ids)
        self.size += pruned.size
        self.seen.update(self._ledgers())
