"""A host folder served over HTTP to containers, while a block runs.

For what a session's container and an artifact's build fetch from the host (a task's own
conda channel, a mirror of an interpreter's archive): the engine's containers reach the host
at :meth:`~synth.engine.base.Engine.host_address`. Read-only, one folder, in a thread.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serve_folder(root: Path, host: str) -> Iterator[str]:
    """Serve ``root`` at ``http://host:<a free port>`` (the address yielded) while the block
    runs."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass
