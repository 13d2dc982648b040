"""Unpack the interpreters of managed-python.lock at their paths, each from its archive.

Usage: python3 install-managed-python.py LOCK [ARCHIVE_DIR]

Each line of LOCK is ``SHA256 URL PREFIX [LINK...]``: a python-build-standalone archive
(the builds uv downloads). It is taken from ARCHIVE_DIR by its file name when given (an
offline bundle's vendor/python), otherwise fetched from URL (http(s) or file://;
SYNTH_PYTHON_MIRROR="OLD=NEW" fetches what starts with OLD from NEW instead), and checked
against SHA256: a mismatch stops it (exit 1) before anything is unpacked. The archive's
``python/`` folder becomes PREFIX (which must not exist yet) and each LINK a symbolic link
to PREFIX, as uv makes them; a LINK written PATH=TARGET is a symbolic link to TARGET, a
file in PREFIX (uv's ``~/.local/bin/python3.11``). Members that would land outside PREFIX,
devices, and links out of it, in the archive or the lock, stop it too. Standard library
only: it runs under the base image's python3.
"""

import hashlib
import os
import posixpath
import shutil
import ssl
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request


def die(message):
    sys.stderr.write("install-managed-python: " + message + "\n")
    sys.exit(1)


def read_lock(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            words = raw.split()
            if not words or words[0].startswith("#"):
                continue
            if len(words) < 3 or len(words[0]) != 64 or not words[2].startswith("/"):
                die("not a line SHA256 URL PREFIX [LINK...]: " + raw.strip()[:300])
            for link in words[3:]:
                check_link(link, words[2], words[3:])
            out.append((words[0], words[1], words[2], words[3:]))
    return out


def check_link(link, prefix, links):
    """A LINK is an absolute path; PATH=TARGET's TARGET a file in PREFIX or under a LINK."""
    path, is_file_link, target = link.partition("=")
    if not path.startswith("/"):
        die("not an absolute path: " + path)
    if is_file_link:
        to = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if not any(inside(home, to) and to != home
                   for home in [prefix] + [w for w in links if "=" not in w]):
            die("link out of the interpreter: " + path + " -> " + target)


def mirrored(url):
    old, _, new = os.environ.get("SYNTH_PYTHON_MIRROR", "").partition("=")
    return new + url[len(old):] if old and new and url.startswith(old) else url


def fetch(url, sha256, archive_dir, dest):
    name = urllib.parse.unquote(url.rstrip("/").rsplit("/", 1)[-1])
    local = os.path.join(archive_dir, name) if archive_dir else None
    digest = hashlib.sha256()
    with open(dest, "wb") as out:
        if local and os.path.isfile(local):
            src = open(local, "rb")
        elif archive_dir:
            die(name + " is not in " + archive_dir)
        else:
            context = ssl.create_default_context(cafile=os.environ.get("SSL_CERT_FILE"))
            src = urllib.request.urlopen(mirrored(url), timeout=300, context=context)
        with src:
            while True:
                chunk = src.read(1 << 20)
                if not chunk:
                    break
                digest.update(chunk)
                out.write(chunk)
    if digest.hexdigest() != sha256:
        die(name + " does not match its sha256 in the lock (" + digest.hexdigest()
            + " != " + sha256 + ")")


def inside(root, path):
    return path == root or path.startswith(root.rstrip("/") + "/")


def unpack(archive, prefix):
    if os.path.lexists(prefix):
        die(prefix + " exists already")
    parent = os.path.dirname(prefix)
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".synth-python-", dir=parent)
    top = os.path.join(staging, "python")
    with tarfile.open(archive, "r:*") as tar:
        members = []
        for m in tar.getmembers():
            name = posixpath.normpath(m.name)
            if not inside("python", name) or name.startswith("/"):
                continue  # a build's other top folders (licenses) are not the interpreter
            if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
                die("unexpected member " + m.name)
            dest = posixpath.normpath(posixpath.join(top, name[len("python"):].lstrip("/")))
            if m.issym():
                target = posixpath.normpath(posixpath.join(posixpath.dirname(dest), m.linkname))
                if not inside(top, target):
                    die("link out of the interpreter: " + m.name + " -> " + m.linkname)
            if m.islnk() and not inside("python", posixpath.normpath(m.linkname)):
                die("hard link out of the interpreter: " + m.name)
            m.mode &= 0o755
            members.append(m)
        tar.extractall(staging, members=members)
    os.rename(top, prefix)
    shutil.rmtree(staging)


def main(argv):
    if len(argv) not in (2, 3):
        die("usage: install-managed-python.py LOCK [ARCHIVE_DIR]")
    archive_dir = argv[2] if len(argv) == 3 else None
    for sha256, url, prefix, links in read_lock(argv[1]):
        with tempfile.TemporaryDirectory() as tmp:
            archive = os.path.join(tmp, "python.tar")
            fetch(url, sha256, archive_dir, archive)
            unpack(archive, prefix)
        for link in links:
            path, is_file_link, target = link.partition("=")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            os.symlink(target if is_file_link else prefix, path)
        print("unpacked", prefix, "from", url)


if __name__ == "__main__":
    main(sys.argv)
