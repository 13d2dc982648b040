"""The BuildKit cache the test session's own builds leave, pruned as it goes.

Every artifact build synth runs writes the cache records it made to its artifacts folder's
ledger (``build-cache.jsonl``, :mod:`synth.engine.build_cache`), and ``synth gc`` prunes
what the ledgers name. A ``--no-cache`` rebuild keeps about as much cache as its image
holds, so a session of torch rebuilds would otherwise end with tens of GB of cache nobody
reuses. After each Docker test, :meth:`SuiteCache.prune` runs the same pruning over the
ledgers that changed under the session's temporary folder. Records in use are kept, and
pruning a record that another process's build made costs that build a cache miss, never
data (the tests that count records run alone, ``engine_alone``). tests/conftest.py says
when a process may prune: never while the other part of ``./dev test`` still builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from synth.engine import build_cache

#: Artifacts folders sit at most this deep under the session's temporary folder.
_PATTERNS = ("*/" + build_cache.LEDGER_NAME, "*/*/" + build_cache.LEDGER_NAME,
             "*/*/*/" + build_cache.LEDGER_NAME)


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
