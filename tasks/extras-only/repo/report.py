"""Print a run configuration's summary: python report.py CONFIG."""

import sys

from cfgreport.load import load_config, summary


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python report.py CONFIG", file=sys.stderr)
        return 2
    config = load_config(argv[0])
    for line in summary(config):
        print(line)
    assert config["model"]["layers"] * config["model"]["width"] == 4 * 128
    print("cfgreport OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
