"""Verify benchmarks: C0 scan time (ast vs libcst) and rebuild time (artifact vs naive replay).

    .venv/bin/python bench/bench_verify.py scan                  # C0 scan, synthetic repos
    .venv/bin/python bench/bench_verify.py rebuild --run RUN_DIR # needs Docker and a run

`rebuild` builds, with no cache, (a) the run's exported artifact through
``synth.verify.build.build_artifact`` and (b) a naive replay of the raw transcript: every
audited ``bash -c`` command as its own RUN line, in order (failed ones with ``|| true`` so the
build survives, the way transcript-replaying tools do it), on the same base image with the
same CA secret. It prints both times and the image sizes.
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

THIRD_PARTY = ["numpy", "torch", "torch.nn", "scipy", "yaml", "cv2", "PIL", "sklearn.metrics",
               "tqdm", "wandb", "einops", "transformers", "omegaconf", "hydra", "timm",
               "matplotlib.pyplot", "pandas", "h5py", "tensorboard", "requests"]
STDLIB = ["os", "sys", "json", "math", "re", "time", "argparse", "logging", "pathlib",
          "collections", "functools", "itertools", "typing", "dataclasses"]


def synth_file(rng: random.Random, idx: int, lines: int, modules: list[str]) -> str:
    out = [f'"""Synthetic research module {idx}."""']
    for name in rng.sample(STDLIB, 6):
        out.append(f"import {name}")
    for name in rng.sample(THIRD_PARTY, 5):
        out.append(f"import {name}")
    out.append(f"from . import {rng.choice(modules)}")
    out.append("try:\n    import apex\nexcept ImportError:\n    apex = None")
    out.append("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jax")
    n = 0
    while len("\n".join(out).splitlines()) < lines:
        n += 1
        out.append(
            f"\n\nclass Block{n}:\n"
            f"    def __init__(self, dim: int = {n}, scale: float = 0.5) -> None:\n"
            f"        self.dim = dim\n        self.scale = scale * {n}\n"
            f"        self.cache = {{k: v for k, v in zip(range(dim), range(dim, 2 * dim))}}\n\n"
            f"    def forward(self, x, mask=None):\n"
            f"        if mask is not None:\n            x = [a * b for a, b in zip(x, mask)]\n"
            f"        total = sum(v * self.scale for v in x if v > {n % 7})\n"
            f"        return {{'out': total, 'dim': self.dim, 'name': f'block{{self.dim}}'}}"
        )
    return "\n".join(out) + "\n"


def make_repo(root: Path, files: int, lines: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    pkg = root / "project"
    mods = [f"mod{i:04d}" for i in range(files)]
    (pkg / "project").mkdir(parents=True)
    (pkg / "project" / "__init__.py").write_text("")
    for i, m in enumerate(mods[1:], start=1):
        (pkg / "project" / f"{m}.py").write_text(synth_file(rng, i, lines, mods))
    return pkg


def bench_scan(sizes: list[tuple[int, int]], repeat: int) -> list[dict[str, object]]:
    from synth.pyramid.c0_scan import scan_repo

    rows = []
    for files, lines in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            repo = make_repo(Path(tmp), files, lines)
            row: dict[str, object] = {"files": files, "lines_per_file": lines}
            results = {}
            for scanner in ("ast", "libcst"):
                times = []
                for _ in range(repeat if scanner == "ast" else max(1, repeat // 3)):
                    t = time.perf_counter()
                    results[scanner] = scan_repo(repo, scanner)
                    times.append(time.perf_counter() - t)
                row[f"{scanner}_s"] = round(statistics.median(times), 3)
            row["total_lines"] = results["ast"].lines
            row["imports"] = len(results["ast"].imports)
            row["same_result"] = results["ast"].imports == results["libcst"].imports
            row["speedup"] = round(float(row["libcst_s"]) / float(row["ast_s"]), 1)  # type: ignore[arg-type]
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def naive_dockerfile(run_dir: Path) -> tuple[str, int]:
    """A Dockerfile replaying every audited bash -c command, in order, one RUN each."""
    from synth.config import CONTAINER_CA_PATH
    from synth.record.rundir import read_run

    run = read_run(run_dir)
    records = [json.loads(line) for line in
               (run_dir / "audit.jsonl").read_text(encoding="utf-8").splitlines() if line]
    # The agent's statements only: a `bash -c` one of them runs (depth 1 and below) is
    # replayed by its parent's RUN, not again on its own.
    commands = [r for r in records if r.get("type") == "command" and r.get("source") == "bash-c"
                and not r.get("depth")]
    lines = [
        f"FROM {run['base_image']['ref']}",
        "COPY source /workspace",
        "WORKDIR /workspace",
        "RUN mkdir -p /synth",
    ]
    env = " ".join(f"{k}={CONTAINER_CA_PATH}" for k in ("PIP_CERT", "SSL_CERT_FILE",
                                                         "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"))
    for rec in commands:
        cmd = rec["command"]
        if rec.get("exit") not in (0, None):
            cmd = f"( {cmd} ) || true"
        cwd = rec.get("cwd") or "/workspace"
        script = f"cd {shlex.quote(cwd)} && {cmd}\n"
        # base64 keeps multi-line commands (heredocs) intact on one RUN line.
        b64 = base64.b64encode(script.encode()).decode()
        lines.append(
            f"RUN --mount=type=secret,id=cacert,target={CONTAINER_CA_PATH} "
            f'{env} bash -c "$(echo {b64} | base64 -d)"'
        )
    return "\n".join(lines) + "\n", len(commands)


def bench_rebuild(run_dir: Path) -> dict[str, object]:
    from synth.config import Settings
    from synth.engine.build import BuildRequest, build_image, find_build_cli
    from synth.engine.docker import DockerEngine
    from synth.export.artifact import ExportOptions, export_run
    from synth.record.rundir import read_run
    from synth.verify.build import build_artifact

    settings = Settings.load()
    engine = DockerEngine.connect()
    run = read_run(run_dir)
    task = run["task"]["name"]
    t = time.perf_counter()
    artifact = export_run(ExportOptions(run_dir), settings, engine).artifact_dir
    export_s = time.perf_counter() - t
    tag_a = f"synth-bench/{task}:artifact"
    t = time.perf_counter()
    build_artifact(artifact, tag_a, settings, no_cache=True)
    artifact_s = time.perf_counter() - t

    dockerfile, n = naive_dockerfile(run_dir)
    tag_n = f"synth-bench/{task}:naive"
    with tempfile.TemporaryDirectory() as tmp:
        ctx = Path(tmp)
        (ctx / "Dockerfile").write_text(dockerfile)
        import shutil

        shutil.copytree(artifact / "source", ctx / "source")
        secrets = {"cacert": settings.ca_bundle} if settings.ca_bundle else {}
        t = time.perf_counter()
        build_image(find_build_cli(settings.docker_cli),
                    BuildRequest(context=ctx, tag=tag_n, secrets=secrets, no_cache=True))
        naive_s = time.perf_counter() - t
    size_a = engine.image_inspect(tag_a)["Size"]
    size_n = engine.image_inspect(tag_n)["Size"]
    for tag in (tag_a, tag_n):
        engine.remove_image(tag)
    row = {"task": task, "run": run_dir.name, "export_s": round(export_s, 2),
           "artifact_rebuild_s": round(artifact_s, 1), "naive_replay_s": round(naive_s, 1),
           "naive_run_lines": n, "artifact_image_mb": round(size_a / 1e6),
           "naive_image_mb": round(size_n / 1e6)}
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("scan")
    s.add_argument("--repeat", type=int, default=3)
    s.add_argument("--sizes", default="60x300,600x300")
    r = sub.add_parser("rebuild")
    r.add_argument("--run", type=Path, required=True)
    args = ap.parse_args()
    if args.what == "scan":
        sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
        bench_scan(sizes, args.repeat)  # type: ignore[arg-type]
    else:
        bench_rebuild(args.run)


if __name__ == "__main__":
    main()
