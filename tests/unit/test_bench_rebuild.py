"""bench/rebuild.py's pure part: step times from BuildKit's plain progress."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_rebuild", BENCH / "rebuild.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LOG = """#6 [2/4] RUN python3 -m venv /opt/venv
#6 DONE 2.5s
#7 [3/4] RUN --mount=type=secret,id=cacert  && /tmp/synth/uv/bin/uv pip install \
--no-config -r /tmp/synth/requirements.lock
#7 12.1 Installed 17 packages
#7 DONE 54.0s
#8 [4/4] COPY source/ /workspace/
#8 DONE 0.1s
"""


def test_step_times_and_install_seconds() -> None:
    mod = _module()
    times = mod.step_times(LOG)
    assert [round(t, 1) for _title, t in times] == [2.5, 54.0, 0.1]
    assert times[0][0] == "RUN python3 -m venv /opt/venv"
    assert mod.install_seconds(LOG) == 54.0
    pip = LOG.replace("/tmp/synth/uv/bin/uv pip install --no-config",
                      "/opt/venv/bin/python -m pip install --no-cache-dir --require-hashes")
    assert mod.install_seconds(pip) == 54.0
    assert mod.install_seconds("#1 [1/1] RUN true\n#1 DONE 1.0s\n") is None
