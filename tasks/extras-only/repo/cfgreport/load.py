"""Reading and checking a run configuration."""

from __future__ import annotations

from pathlib import Path

import yaml

REQUIRED = ("model", "optimizer", "steps")


def load_config(path: str | Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        config = yaml.safe_load(fh)
    missing = [key for key in REQUIRED if key not in config]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    return config


def summary(config: dict) -> list[str]:
    model, opt = config["model"], config["optimizer"]
    return [
        f"model: {model['name']} ({model['layers']} layers, width {model['width']})",
        f"optimizer: {opt['name']} lr={opt['lr']}",
        f"steps: {config['steps']}",
    ]
