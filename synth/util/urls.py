"""URLs written into what synth publishes: never with the credentials a user gave."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def without_credentials(url: str) -> str:
    """``url`` without its userinfo (``https://user:token@host/x`` -> ``https://host/x``):
    an artifact names an index, a mirror or a repository, never how to log in to it.
    Credentials come at build time (a BuildKit secret holding a netrc, docs/export.md)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL (an unclosed IPv6 bracket): only what follows an @
        return url.rsplit("@", 1)[-1]
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))
