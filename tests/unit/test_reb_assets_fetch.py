"""`synth reb assets fetch`: a REB task's assets into the cache `--assets-cache` reads,
against an HTTP server on 127.0.0.1 standing in for the Hugging Face hub (its API and
resolve paths) and for a plain URL; what REB's prepare_assets.sh names is extracted at
import; a missing asset is an error naming it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from synth.errors import NotFoundError, TaskError, UsageError
from synth.plugins.reb.assets_fetch import (
    extract_assets,
    fetch_assets,
    make_fetcher,
    read_assets,
)

COMMIT = "c" * 40
FILES = {
    f"/acme/tiny/resolve/{COMMIT}/config.json": b'{"hidden": 4}',
    f"/acme/tiny/resolve/{COMMIT}/sub/weights.bin": b"\x00\x01weights",
    "/acme/tiny/resolve/main/weights-raw.bin": b"raw weights",
    f"/datasets/acme/data/resolve/{COMMIT}/train.csv": b"a,b\n1,2\n",
    "/files/sample.wav": b"RIFF....WAVE",
}
API = {
    "/api/models/acme/tiny/revision/main": {
        "sha": COMMIT, "siblings": [{"rfilename": "config.json"},
                                    {"rfilename": "sub/weights.bin"}]},
    "/api/datasets/acme/data/revision/v1": {
        "sha": COMMIT, "siblings": [{"rfilename": "train.csv"}, {"rfilename": "big.bin"}]},
}


class Hub(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        Hub.seen.append((self.path, self.headers.get("Authorization")))
        body = FILES.get(self.path)
        if body is None and self.path in API:
            body = json.dumps(API[self.path]).encode()
        self.send_response(200 if body is not None else 404)
        self.end_headers()
        self.wfile.write(body or b"not here")

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def hub() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Hub.seen.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def _task(root: Path, name: str, assets: dict[str, object]) -> Path:
    (root / name / "reb").mkdir(parents=True)
    (root / name / "reb" / "assets.json").write_text(json.dumps(assets))
    return root / name


def test_fetch_fills_the_cache_in_rebs_layout(hub: str, tmp_path: Path) -> None:
    wav = hashlib.sha256(FILES["/files/sample.wav"]).hexdigest()
    task = _task(tmp_path, "alpha", {
        "hub": [{"repo_id": "acme/tiny", "repo_type": "model", "revision": "main"},
                {"repo_id": "acme/data", "repo_type": "dataset", "revision": "v1",
                 "files": ["train.csv"]}],
        "urls": [{"url": f"{hub}/files/sample.wav", "sha256": wav},
                 {"url": "https://huggingface.co/acme/tiny/resolve/main/weights-raw.bin",
                  "path": "models/raw.bin"}],
        "unresolved": [{"what": "https://x.invalid/{v}", "where": "prepare_assets.sh:3",
                        "why": "joined at run time"}]})
    cache = tmp_path / "cache"
    said: list[str] = []
    fetcher = make_fetcher(cache, hub, None, env={"HF_TOKEN": "tok"})
    outcome = fetch_assets([task, task], fetcher, said.append)  # each asset once
    snap = cache / "huggingface" / "hub" / "models--acme--tiny"
    assert (snap / "refs" / "main").read_text() == COMMIT
    assert (snap / "snapshots" / COMMIT / "sub" / "weights.bin").read_bytes() == \
        FILES[f"/acme/tiny/resolve/{COMMIT}/sub/weights.bin"]
    data = cache / "huggingface" / "hub" / "datasets--acme--data"
    assert (data / "refs" / "v1").read_text() == COMMIT
    assert sorted(p.name for p in (data / "snapshots" / COMMIT).iterdir()) == ["train.csv"]
    host = hub.removeprefix("http://")
    assert (cache / "downloads" / host / "files" / "sample.wav").read_bytes() == \
        FILES["/files/sample.wav"]
    # a raw hub URL goes through the endpoint too
    assert (cache / "models" / "raw.bin").read_bytes() == b"raw weights"
    lock = json.loads((cache / "synth-assets.json").read_text())
    entry = lock["assets"]["hf://acme/tiny@main"]
    assert entry["commit"] == COMMIT
    assert entry["files"]["config.json"]["sha256"] == hashlib.sha256(
        FILES[f"/acme/tiny/resolve/{COMMIT}/config.json"]).hexdigest()
    assert lock["assets"][f"{hub}/files/sample.wav"]["files"][
        f"downloads/{host}/files/sample.wav"]["sha256"] == wav
    assert len(said) == 4 and outcome.unresolved == {"alpha": [
        {"what": "https://x.invalid/{v}", "where": "prepare_assets.sh:3",
         "why": "joined at run time"}]}
    # the hub token goes with the requests to the hub endpoint
    assert ("/api/models/acme/tiny/revision/main", "Bearer tok") in Hub.seen
    assert not list(cache.rglob("*.part"))


def test_a_missing_asset_is_an_error_naming_it(hub: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    fetcher = make_fetcher(cache, hub, None, env={})
    cases = [
        ({"hub": [{"repo_id": "acme/nothing"}]}, r"beta: Asset hf://acme/nothing@main: "
         r".*/api/models/acme/nothing/revision/main answered HTTP 404"),
        ({"hub": [{"repo_id": "acme/data", "repo_type": "dataset", "revision": "v1",
                   "files": ["absent.csv"]}]}, r"no file\(s\) absent.csv at commit"),
        ({"urls": [{"url": f"{hub}/files/gone.zip"}]}, r"files/gone.zip answered HTTP 404"),
        ({"urls": [{"url": f"{hub}/files/sample.wav", "sha256": "0" * 64}]},
         r"sha256 .* is not the 0{64}"),
    ]
    for i, (assets, message) in enumerate(cases):
        task = _task(tmp_path / str(i), "beta", assets)
        with pytest.raises(NotFoundError, match=message):
            fetch_assets([task], fetcher, lambda _m: None)
    assert not (cache / "downloads" / hub.removeprefix("http://") / "files" /
                "sample.wav").exists()  # a file whose sha256 does not match is not kept
    with pytest.raises(UsageError, match="not a task imported from REB"):
        read_assets(tmp_path)
    bad = _task(tmp_path / "bad", "t", {"urls": [{"url": f"{hub}/x", "path": "../x"}]})
    with pytest.raises(TaskError, match="not a relative path inside the cache"):
        read_assets(bad)
    with pytest.raises(UsageError, match="expected an http"):
        make_fetcher(cache, "ftp://mirror", None, env={})


def test_the_cli_fetches_through_hf_endpoint(hub: str, tmp_path: Path) -> None:
    task = _task(tmp_path, "alpha", {"hub": [{"repo_id": "acme/tiny"}]})
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "reb", "assets", "fetch", str(task), "--to",
         str(tmp_path / "cache"), "--json"], capture_output=True, text=True, check=False,
        env={**os.environ, "HF_ENDPOINT": hub})
    assert proc.returncode == 0, proc.stderr
    fetched = json.loads(proc.stdout)["result"]["fetched"]
    assert sorted(fetched["hf://acme/tiny@main"]["files"]) == ["config.json", "sub/weights.bin"]
    missing = _task(tmp_path / "m", "gamma", {"hub": [{"repo_id": "acme/nothing"}]})
    proc = subprocess.run(
        [sys.executable, "-m", "synth", "reb", "assets", "fetch", str(missing), "--to",
         str(tmp_path / "cache"), "--hf-endpoint", hub], capture_output=True, text=True,
        check=False)
    assert proc.returncode == NotFoundError.exit_code
    assert "gamma: Asset hf://acme/nothing@main" in proc.stderr


def test_rebs_prepare_script_is_read_for_what_it_names(tmp_path: Path) -> None:
    """The import lists what prepare_assets.sh names literally; what it computes at run
    time is listed apart, with where it came from."""
    scripts = tmp_path / "benchmark_scripts"
    scripts.mkdir()
    (scripts / "prepare_assets.sh").write_text(
        'MODEL_ID="${SCIMLOPSBENCH_MODEL_ID:-acme/tiny-llm}"\n'
        'python - <<PY\nfrom huggingface_hub import snapshot_download\n'
        'snapshot_download(repo_id="acme/tiny-llm", cache_dir=cache)\n'
        'ds = load_dataset("acme/tiny-data", split="train")\nPY\n'
        "curl -L https://huggingface.co/acme/ckpt/resolve/main/model.pth?download=true -o m\n"
        "wget https://example.org/data/sample.wav\n"
        'BASE="https://example.org/mnist/"\n'
        'out="benchmark_assets/model/x.json"  # a path, not a hub id\n')
    got = extract_assets(scripts)
    assert got["hub"] == [
        {"repo_id": "acme/ckpt", "repo_type": "model", "revision": "main",
         "files": ["model.pth"]},
        {"repo_id": "acme/tiny-data", "repo_type": "dataset", "revision": "main", "files": []},
        {"repo_id": "acme/tiny-llm", "repo_type": "model", "revision": "main", "files": []}]
    assert got["urls"] == [{"url": "https://example.org/data/sample.wav"}]
    assert got["unresolved"] == [{"what": "https://example.org/mnist/",
                                  "where": "prepare_assets.sh:9",
                                  "why": "joined at run time (a base URL, a template or a "
                                         "git repository)"}]
    assert extract_assets(None)["hub"] == []
