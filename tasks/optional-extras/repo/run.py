"""CPU entrypoint: summarise N numbers and check the statistics."""

import argparse
import random
import sys

from tinystats import summarize
from tinystats.fast import dumps


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(0)
    values = [rng.gauss(5.0, 2.0) for _ in range(args.n)]
    s = summarize(values)
    assert abs(s.mean - 5.0) < 0.5, s
    assert abs(s.std - 2.0) < 0.5, s
    assert min(values) <= s.median <= max(values), s
    print(dumps(s))
    print("tinystats ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
