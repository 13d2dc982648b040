# numpy-ext: a clean setup. Each top-level statement runs as its own `bash -c` in /workspace.
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends gcc libc6-dev python3-dev
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r requirements.txt setuptools wheel
# Build against the numpy just installed, not the numpy 1.x of an isolated build env.
/opt/venv/bin/pip install --no-build-isolation /workspace
/opt/venv/bin/python scripts/selftest.py
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/opt/venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": null,
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "venv",
  "env_name": "/opt/venv",
  "notes": "fastops._ext built with gcc against numpy 2.x (pip install --no-build-isolation); scripts/selftest.py passes on CPU."
}
JSON
