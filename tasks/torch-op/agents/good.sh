# torch-op: a clean setup. Each top-level statement runs as its own `bash -c` in /workspace.
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends g++ python3-dev
python3 -m venv /opt/venv
# the CPU torch from the wheelhouse; its dependencies from the index
/opt/venv/bin/pip install --find-links /synth/wheelhouse torch==2.13.0+cpu ninja
# setup.py imports torch: build without isolation, against the torch just installed
cd /workspace && export MAX_JOBS=2 && /opt/venv/bin/pip install --no-build-isolation /workspace
/opt/venv/bin/python scripts/check_op.py
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/opt/venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": "2.13.0+cpu",
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "venv",
  "env_name": "/opt/venv",
  "notes": "torchop._C built as a CppExtension (no nvcc here) against torch 2.13.0+cpu; scripts/check_op.py passes."
}
JSON
