"""Environment fingerprint: what an interpreter's environment *contains*, as one JSON object.

Runs under the target's own Python (stdlib only, Python >= 3.8), inside an image or on a
host. Image IDs never repeat between builds, so two environments are compared by content:

- the interpreter (version, implementation) and the C library (glibc version);
- every distribution importable by this interpreter (canonical name, version, installer,
  direct_url kind) with a digest over the sorted (relative path, sha256) pairs of the files
  its RECORD lists (``__pycache__``/``*.pyc`` and pip/uv bookkeeping files left out, so the
  same wheel installed by pip or by uv gives the same digest); launcher scripts outside the
  site directory are digested apart, since pip and uv write them differently;
- files in the site directories no distribution owns, each with its sha256;
- every native shared object (``*.so``, ``*.so.N``) in the site directories and under the
  repository's working directory, each with its sha256 and owning distribution;
- the Debian packages (dpkg), where dpkg exists, and which of them owns each reported path
  (``dpkg`` on a distribution, a native file, an unowned file: read once from the package
  lists ``/var/lib/dpkg/info/*.list``); a Debian package's Python files whose md5 no longer
  matches the package's ``md5sums`` are its distribution's ``modified`` files;
- per distribution, a second digest over its files outside its metadata folder
  (``module_digest``: the code it installs, whatever metadata layout the installer wrote);
- per distribution, every file whose content no longer matches the sha256 its RECORD lists
  (``modified``: patched after install, e.g. ``sed -i`` in site-packages) or that is gone
  (``missing_paths``);
- a virtual environment's own files outside its site directory (``venv``): what made it
  (``pyvenv.cfg``'s ``uv =`` / ``virtualenv =`` line, else Python's ``venv``), its
  ``pyvenv.cfg`` by key, and the sha256 of each other file no distribution owns (activation
  scripts, the interpreter's links, anything else put there); None for an interpreter that
  is not a venv;
- the working directory's tree (``workspace``): every file's sha256 (``.git`` included,
  ``*.pyc``, the ``--skip-dirs`` folders (bytecode and tool caches) and Python environments
  inside it left out), and the
  environment variables the research code sees.

Usage: python fingerprint.py [--workdir /workspace] [--dpkg-admindir /var/lib/dpkg]
[--skip-dirs __pycache__,.pytest_cache]
Prints the JSON object on stdout; exits 0 unless the probe itself breaks.

``--files NAME[,NAME...]`` prints instead, for just those distributions, every file with
the digest it contributes to the distribution's ``digest``: the fingerprint stays small,
and a comparison that finds two ``digest``s differ asks each side once more to name the
files that differ.
"""

import base64
import binascii
import csv
import hashlib
import json
import os
import platform
import re
import struct
import subprocess
import sys
import time

FORMAT = 1
BUF = 1 << 20
#: dpkg's database (``dpkg --admindir``).
DPKG_ADMINDIR = "/var/lib/dpkg"
# Files every installer writes differently (or not at all): not part of the content.
# uv_build.json: uv's record of the settings it built an sdist with; uv_cache.json: its
# record of a local file's (find-links, path) cache key. pip writes neither.
BOOKKEEPING = frozenset(["RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "RECORD.jws",
                         "RECORD.p7s", "uv_build.json", "uv_cache.json"])
META_SUFFIXES = (".dist-info", ".egg-info")

_stats = {"files_hashed": 0, "bytes_hashed": 0}


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(BUF)
            if not chunk:
                break
            h.update(chunk)
            _stats["bytes_hashed"] += len(chunk)
    _stats["files_hashed"] += 1
    return h.hexdigest()


def is_native(name):
    return name.endswith(".so") or ".so." in name


def skipped(rel):
    parts = rel.split("/")
    return "__pycache__" in parts or rel.endswith((".pyc", ".pyo"))


def site_dirs():
    seen = set()
    out = []
    for entry in sys.path:
        if not entry or os.path.basename(entry.rstrip("/")) not in ("site-packages",
                                                                   "dist-packages"):
            continue
        if not os.path.isdir(entry):
            continue
        real = os.path.realpath(entry)
        if real in seen:
            continue
        seen.add(real)
        out.append(os.path.abspath(entry))
    return out


def glibc_version():
    try:
        value = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        value = None
    if value and value.startswith("glibc "):
        return value.split(" ", 1)[1]
    lib, version = platform.libc_ver()
    return version if lib == "glibc" and version else None


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def meta_fields(text):
    """Name and Version from METADATA / PKG-INFO (RFC 822 headers)."""
    fields = {}
    for line in text.splitlines():
        if not line.strip():
            break
        if ":" in line and not line[0].isspace():
            key, _, value = line.partition(":")
            key = key.strip().lower()
            if key in ("name", "version") and key not in fields:
                fields[key] = value.strip()
    return fields


def record_paths(meta_dir):
    """Paths a distribution installed, relative to its site dir; and where the list came from."""
    record = read_text(os.path.join(meta_dir, "RECORD"))
    if record is not None:
        paths = []
        for line in record.splitlines():
            if not line.strip():
                continue
            # RECORD is CSV; a path with a comma is quoted.
            if line.startswith('"'):
                end = line.find('"', 1)
                paths.append(line[1:end])
            else:
                paths.append(line.split(",", 1)[0])
        return paths, "RECORD"
    installed = read_text(os.path.join(meta_dir, "installed-files.txt"))
    if installed is not None:
        rel_meta = os.path.basename(meta_dir)
        paths = []
        for line in installed.splitlines():
            line = line.strip()
            if line:
                # Relative to the .egg-info directory.
                paths.append(os.path.normpath(os.path.join(rel_meta, line)).replace(os.sep, "/"))
        return paths, "installed-files.txt"
    return None, None


def record_hashes(meta_dir):
    """RECORD's {relative path: urlsafe-base64 sha256} (files listed with a sha256 only)."""
    text = read_text(os.path.join(meta_dir, "RECORD"))
    out = {}
    if text is None:
        return out
    for row in csv.reader(text.splitlines()):
        if len(row) >= 2 and row[1].startswith("sha256="):
            out[row[0]] = record_digest(row[1][len("sha256="):])
    return out


def record_digest(value):
    """RECORD's digest as the spec writes it (urlsafe base64, no padding). Some backends
    (uv_build 0.9) write the hex digest instead: 64 hex digits, which no base64 digest of a
    sha256 (43 characters) can be, read as the same hash."""
    if len(value) == 64 and all(ch in "0123456789abcdef" for ch in value.lower()):
        return hex_to_record(value.lower()) or value
    return value.rstrip("=")


def hex_to_record(digest):
    """A hex sha256 as RECORD writes it (urlsafe base64, no padding)."""
    try:
        raw = binascii.unhexlify(digest)
    except (binascii.Error, TypeError, ValueError):
        return None
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def record_check(site, meta_dir, hashes):
    """(modified, missing): files whose sha256 differs from RECORD's, files RECORD lists that
    are gone. Paths relative to the site dir, sorted."""
    modified = []
    missing = []
    for rel, want in sorted(record_hashes(meta_dir).items()):
        if skipped(rel):
            continue
        path = os.path.normpath(os.path.join(site, rel))
        if path not in hashes:
            hashes[path] = file_digest(path)
        got = hashes[path]
        if got is None:
            missing.append(rel)
        elif not got.startswith("symlink:") and hex_to_record(got) != want:
            modified.append({"path": rel, "record_sha256": want,
                             "sha256": got})
    return modified, missing


WORKSPACE_MAX_FILES = 50000


def is_environment(path):
    """A Python environment's folder (a venv's ``pyvenv.cfg``, a conda prefix's
    ``conda-meta``): its distributions are compared as distributions, of this interpreter
    or of the run's others, never as working-directory files (a tool's ``.venv`` inside the
    project holds its own activation scripts and markers)."""
    return (os.path.isfile(os.path.join(path, "pyvenv.cfg"))
            or os.path.isdir(os.path.join(path, "conda-meta")))


def workspace_tree(workdir, skip_dirs=("__pycache__",)):
    """{relative path: sha256 or 'symlink:<target>'} of every file under ``workdir``
    (``.git`` included; folders named in ``skip_dirs`` (bytecode and tool caches, which no
    artifact's source holds), ``*.pyc`` and Python environments inside it left out), and
    whether it was cut."""
    files = {}
    if not os.path.isdir(workdir):
        return files, False
    for root, dirs, names in os.walk(workdir):
        dirs[:] = sorted(d for d in dirs if d not in skip_dirs
                         and not is_environment(os.path.join(root, d)))
        for name in sorted(names):
            if name.endswith((".pyc", ".pyo")):
                continue
            if len(files) >= WORKSPACE_MAX_FILES:
                return files, True
            path = os.path.join(root, name)
            digest = file_digest(path)
            if digest is not None:
                files[os.path.relpath(path, workdir).replace(os.sep, "/")] = digest
    return files, False


#: Variables that differ per container or per process, not per environment.
VOLATILE_ENV = frozenset(["HOSTNAME", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "TERM",
                          "no_proxy", "NO_PROXY", "http_proxy", "https_proxy", "HTTP_PROXY",
                          "HTTPS_PROXY"])


def code_environment():
    """The environment variables the research code sees, volatile ones left out."""
    return dict(sorted((k, v) for k, v in os.environ.items() if k not in VOLATILE_ENV))


def top_level_paths(site, meta_dir):
    """Files of an egg-info distribution without a file list (Debian's), by top_level.txt."""
    text = read_text(os.path.join(meta_dir, "top_level.txt"))
    if text is None:
        return None
    paths = []
    for top in sorted(set(t.strip() for t in text.splitlines() if t.strip())):
        pkg = os.path.join(site, top)
        if os.path.isdir(pkg) and not os.path.islink(pkg):
            for root, dirs, files in os.walk(pkg):
                dirs.sort()
                for f in files:
                    paths.append(os.path.relpath(os.path.join(root, f), site).replace(os.sep, "/"))
        for f in os.listdir(site):
            stem = f.split(".", 1)[0]
            if stem == top and os.path.isfile(os.path.join(site, f)):
                paths.append(f)
    for root, dirs, files in os.walk(meta_dir):
        for f in files:
            paths.append(os.path.relpath(os.path.join(root, f), site).replace(os.sep, "/"))
    return paths


def direct_url_info(meta_dir):
    """(kind, url, editable) from PEP 610 direct_url.json; kind None when installed by name.

    kind: "vcs" (git+https://...), "dir" (a local directory, e.g. the repo itself),
    "archive" (a remote wheel or sdist URL), "local-archive" (a file:// wheel or sdist).
    """
    text = read_text(os.path.join(meta_dir, "direct_url.json"))
    if text is None:
        return None, None, False
    try:
        data = json.loads(text)
    except ValueError:
        return "invalid", None, False
    url = data.get("url")
    if "vcs_info" in data:
        return "vcs", url, False
    if "dir_info" in data:
        return "dir", url, bool((data.get("dir_info") or {}).get("editable"))
    if (url or "").startswith("file:"):
        return "local-archive", url, False
    return "archive", url, False


def digest_pairs(pairs):
    h = hashlib.sha256()
    for rel, digest in sorted(pairs):
        h.update(rel.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
        h.update(digest.encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()


_PY_SHEBANG = re.compile(rb"^#!\s*(\S*/)?python[0-9.]*(\s|$)")


def script_digest(path):
    """sha256 of a launcher script with its shebang's python name normalised.

    ``/opt/venv/bin/pip`` writes ``#!/opt/venv/bin/python3``, ``python -m pip`` writes
    ``#!/opt/venv/bin/python``: the same interpreter, so the same script.
    """
    if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > BUF:
        return file_digest(path)
    with open(path, "rb") as fh:
        data = fh.read()
    first, sep, rest = data.partition(b"\n")
    m = _PY_SHEBANG.match(first)
    if m:
        first = b"#!" + (m.group(1) or b"") + b"python" + first[m.end(0) - len(m.group(2)):]
    _stats["files_hashed"] += 1
    _stats["bytes_hashed"] += len(data)
    return hashlib.sha256(first + sep + rest).hexdigest()


def file_digest(path):
    """sha256 of a regular file, 'symlink:<target>' of a link, None if absent."""
    if os.path.islink(path):
        return "symlink:" + os.readlink(path)
    if os.path.isfile(path):
        return sha256_file(path)
    return None


SHF_ALLOC = 0x2
SHT_NOBITS = 8
# Differs whenever any byte of the file does (debug info included): not part of the code.
_CODE_SKIP = frozenset([".note.gnu.build-id"])


def elf_code_digest(path):
    """sha256 over what the loader maps of an ELF file, or None if it is not ELF.

    The allocated sections (code, data, dynamic symbols: ``SHF_ALLOC``), by name, address
    and content, without the build-id note. Two builds that differ only in debug info or in
    the symbol table (GCC's variable-location lists are not always deterministic) have the
    same code digest and different sha256.
    """
    try:
        with open(path, "rb") as fh:
            ident = fh.read(64)
            if len(ident) < 64 or ident[:4] != b"\x7fELF":
                return None
            end = "<" if ident[5] == 1 else ">"
            if ident[4] == 2:
                shoff = struct.unpack(end + "Q", ident[0x28:0x30])[0]
                shentsize, shnum, shstrndx = struct.unpack(end + "HHH", ident[0x3A:0x40])
                layout = end + "IIQQQQ"
            else:
                shoff = struct.unpack(end + "I", ident[0x20:0x24])[0]
                shentsize, shnum, shstrndx = struct.unpack(end + "HHH", ident[0x2E:0x34])
                layout = end + "IIIIII"
            if not shoff or not shnum or shstrndx >= shnum:
                return None
            fh.seek(shoff)
            raw = fh.read(shentsize * shnum)
            size = struct.calcsize(layout)
            sections = [struct.unpack(layout, raw[i * shentsize:i * shentsize + size])
                        for i in range(shnum)]
            _n, _t, _f, _a, str_off, str_size = sections[shstrndx]
            fh.seek(str_off)
            names = fh.read(str_size)
            h = hashlib.sha256()
            for name_off, sh_type, flags, addr, offset, sh_size in sections:
                name = names[name_off:names.find(b"\0", name_off)]
                if not flags & SHF_ALLOC or name.decode("ascii", "replace") in _CODE_SKIP:
                    continue
                h.update(name + b"\0" + struct.pack("<QQ", addr, sh_size))
                if sh_type == SHT_NOBITS:
                    continue
                fh.seek(offset)
                left = sh_size
                while left > 0:
                    chunk = fh.read(min(BUF, left))
                    if not chunk:
                        break
                    h.update(chunk)
                    left -= len(chunk)
            return h.hexdigest()
    except (OSError, struct.error, ValueError, IndexError):
        return None


def content_digest(path, hashes, code_hashes):
    """The digest a distribution's file contributes: the ELF code digest for native files
    (see elf_code_digest), else the file's sha256."""
    if path not in hashes:
        hashes[path] = file_digest(path)
    digest = hashes[path]
    if digest is None or digest.startswith("symlink:") or not is_native(
            os.path.basename(path)):
        return digest
    if path not in code_hashes:
        code_hashes[path] = elf_code_digest(path)
    return "elf-code:" + code_hashes[path] if code_hashes[path] else digest


class _Seen:
    """What the scan of distributions learnt so far, shared by all of them."""

    def __init__(self):
        self.owned = set()  # absolute, normalised paths
        self.owners = {}  # absolute path -> canonical name of the first distribution listing it
        self.hashes = {}  # absolute path -> digest, so a file is hashed once
        self.code_hashes = {}  # absolute path -> ELF code digest (native files)
        self.dpkg_owners = {}  # absolute path -> the Debian package listing it
        self.dpkg_admindir = DPKG_ADMINDIR


def is_seed_marker(site, path):
    """virtualenv's ``<name>-<version>.virtualenv`` beside the distributions it seeded
    (pip, setuptools, wheel): its record of having seeded them, like an INSTALLER file."""
    return os.path.dirname(path) == site and path.endswith(".virtualenv")


def _dist_files(site, meta_dir, rels, cname, seen):
    """(files inside the site dir with digests, files outside it with digests, missing).
    ``inside`` holds the metadata folder's files too (see :func:`module_pairs`)."""
    inside = []
    outside = []
    missing = 0
    for rel in rels:
        if skipped(rel):
            continue
        path = os.path.normpath(os.path.join(site, rel))
        seen.owners.setdefault(path, cname)
        in_meta = os.path.dirname(path) == meta_dir
        if (in_meta and os.path.basename(path) in BOOKKEEPING) or is_seed_marker(site, path):
            seen.owned.add(path)
            continue
        if not path.startswith(site + os.sep):
            # Outside the site dir: launcher scripts (bin/), data files.
            digest = script_digest(path)
            if digest is None:
                missing += 1
            else:
                outside.append((path, digest))
            continue
        digest = content_digest(path, seen.hashes, seen.code_hashes)
        if digest is None:
            missing += 1
            continue
        seen.owned.add(path)
        inside.append((os.path.relpath(path, site).replace(os.sep, "/"), digest))
    # Everything in the metadata directory belongs to the distribution.
    for root, _dirs, files in os.walk(meta_dir):
        for f in files:
            seen.owned.add(os.path.join(root, f))
    return inside, outside, missing


def module_pairs(inside, entry):
    """The (path, digest) pairs outside the metadata folder ``entry``: the installed code."""
    return [(rel, digest) for rel, digest in inside if not rel.startswith(entry + "/")]


def meta_fields_of(meta_dir):
    """Name and Version of the distribution whose metadata folder is ``meta_dir``."""
    return meta_fields(read_text(os.path.join(meta_dir, "METADATA")) or read_text(
        os.path.join(meta_dir, "PKG-INFO")) or "")


def file_list(site, meta_dir):
    """(paths the distribution installed, relative to ``site``; where the list came from)."""
    rels, files_from = record_paths(meta_dir)
    if rels is None:
        rels = top_level_paths(site, meta_dir)
        files_from = "top_level.txt" if rels is not None else None
    return rels, files_from


def list_files(sites, names):
    """``--files``: the named distributions' files, each with the digest it contributes to
    the distribution's ``digest`` (the same pairs, so two sides' lists name exactly the
    files that make two digests differ). Only the distribution imports resolve to (the
    first in ``sites`` order, as the full scan's unshadowed one):
    {name: {"location", "metadata_dir", "digest", "files": {relative path: digest}}}."""
    wanted = set(canonical(n) for n in names)
    seen = _Seen()
    out = {}
    for site in sites:
        try:
            entries = sorted(os.listdir(site))
        except OSError:
            continue
        for entry in entries:
            meta_dir = os.path.join(site, entry)
            if not entry.endswith(META_SUFFIXES) or not os.path.isdir(meta_dir):
                continue
            cname = canonical(meta_fields_of(meta_dir).get("name") or "")
            if cname not in wanted or cname in out:
                continue
            rels, _from = file_list(site, meta_dir)
            inside, _outside, _missing = _dist_files(site, meta_dir, rels or [], cname, seen)
            out[cname] = {"location": site, "metadata_dir": entry,
                          "digest": digest_pairs(inside), "files": dict(inside)}
    return out


def _read_distribution(site, entry, seen, errors):
    """One distribution's record, from its metadata folder ``entry`` in ``site``; None for
    a flat .egg-info file (distutils: a name only) or metadata without a name."""
    meta_dir = os.path.join(site, entry)
    if not os.path.isdir(meta_dir):
        return None
    fields = meta_fields_of(meta_dir)
    name = fields.get("name")
    if not name:
        errors.append("no Name in %s" % meta_dir)
        return None
    rels, files_from = file_list(site, meta_dir)
    cname = canonical(name)
    inside, outside, missing = _dist_files(site, meta_dir, rels or [], cname, seen)
    kind, url, editable = direct_url_info(meta_dir)
    modified, missing_paths = record_check(site, meta_dir, seen.hashes)
    package = seen.dpkg_owners.get(meta_dir)
    if package and files_from != "RECORD":
        modified = dpkg_check(site, inside, package, seen)
    installer = read_text(os.path.join(meta_dir, "INSTALLER"))
    return {
        "dpkg": package,
        "name": cname,
        "version": fields.get("version"),
        "installer": installer.strip() if installer else None,
        "requested": os.path.exists(os.path.join(meta_dir, "REQUESTED")),
        "direct_url": url,
        "direct_url_kind": kind,
        "editable": editable,
        "location": site,
        "metadata_dir": entry,
        "files_from": files_from,
        "files": len(inside),
        "missing_files": missing,
        "modified": modified,
        "missing_paths": missing_paths,
        "digest": digest_pairs(inside),
        "module_digest": digest_pairs(module_pairs(inside, entry)),
        "module_files": len(module_pairs(inside, entry)),
        "scripts": sorted(p for p, _ in outside),
        "scripts_digest": digest_pairs(outside) if outside else None,
    }


def scan_distributions(sites, errors, dpkg_owners=None, admindir=None):
    dists = []
    seen = _Seen()
    seen.dpkg_owners = dpkg_owners or {}
    seen.dpkg_admindir = admindir or DPKG_ADMINDIR
    seen_names = set()
    for site in sites:
        try:
            entries = sorted(os.listdir(site))
        except OSError as exc:
            errors.append("cannot list %s: %s" % (site, exc))
            continue
        for entry in entries:
            if not entry.endswith(META_SUFFIXES):
                continue
            dist = _read_distribution(site, entry, seen, errors)
            if dist is None:
                continue
            dist["shadowed"] = dist["name"] in seen_names
            seen_names.add(dist["name"])
            dists.append(dist)
    return dists, seen


def scan_unowned(sites, owned, hashes, dpkg_owners):
    out = []
    for site in sites:
        for root, dirs, files in os.walk(site):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not
                             (root == site and d.endswith(META_SUFFIXES)))
            for f in sorted(files):
                path = os.path.join(root, f)
                if path in owned or f.endswith((".pyc", ".pyo")):
                    continue
                if path not in hashes:
                    hashes[path] = file_digest(path)
                if hashes[path] is None:
                    continue
                entry = {"site": site, "path": os.path.relpath(path, site).replace(os.sep, "/"),
                         "sha256": hashes[path]}
                if path in dpkg_owners:
                    entry["dpkg"] = dpkg_owners[path]
                out.append(entry)
    return out


#: At most this many files of a venv's own are listed (``truncated`` says when cut).
VENV_MAX_FILES = 5000


def venv_config(prefix):
    """``pyvenv.cfg``'s ``key = value`` lines, and what made the venv from its keys:
    ``uv 0.13.9``, ``virtualenv 20.29.1`` (poetry, pipenv and hatch make theirs with
    virtualenv) or ``venv`` (Python's own module)."""
    keys = {}
    for line in (read_text(os.path.join(prefix, "pyvenv.cfg")) or "").splitlines():
        key, eq, value = line.partition("=")
        if eq:
            keys[key.strip()] = value.strip()
    for tool in ("uv", "virtualenv"):
        if tool in keys:
            return keys, "%s %s" % (tool, keys[tool])
    return keys, "venv"


def scan_venv(sites, owners):
    """The interpreter's venv (``sys.prefix`` with a ``pyvenv.cfg``): what made it, its
    ``pyvenv.cfg`` by key, and every other file of it outside the site directories that no
    distribution's RECORD lists, by path relative to the prefix; None when the interpreter
    is not a venv's."""
    prefix = sys.prefix
    if prefix == getattr(sys, "base_prefix", prefix) or not os.path.isfile(
            os.path.join(prefix, "pyvenv.cfg")):
        return None
    site_reals = set(os.path.realpath(s) for s in sites)
    files = {}
    truncated = False
    for root, dirs, names in os.walk(prefix):
        keep = []
        for d in sorted(dirs):
            path = os.path.join(root, d)
            if os.path.islink(path):
                names.append(d)  # a link to a folder (``lib64 -> lib``) is compared as one
            elif d != "__pycache__" and os.path.realpath(path) not in site_reals:
                keep.append(d)
        dirs[:] = keep
        for name in sorted(names):
            path = os.path.join(root, name)
            if path in owners or name.endswith((".pyc", ".pyo")) or (
                    root == prefix and name == "pyvenv.cfg"):
                continue
            if len(files) >= VENV_MAX_FILES:
                truncated = True
                break
            digest = file_digest(path)
            if digest is not None:
                files[os.path.relpath(path, prefix).replace(os.sep, "/")] = digest
        if truncated:
            break
    cfg, tool = venv_config(prefix)
    return {"prefix": prefix, "tool": tool, "cfg": cfg, "files": files,
            "truncated": truncated}


def scan_native(roots, where, seen, skip_dirs=()):
    out = []
    for base in roots:
        if not os.path.isdir(base):
            continue
        for root, dirs, files in os.walk(base):
            dirs[:] = sorted(d for d in dirs if d not in skip_dirs and not (
                where == "workdir" and is_environment(os.path.join(root, d))))
            for f in sorted(files):
                if not is_native(f):
                    continue
                path = os.path.join(root, f)
                hashes = seen.hashes
                if path not in hashes:
                    hashes[path] = file_digest(path)
                digest = hashes[path]
                if digest is None:
                    continue
                entry = {"path": path, "where": where, "owner": seen.owners.get(path)}
                if path in seen.dpkg_owners:
                    entry["dpkg"] = seen.dpkg_owners[path]
                if digest.startswith("symlink:"):
                    entry["symlink"] = digest[len("symlink:"):]
                    entry["sha256"] = None
                    entry["size"] = None
                else:
                    entry["sha256"] = digest
                    entry["size"] = os.path.getsize(path)
                    if path not in seen.code_hashes:
                        seen.code_hashes[path] = elf_code_digest(path)
                    entry["code_sha256"] = seen.code_hashes[path]
                out.append(entry)
    return out


def dpkg_owners(admindir, roots):
    """{absolute path: Debian package} for every path a package's file list
    (``<admindir>/info/<package>.list``, what ``dpkg -S`` reads) places at or under one of
    ``roots``; {} where there is no dpkg database. Read once: one pass over the lists."""
    info = os.path.join(admindir, "info")
    try:
        names = sorted(os.listdir(info))
    except OSError:
        return {}
    prefixes = set()
    for root in roots:
        for variant in (os.path.abspath(root), os.path.realpath(root)):
            prefixes.add(variant.rstrip("/") + "/")
    prefixes = tuple(sorted(prefixes))
    owners = {}
    for fname in names:
        if not fname.endswith(".list"):
            continue
        package = fname[:-len(".list")]
        for line in (read_text(os.path.join(info, fname)) or "").splitlines():
            if line.startswith(prefixes) or line + "/" in prefixes:
                owners.setdefault(line, package)
    return owners


def dpkg_check(site, inside, package, seen):
    """A Debian package's files (``inside``: (path relative to ``site``, digest)) whose md5
    differs from the package's ``md5sums``: edited after apt installed them. Sorted."""
    text = read_text(os.path.join(seen.dpkg_admindir, "info", package + ".md5sums")) or ""
    sums = {}
    for line in text.splitlines():
        md5, _, rel = line.partition("  ")
        if rel:
            sums["/" + rel.strip()] = md5.strip()
    modified = []
    for rel, _digest in sorted(inside):
        path = os.path.join(site, rel)
        want = sums.get(path)
        if want is None or os.path.islink(path):
            continue
        h = hashlib.md5()
        try:
            with open(path, "rb") as fh:
                for chunk in iter(lambda: fh.read(BUF), b""):
                    h.update(chunk)
        except OSError:
            continue
        if h.hexdigest() != want:
            modified.append({"path": rel, "dpkg_md5": want, "sha256": seen.hashes.get(path)
                             or sha256_file(path)})
    return modified


def dpkg_packages(errors):
    try:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f", "${db:Status-Abbrev}\t${Package}\t${Architecture}\t"
             "${Version}\n"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
        )
    except OSError:
        return None
    if proc.returncode != 0:
        errors.append("dpkg-query failed: %s" % proc.stderr.strip()[-300:])
        return None
    rows = []
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) != 4 or not parts[0].startswith(("ii", "hi")):
            continue
        rows.append((parts[1], parts[2], parts[3]))
    counts = {}
    for name, _arch, _v in rows:
        counts[name] = counts.get(name, 0) + 1
    packages = {}
    for name, arch, version in rows:
        packages[name if counts[name] == 1 else "%s:%s" % (name, arch)] = version
    return packages


USAGE = ("usage: fingerprint.py [--workdir DIR] [--dpkg-admindir DIR] [--skip-dirs NAME,...] "
         "[--files NAME,...]\n")


def main(argv):
    opts = {"--workdir": "/workspace", "--dpkg-admindir": DPKG_ADMINDIR, "--files": None,
            "--skip-dirs": "__pycache__"}
    args = list(argv)
    while args:
        arg = args.pop(0)
        key, eq, value = arg.partition("=")
        if key in opts and (eq or args):
            opts[key] = value if eq else args.pop(0)
        else:
            sys.stderr.write(USAGE)
            return 2
    if opts["--files"] is not None:
        names = [n for n in opts["--files"].split(",") if n]
        result = {"format": FORMAT, "files": list_files(site_dirs(), names)}
        sys.stdout.write(json.dumps(result, indent=1, sort_keys=True) + "\n")
        return 0
    workdir = opts["--workdir"]
    started = time.time()
    errors = []
    sites = site_dirs()
    owners = dpkg_owners(opts["--dpkg-admindir"], sites)
    dists, seen = scan_distributions(sites, errors, owners, opts["--dpkg-admindir"])
    unowned = scan_unowned(sites, seen.owned, seen.hashes, owners)
    native = scan_native(sites, "site", seen, skip_dirs=("__pycache__",))
    if os.path.isdir(workdir) and not any(
            os.path.realpath(workdir) == os.path.realpath(s) for s in sites):
        native += scan_native([workdir], "workdir", seen, skip_dirs=(".git", "__pycache__"))
    dists.sort(key=lambda d: (d["name"], d["shadowed"], d["location"]))
    tree, cut = workspace_tree(workdir, tuple(n for n in opts["--skip-dirs"].split(",") if n))
    venv = scan_venv(sites, seen.owners)
    result = {
        "format": FORMAT,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "prefix": sys.prefix,
            "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        },
        "platform": {"machine": platform.machine(), "system": platform.system()},
        "glibc": glibc_version(),
        "site_dirs": sites,
        "workdir": {"path": workdir, "exists": os.path.isdir(workdir)},
        "workspace": {"files": tree, "truncated": cut},
        "environment": code_environment(),
        "distributions": dists,
        "unowned": unowned,
        "venv": venv,
        "native": sorted(native, key=lambda n: n["path"]),
        "dpkg": dpkg_packages(errors),
        "errors": errors,
        "stats": {
            "files_hashed": _stats["files_hashed"],
            "bytes_hashed": _stats["bytes_hashed"],
            "seconds": round(time.time() - started, 3),
        },
    }
    sys.stdout.write(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
