"""Simulate a damped oscillator, fit it back, save the fit and a drawing of the pipeline.

    python fit.py --config configs/damped.yaml --out results/
"""

import argparse
import pathlib
import sys

import numpy as np
import yaml

from oscfit.model import fit, simulate
from oscfit.report import load_results, pipeline_svg, save_results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/damped.yaml")
    parser.add_argument("--out", default="results")
    args = parser.parse_args()
    cfg = yaml.safe_load(pathlib.Path(args.config).read_text())
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    t, x = simulate(cfg["truth"], cfg["samples"], cfg["duration"], cfg["noise"], cfg["seed"])
    params, cost = fit(t, x, cfg["restarts"], cfg["seed"])
    for name, true in cfg["truth"].items():
        assert abs(params[name] - true) < 0.05 * abs(true) + 0.02, f"{name}: {params[name]:.4f} vs {true}"

    save_results(out / "fit.msgpack", {"params": params, "cost": cost})
    assert load_results(out / "fit.msgpack")["params"] == params
    svg = pipeline_svg(["simulate", "curve_fit", "msgpack", "report"])
    assert "<svg" in svg
    (out / "pipeline.svg").write_text(svg)

    print(f"numpy {np.__version__}")
    print("fit " + ", ".join(f"{k}={v:.3f}" for k, v in params.items()) + f"; cost {cost:.4f}")
    print(f"oscfit OK: results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
