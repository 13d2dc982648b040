"""``synth reb assets fetch TASK… --to CACHE``: REB's assets downloaded once, on a machine
with network, into the cache folder ``synth verify --assets-cache`` copies into
``benchmark_assets/cache`` (REB's layout), so verification can run offline.

What a task needs is ``<task>/reb/assets.json``, written by ``synth task import-reb`` from
what REB's ``prepare_assets.sh`` names literally (:func:`extract_assets`; a person may edit
it): ``hub`` (a model or data set on the Hugging Face hub: ``repo_id``, ``repo_type``,
``revision``, optionally ``files``) and ``urls`` (``url``, optionally the ``path`` under the
cache a script reads it from, and its ``sha256``). What a script computes at run time (an id
from an environment knob, a URL joined from parts) cannot be read statically: it is listed
under ``unresolved`` with the line it came from.

* The hub is reached through ``--hf-endpoint`` (else ``HF_ENDPOINT``, else
  ``https://huggingface.co``), as ``huggingface_hub`` reaches a mirror: the revision's
  commit and file list from ``/api/<models|datasets>/<id>/revision/<rev>``, each file from
  ``/<id>/resolve/<commit>/<file>`` (``/datasets/<id>/…`` for a data set). Files land in
  the hub cache layout ``huggingface/hub/<models|datasets>--<org>--<name>/``
  (``refs/<revision>``, ``snapshots/<commit>/<file>``) that REB's scripts point ``HF_HOME``
  at, so ``local_files_only`` / ``HF_HUB_OFFLINE`` finds them. A raw
  ``https://huggingface.co/<id>/resolve/<rev>/<file>`` URL goes through the endpoint too.
* A plain URL lands at its ``path`` (default ``downloads/<host>/<url path>``).
* Every file's sha256 and size are recorded in ``CACHE/synth-assets.json``; a URL whose
  ``sha256`` is given must match it.

A missing asset (HTTP 404, no such revision, no such file) is a :class:`NotFoundError`
naming the asset, the task and the address asked.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from synth.errors import NotFoundError, TaskError, UsageError
from synth.util import atomic

ASSETS_FILE = Path("reb") / "assets.json"
LOCK = "synth-assets.json"
HUB_DIR = PurePosixPath("huggingface/hub")
DEFAULT_ENDPOINT = "https://huggingface.co"
_CHUNK = 1 << 20
_TIMEOUT_S = 120
Say = Callable[[str], None]

# --------------------------------------------------------------------------- extraction
_URL = re.compile(r"https?://[^\s\"'<>`()\\]+")
_HF_RESOLVE = re.compile(
    r"^https://huggingface\.co/(?:(datasets)/)?([\w.-]+/[\w.-]+)/resolve/([\w.-]+)/([^?#]+)")
_HF_REPO = re.compile(r"^https://huggingface\.co/(?:(datasets)/)?([\w.-]+/[\w.-]+)/?$")
_ID_LINE = re.compile(r"(?i)(snapshot_download|hf_hub_download|load_dataset|model_id|repo_id|"
                      r"dataset_id|hf_id|model_name|model_repo|dataset_name)")
_ID = re.compile(r"""(?:["']|:-)([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)(?:["'}])""")
_NOT_IDS = re.compile(r"^(benchmark_assets|build_output|benchmark_scripts|src|data|tmp|cache)"
                      r"/|\.(py|json|txt|ya?ml|sh|md|pt|pth|bin|safetensors|csv|wav|jpg|png)$")


def _script_texts(scripts: Path) -> list[tuple[str, str]]:
    names = sorted(p for p in scripts.iterdir() if p.is_file() and not p.is_symlink()
                   and p.name.startswith("prepare_assets"))
    return [(p.name, p.read_text(encoding="utf-8", errors="replace")) for p in names]


def _from_url(url: str, hub: dict[tuple[str, str, str], set[str]],
              urls: dict[str, dict[str, Any]], unresolved: list[dict[str, str]],
              where: str) -> None:
    if "{" in url or "$" in url or url.endswith(("/", ".git")):
        unresolved.append({"what": url, "where": where,
                           "why": "joined at run time (a base URL, a template or a git "
                                  "repository)"})
    elif m := _HF_RESOLVE.match(url):
        kind = "dataset" if m.group(1) else "model"
        hub.setdefault((m.group(2), kind, m.group(3)), set()).add(
            urllib.parse.unquote(m.group(4)))
    elif m := _HF_REPO.match(url):
        hub.setdefault((m.group(2), "dataset" if m.group(1) else "model", "main"), set())
    else:
        urls.setdefault(url, {"url": url})


def extract_assets(scripts: Path | None) -> dict[str, Any]:
    """What ``prepare_assets.sh`` (and its ``prepare_assets*`` helpers) names literally:
    hub repositories and files, plain URLs, and what it computes (``unresolved``)."""
    hub: dict[tuple[str, str, str], set[str]] = {}
    urls: dict[str, dict[str, Any]] = {}
    unresolved: list[dict[str, str]] = []
    texts = _script_texts(scripts) if scripts is not None and scripts.is_dir() else []
    for name, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{name}:{number}"
            for url in _URL.findall(line):
                _from_url(url.rstrip(".,;"), hub, urls, unresolved, where)
            if _ID_LINE.search(line) and "://" not in line:
                for repo_id in _ID.findall(line):
                    if not _NOT_IDS.search(repo_id):
                        kind = "dataset" if "dataset" in line.lower() else "model"
                        hub.setdefault((repo_id, kind, "main"), set())
    whole = {(i, k) for (i, k, _), files in hub.items() if files}
    return {
        "format": 1, "extracted_from": [n for n, _ in texts],
        "hub": [{"repo_id": i, "repo_type": k, "revision": r, "files": sorted(f)}
                for (i, k, r), f in sorted(hub.items()) if f or (i, k) not in whole],
        "urls": [urls[u] for u in sorted(urls)],
        "unresolved": unresolved,
    }


# --------------------------------------------------------------------------- the list
@dataclass(frozen=True)
class HubAsset:
    repo_id: str
    repo_type: str = "model"
    revision: str = "main"
    #: Files of the snapshot to fetch; empty: every file.
    files: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"hf://{'datasets/' if self.repo_type == 'dataset' else ''}{self.repo_id}" \
               f"@{self.revision}"

    @property
    def folder(self) -> PurePosixPath:
        org, _, repo = self.repo_id.partition("/")
        return HUB_DIR / f"{self.repo_type}s--{org}--{repo}"


@dataclass(frozen=True)
class UrlAsset:
    url: str
    path: str = ""
    sha256: str | None = None

    @property
    def name(self) -> str:
        return self.url

    @property
    def dest(self) -> PurePosixPath:
        if self.path:
            return PurePosixPath(self.path)
        parts = urllib.parse.urlsplit(self.url)
        return PurePosixPath("downloads", parts.netloc, parts.path.lstrip("/") or "index")


Asset = HubAsset | UrlAsset


def _safe_rel(text: str, what: str) -> PurePosixPath:
    rel = PurePosixPath(text)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise TaskError(f"{what}: {text!r} is not a relative path inside the cache.")
    return rel


def read_assets(task_dir: Path) -> list[Asset]:
    """The assets ``<task>/reb/assets.json`` lists (none where the task has no such file)."""
    path = task_dir / ASSETS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError(f"{task_dir} has no {ASSETS_FILE}: not a task imported from REB.",
                         hint="synth task import-reb writes it.") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TaskError(f"{path}: not valid JSON: {exc}") from exc
    out: list[Asset] = []
    for h in data.get("hub") or []:
        if h.get("repo_type", "model") not in ("model", "dataset") or not re.fullmatch(
                r"[\w.-]+/[\w.-]+", str(h.get("repo_id"))):
            raise TaskError(f"{path}: hub asset {h!r}: repo_id must be org/name, repo_type "
                            "model or dataset.")
        files = tuple(str(_safe_rel(str(f), f"{path}: {h['repo_id']}")) for f in
                      h.get("files") or ())
        out.append(HubAsset(h["repo_id"], h.get("repo_type", "model"),
                            str(h.get("revision") or "main"), files))
    for u in data.get("urls") or []:
        if not str(u.get("url", "")).startswith(("http://", "https://")):
            raise TaskError(f"{path}: url asset {u!r}: url must be http(s).")
        rel = str(_safe_rel(u["path"], f"{path}: {u['url']}")) if u.get("path") else ""
        out.append(UrlAsset(u["url"], rel, u.get("sha256")))
    return out


# --------------------------------------------------------------------------- downloads
@dataclass(frozen=True)
class Fetcher:
    """Where and how files are downloaded: the hub endpoint, TLS, the hub token."""

    cache: Path
    endpoint: str = DEFAULT_ENDPOINT
    ca_bundle: Path | None = None
    token: str | None = None

    def _context(self) -> ssl.SSLContext:
        return ssl.create_default_context(
            cafile=str(self.ca_bundle) if self.ca_bundle else None)

    def open(self, url: str, asset: str) -> Any:
        headers = {"User-Agent": "synth-reb-assets/1"}
        if self.token and url.startswith(self.endpoint):
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(url, headers=headers)
        try:
            return urllib.request.urlopen(request, timeout=_TIMEOUT_S,
                                          context=self._context())
        except urllib.error.HTTPError as exc:
            raise NotFoundError(f"Asset {asset}: {url} answered HTTP {exc.code} "
                                f"({exc.reason}).", hint=_hint(exc.code)) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise NotFoundError(f"Asset {asset}: {url} is not reachable: {exc}.",
                                hint="Is this machine online (or --hf-endpoint a mirror "
                                "it reaches)?") from exc

    def download(self, url: str, dest: PurePosixPath, asset: str) -> dict[str, Any]:
        """``url`` into ``cache/dest`` (written whole or not at all); its sha256 and size."""
        target = self.cache / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        digest, size = hashlib.sha256(), 0
        part = target.with_name(target.name + ".part")
        with self.open(url, asset) as resp, part.open("wb") as fh:
            while chunk := resp.read(_CHUNK):
                digest.update(chunk)
                size += len(chunk)
                fh.write(chunk)
        part.replace(target)
        return {"path": str(dest), "sha256": digest.hexdigest(), "size": size, "url": url}


def _hint(code: int) -> str:
    if code in (401, 403):
        return "A gated or private asset needs HF_TOKEN in the environment."
    if code == 404:
        return "Check the id, revision or URL in the task's reb/assets.json."
    return "Try again later, or another --hf-endpoint."


def _hub_prefix(asset: HubAsset) -> str:
    return "datasets/" if asset.repo_type == "dataset" else ""


def fetch_hub(f: Fetcher, asset: HubAsset) -> dict[str, Any]:
    api = (f"{f.endpoint}/api/{asset.repo_type}s/{asset.repo_id}/revision/"
           f"{urllib.parse.quote(asset.revision, safe='')}")
    with f.open(api, asset.name) as resp:
        try:
            info = json.loads(resp.read())
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise NotFoundError(f"Asset {asset.name}: {api} did not answer JSON.") from exc
    commit = str(info.get("sha") or "")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise NotFoundError(f"Asset {asset.name}: {api} names no commit for the revision.")
    listed = [str(s.get("rfilename")) for s in info.get("siblings") or []]
    absent = sorted(set(asset.files) - set(listed))
    if absent:
        raise NotFoundError(f"Asset {asset.name}: no file(s) {', '.join(absent)} at commit "
                            f"{commit[:12]} ({api}).", hint=_hint(404))
    files = {}
    for name in asset.files or tuple(listed):
        rel = _safe_rel(name, asset.name)
        url = (f"{f.endpoint}/{_hub_prefix(asset)}{asset.repo_id}/resolve/{commit}/"
               f"{urllib.parse.quote(str(rel))}")
        files[str(rel)] = f.download(url, asset.folder / "snapshots" / commit / rel, asset.name)
    atomic.write_text(f.cache / asset.folder / "refs" / asset.revision, commit)
    return {"kind": "hub", "repo_id": asset.repo_id, "repo_type": asset.repo_type,
            "revision": asset.revision, "commit": commit, "files": files}


def fetch_url(f: Fetcher, asset: UrlAsset) -> dict[str, Any]:
    url = asset.url
    if url.startswith(DEFAULT_ENDPOINT + "/") and f.endpoint != DEFAULT_ENDPOINT:
        url = f.endpoint + url.removeprefix(DEFAULT_ENDPOINT)  # a hub file by its raw URL
    got = f.download(url, asset.dest, asset.name)
    if asset.sha256 and got["sha256"] != asset.sha256.lower():
        (f.cache / asset.dest).unlink()
        raise NotFoundError(f"Asset {asset.url}: sha256 {got['sha256']} is not the "
                            f"{asset.sha256} assets.json records.")
    return {"kind": "url", "url": asset.url, "files": {str(asset.dest): got}}


@dataclass(frozen=True)
class FetchOutcome:
    cache: Path
    fetched: dict[str, dict[str, Any]]
    #: task -> what its prepare script computes at run time (not fetched).
    unresolved: dict[str, list[dict[str, str]]]


def _unresolved(task_dir: Path) -> list[dict[str, str]]:
    try:
        data = json.loads((task_dir / ASSETS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [u for u in data.get("unresolved") or [] if isinstance(u, dict)]


def fetch_assets(tasks: Iterable[Path], fetcher: Fetcher, say: Say) -> FetchOutcome:
    """Every asset of ``tasks`` into the cache (each once), recorded in its lock file."""
    lock_path = fetcher.cache / LOCK
    try:
        lock: dict[str, Any] = json.loads(lock_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        lock = {}
    lock.setdefault("format", 1)
    entries = lock.setdefault("assets", {})
    done: dict[str, dict[str, Any]] = {}
    unresolved: dict[str, list[dict[str, str]]] = {}
    for task_dir in tasks:
        for asset in read_assets(task_dir):
            if asset.name in done:
                continue
            say(f"assets: {asset.name}")
            try:
                got = fetch_hub(fetcher, asset) if isinstance(asset, HubAsset) \
                    else fetch_url(fetcher, asset)
            except NotFoundError as exc:
                raise NotFoundError(f"{task_dir.name}: {exc.message}", hint=exc.hint) from exc
            done[asset.name] = entries[asset.name] = got
            atomic.write_json(lock_path, lock)
        if rest := _unresolved(task_dir):
            unresolved[task_dir.name] = rest
    return FetchOutcome(fetcher.cache, done, unresolved)


def make_fetcher(cache: Path, endpoint: str | None, ca_bundle: Path | None,
                 env: Mapping[str, str] | None = None) -> Fetcher:
    env = os.environ if env is None else env
    where = (endpoint or env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
    if not where.startswith(("http://", "https://")):
        raise UsageError(f"--hf-endpoint {where!r}: expected an http(s) URL.")
    if cache.exists() and not cache.is_dir():
        raise UsageError(f"--to {cache}: exists and is not a folder.")
    cache.mkdir(parents=True, exist_ok=True)
    token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or None
    return Fetcher(cache.resolve(), where, ca_bundle, token)
