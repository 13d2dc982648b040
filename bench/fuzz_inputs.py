"""The input fuzzer at length: as many seeded cases as asked (CI runs 270, seed 11).

    .venv/bin/python bench/fuzz_inputs.py --cases 3000 --seed 1

Each case mutates one file (task.toml, a run-directory file or an artifact file) and
drives the real CLI in-process; see tests/fuzz_inputs.py for the properties checked. The
first case that breaks one stops the run and prints the mutation and the failure; a seed
and a case number reproduce it. No engine and no network are used.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fuzz_inputs import build_world, offline_locker, run_cases, stats  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    os.environ["DOCKER_HOST"] = "unix:///nonexistent/no-engine.sock"
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="synth-fuzz-") as tmp:
        world = build_world(Path(tmp) / "world")
        try:
            with offline_locker():
                done = run_cases(world, args.cases, args.seed, Path(tmp) / "cases")
        except AssertionError:
            traceback.print_exc()
            return 1
    seconds = time.monotonic() - start
    for kind, n in sorted(stats(done).items()):
        print(f"{n:6d}  {kind}")
    print(f"{len(done)} cases (seed {args.seed}) kept every property in {seconds:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
