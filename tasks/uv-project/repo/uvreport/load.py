"""Reads a run's metrics file (YAML: the yaml extra)."""

import yaml


def load(path):
    with open(path, encoding="utf-8") as fh:
        run = yaml.safe_load(fh)
    for field in ("name", "epochs"):
        if field not in run:
            raise ValueError(f"{path}: no {field!r}")
    return run
