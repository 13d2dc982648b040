"""The input fuzzer at length: as many seeded cases of each input kind as asked (CI runs a
few dozen, tests/unit/test_fuzz_inputs.py).

    .venv/bin/python bench/fuzz_inputs.py --cases 1000 --seed 1 [--kinds task,reb]

Each case mutates one file of a task folder, a run directory, an artifact folder, a
ResearchEnvBench tree or a bench results folder and drives synth in-process; see
tests/fuzz_inputs.py for the verdicts. Prints, per kind, the cases, how many were accepted
and refused, the tracebacks, silent accepts, unlocated errors and rewritten inputs, and
the seconds taken; then the first few failures, each reproducible from its seed and case
number. No engine and no network are used. Exit 1 when any case broke a property.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz_inputs import (  # noqa: E402
    FAILURES,
    INPUT_KINDS,
    build_world,
    failures,
    offline_locker,
    run_cases,
    stats,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000, help="cases per input kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(INPUT_KINDS))
    args = parser.parse_args()
    os.environ["DOCKER_HOST"] = "unix:///nonexistent/no-engine.sock"
    kinds = tuple(k for k in args.kinds.split(",") if k)
    done, seconds = [], {}
    with tempfile.TemporaryDirectory(prefix="synth-fuzz-") as tmp:
        world = build_world(Path(tmp) / "world")
        with offline_locker():
            for kind in kinds:
                start = time.monotonic()
                done += run_cases(world, args.cases, args.seed, Path(tmp) / kind, (kind,))
                seconds[kind] = time.monotonic() - start
    cols = ("cases", "accepted", "refused", *FAILURES)
    print(f"{'kind':10}" + "".join(f"{c:>11}" for c in cols) + f"{'seconds':>10}")
    for kind, row in stats(done).items():
        print(f"{kind:10}" + "".join(f"{row[c]:>11}" for c in cols)
              + f"{seconds[kind]:>10.1f}")
    broken = failures(done)
    shown: set[tuple[str, str, str]] = set()
    for c in broken:  # one of each kind of failure, in full
        key = (c.kind, c.outcome, c.what.split(":", 1)[0] + c.detail[:40])
        if key not in shown and len(shown) < 30:
            shown.add(key)
            print(f"\n{c.kind} {c.outcome}: {c.what}\n{c.detail[-1500:]}")
    print(f"\n{len(done)} cases (seed {args.seed}), {len(broken)} broke a property, "
          f"{sum(seconds.values()):.0f}s")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
