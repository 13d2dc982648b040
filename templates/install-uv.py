"""Unpack the uv of installer.lock into a throwaway folder: no pip, no resolver.

Usage: python3 install-uv.py LOCK DEST [WHEEL_DIR]

LOCK pins uv==VERSION with the sha256 of its wheels (--hash=sha256:...) and may name an
--index-url (default https://pypi.org/simple) and --extra-index-url's. The wheel for this
machine (Linux, its architecture and C library) is taken from WHEEL_DIR when given (an
offline bundle's vendor/wheels), otherwise found on the indexes' simple pages (PEP 503, in
the lock's order) and downloaded. Its
sha256 must be one of LOCK's, or nothing is unpacked (exit 1). The uv executable inside it
becomes DEST/bin/uv. Standard library only: it runs under the environment's own Python
(3.8 or later).
"""

import hashlib
import html
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import zipfile

DEFAULT_INDEX = "https://pypi.org/simple"
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}
ANCHOR = re.compile(r"<a\s[^>]*?href\s*=\s*[\"']([^\"']+)[\"'][^>]*>([^<]*)</a>", re.I)


def die(message):
    sys.stderr.write("install-uv: " + message + "\n")
    sys.exit(1)


def read_lock(path):
    """(version, sha256 digests, index URLs) of LOCK's uv pin."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    version, digests, index, extra = None, set(), DEFAULT_INDEX, []
    for line in text.splitlines():
        words = re.sub(r"(^|\s)#.*", "", line).split()
        if words[:1] == ["--index-url"] and len(words) > 1:
            index = words[1]
        elif words[:1] == ["--extra-index-url"] and len(words) > 1:
            extra.append(words[1])
        elif words and words[0].startswith("uv=="):
            version = words[0][len("uv=="):]
            digests = {w[len("--hash=sha256:"):] for w in words[1:]
                       if w.startswith("--hash=sha256:")}
    if not version or not digests:
        die(f"{path} pins no uv==VERSION with --hash=sha256: lines")
    return version, digests, [index, *extra]


def machine():
    """(architecture as wheel tags spell it, libc family, libc (major, minor))."""
    arch = platform.machine()
    if sys.maxsize <= 2 ** 32:  # a 32-bit userland on a 64-bit kernel
        arch = {"x86_64": "i686", "aarch64": "armv7l"}.get(arch, arch)
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):
        glibc = ""
    m = re.match(r"glibc (\d+)\.(\d+)", glibc)
    if m:
        return arch, "glibc", (int(m.group(1)), int(m.group(2)))
    for loader in sorted(os.listdir("/lib")) if os.path.isdir("/lib") else []:
        if loader.startswith("ld-musl-"):
            proc = subprocess.run(["/lib/" + loader], capture_output=True, text=True,
                                  check=False)
            m = re.search(r"Version (\d+)\.(\d+)", proc.stderr)
            if m:
                return arch, "musl", (int(m.group(1)), int(m.group(2)))
    return die("cannot tell this machine's C library (neither glibc nor musl)")


def platform_rank(filename, arch, libc, libc_version):
    """How well a wheel's platform tags fit this machine: its libc version, None if not."""
    if not filename.endswith(".whl"):
        return None
    parts = filename[:-len(".whl")].split("-")
    if len(parts) < 5 or parts[-2] != "none":
        return None
    best = None
    for tag in parts[-1].split("."):
        m = re.match(r"^(manylinux|musllinux)_(\d+)_(\d+)_(.+)$", tag)
        if m:
            family = "glibc" if m.group(1) == "manylinux" else "musl"
            version, tag_arch = (int(m.group(2)), int(m.group(3))), m.group(4)
        else:
            legacy, _, tag_arch = tag.partition("_")
            if legacy not in LEGACY_MANYLINUX:
                continue
            family, version = "glibc", LEGACY_MANYLINUX[legacy]
        if family == libc and tag_arch == arch and version <= libc_version:
            best = max(best or version, version)
    return best


def listing(index):
    """(file name, URL, sha256 or None) of every file the index's page for uv links."""
    page = index.rstrip("/") + "/uv/"
    if page.startswith("file:"):
        path = urllib.request.url2pathname(urllib.parse.urlparse(page).path)
        if os.path.isdir(path):
            page = urllib.parse.urljoin(page, "index.html")
    body = fetch(page, accept="text/html", missing_ok=True)
    if body is None:
        return []  # this index has no uv: the next one may
    body = body.decode("utf-8", "replace")
    out = []
    for href, text in ANCHOR.findall(body):
        url = urllib.parse.urljoin(page, html.unescape(href))
        url, _, fragment = url.partition("#")
        digest = fragment[len("sha256="):] if fragment.startswith("sha256=") else None
        name = html.unescape(text).strip() or url.rsplit("/", 1)[-1]
        out.append((name, url, digest))
    return out


def fetch(url, accept=None, attempts=3, missing_ok=False):
    """The bytes at URL (http(s) or file:), retried twice after a network error; None where
    it does not exist (HTTP 404, no such file) and ``missing_ok``."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.read()
        except OSError as exc:
            reason = getattr(exc, "reason", None)
            if missing_ok and (getattr(exc, "code", None) == 404
                               or isinstance(reason, FileNotFoundError)):
                return None
            if attempt + 1 == attempts:
                die(f"cannot fetch {url}: {exc} (behind a TLS proxy, pass its CA bundle as "
                    "the build secret `cacert`)")
            time.sleep(2 * (attempt + 1))
    return b""


def candidates(version, digests, indexes, wheel_dir, arch, libc, libc_version):
    """(rank, file name, URL or path) of the wheels that fit, best first."""
    prefix = "uv-" + version + "-"
    if wheel_dir is not None:
        files = [(f, os.path.join(wheel_dir, f), None) for f in sorted(os.listdir(wheel_dir))]
    else:
        files = [f for index in indexes for f in listing(index)]
    found = []
    for name, where, digest in files:
        rank = platform_rank(name, arch, libc, libc_version) if name.startswith(prefix) else None
        if rank is not None and (digest is None or digest in digests):
            found.append((rank, name, where))
    # The best fit first; between equals, the first index's (a stable sort keeps the order).
    return sorted(found, key=lambda c: c[0], reverse=True)


def main(argv):
    if len(argv) not in (3, 4):
        die("usage: install-uv.py LOCK DEST [WHEEL_DIR]")
    version, digests, indexes = read_lock(argv[1])
    dest, wheel_dir = argv[2], argv[3] if len(argv) == 4 else None
    arch, libc, libc_version = machine()
    found = candidates(version, digests, indexes, wheel_dir, arch, libc, libc_version)
    if not found:
        die(f"no uv {version} wheel for {arch} with {libc} "
            f"{'.'.join(map(str, libc_version))} whose sha256 the lock names, in "
            f"{wheel_dir or ', '.join(indexes)}")
    _rank, name, where = found[0]
    if wheel_dir is not None:
        with open(where, "rb") as f:
            data = f.read()
    else:
        data = fetch(where)
    digest = hashlib.sha256(data).hexdigest()
    if digest not in digests:
        die(f"{name}: sha256 {digest} is not one of {argv[1]}'s; nothing unpacked")
    with tempfile.TemporaryFile() as tmp:
        tmp.write(data)
        tmp.seek(0)
        with zipfile.ZipFile(tmp) as wheel:
            members = [m for m in wheel.namelist() if re.fullmatch(r"uv-[^/]+\.data/scripts/uv", m)]
            if len(members) != 1:
                die(f"{name} holds no single uv-*.data/scripts/uv")
            os.makedirs(os.path.join(dest, "bin"), exist_ok=True)
            target = os.path.join(dest, "bin", "uv")
            with wheel.open(members[0]) as src, open(target, "wb") as out:
                shutil.copyfileobj(src, out)
            os.chmod(target, 0o755)
    print(f"install-uv: uv {version} from {name} (sha256 {digest[:12]}...)")


if __name__ == "__main__":
    main(sys.argv)
