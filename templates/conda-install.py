"""Recreate a conda prefix from a conda lock in the @EXPLICIT format, with no solve.

Usage: python3 conda-install.py LOCK PREFIX CACHE

Every archive of LOCK (several at once) is fetched from its URL (http(s) or file://), or taken from
SYNTH_CONDA_PKGS (a folder of archives by file name: an offline bundle's vendor/conda) where
it is there, checked against the digest after its '#' (64 hex digits: sha256, 32: md5)
and extracted into CACHE; py-rattler
(on PYTHONPATH) then links them all into PREFIX. A mismatch stops it, exit 1, before
anything is linked. SYNTH_CONDA_MIRRORS="OLD=NEW OLD2=NEW2" fetches what starts with OLD
from NEW instead (a mirror of the channel); the prefix's conda-meta keeps the lock's URLs.
Standard library and py-rattler only: it runs under the base image's python3 (>= 3.10).
"""

import asyncio
import hashlib
import os
import re
import shutil
import ssl
import sys
import urllib.request
from pathlib import Path

LINE = re.compile(r"^(?P<url>\S+/(?P<fn>[^/#\s]+?)(?P<ext>\.conda|\.tar\.bz2))"
                  r"#(?:sha256:)?(?P<digest>[0-9a-f]{64}|[0-9a-f]{32})$")


def die(message):
    sys.stderr.write("conda-install: " + message + "\n")
    sys.stderr.flush()
    os._exit(1)


def read_lock(path):
    """(url, dist, digest) for each package line after @EXPLICIT."""
    out, explicit = [], False
    with Path(path).open(encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line == "@EXPLICIT":
                explicit = True
                continue
            m = LINE.match(line)
            if not explicit or m is None:
                die("not a package line of an @EXPLICIT lock with a digest: " + line[:300])
            out.append((m.group("url"), m.group("fn"), m.group("digest")))
    return out


def mirrored(url):
    for pair in os.environ.get("SYNTH_CONDA_MIRRORS", "").split():
        old, _, new = pair.partition("=")
        if old and new and url.startswith(old):
            return new + url[len(old):]
    return url


def fetch(url, dest, digest):
    """Download ``url`` to ``dest`` (or copy it from SYNTH_CONDA_PKGS) and check it; exits
    on a mismatch."""
    algo = "sha256" if len(digest) == 64 else "md5"
    local = os.environ.get("SYNTH_CONDA_PKGS")
    bundled = Path(local) / url.rsplit("/", 1)[1] if local else None
    if bundled is not None and bundled.is_file():
        source = str(bundled)
        shutil.copyfile(bundled, dest)
    else:
        cafile = os.environ.get("SSL_CERT_FILE")
        context = ssl.create_default_context(cafile=cafile) if cafile else None
        source = mirrored(url)
        try:
            with urllib.request.urlopen(source, context=context, timeout=300) as r, \
                    Path(dest).open("wb") as f:
                shutil.copyfileobj(r, f, 1 << 20)
        except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts are OSErrors
            die(f"cannot fetch {source}: {getattr(exc, 'reason', None) or exc}. The build "
                "reaches each package's channel: pass a reachable mirror with --build-arg "
                "SYNTH_CONDA_MIRRORS=\"<channel URL>=<mirror URL>\", or rebuild the artifact "
                "exported with --bundle (the archives in vendor/conda)")
    h = hashlib.new(algo)
    with Path(dest).open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != digest:
        die(f"{source} does not match its {algo}: expected {digest}, got {h.hexdigest()}")


def fetched(line, cache):
    """Fetch, check and extract one package of the lock into the cache (a thread each: the
    download, the digest and the extraction release the GIL)."""
    from rattler.package_streaming import extract

    url, dist, digest = line
    archive = str(Path(cache) / url.rsplit("/", 1)[1])
    fetch(url, archive, digest)
    # Extracted and checked here: rattler links from the cache and fetches nothing.
    extract(archive, str(Path(cache) / dist))
    return archive


async def records(lines, cache):
    from concurrent.futures import ThreadPoolExecutor

    from rattler import RepoDataRecord

    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        archives = list(pool.map(lambda line: fetched(line, cache), lines))
    out = []
    for (url, _dist, digest), archive in zip(lines, archives):
        rec = await RepoDataRecord.from_package_archive(archive)
        rec.url = url
        rec.channel = url.rsplit("/", 2)[0] + "/"
        if len(digest) == 32:
            rec.md5 = bytes.fromhex(digest)
        out.append(rec)
    return out


async def main(lock, prefix, cache):
    from rattler import PrefixRecord, install

    Path(cache).mkdir(parents=True, exist_ok=True)
    recs = await records(read_lock(lock), cache)
    meta = Path(prefix) / "conda-meta"
    installed = [PrefixRecord.from_path(str(p)) for p in sorted(meta.glob("*.json"))
                 if p.is_file()] if meta.is_dir() else []
    await install(recs, target_prefix=prefix, cache_dir=cache, installed_packages=installed,
                  show_progress=False, execute_link_scripts=False)
    print(f"conda-install: {len(recs)} packages linked into {prefix}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        die("usage: conda-install.py LOCK PREFIX CACHE")
    asyncio.run(main(*sys.argv[1:]))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # py-rattler 0.28 can crash at interpreter exit after the work is done
