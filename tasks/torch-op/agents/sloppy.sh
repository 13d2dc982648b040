# torch-op: how agents really work — no GPU, an isolated build without torch, missing tools.
ls -la && cat README.md setup.py pyproject.toml
nvidia-smi
python3 -m venv /opt/venv
/opt/venv/bin/pip install --find-links /synth/wheelhouse torch==2.13.1+cpu
ls /synth/wheelhouse
/opt/venv/bin/pip install --find-links /synth/wheelhouse torch==2.13.0+cpu
/opt/venv/bin/python -c 'import torch; print(torch.__version__, torch.cuda.is_available())'
cd /workspace && /opt/venv/bin/pip install .
/opt/venv/bin/pip install "setuptools<70" pybind11
cd /workspace && /opt/venv/bin/pip install --no-build-isolation .
apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential python3-dev
/opt/venv/bin/pip uninstall -y pybind11
/opt/venv/bin/pip install --upgrade "setuptools>=77" ninja
/opt/venv/bin/pip list 2>/dev/null | grep -i -E "torch|setuptools|ninja"
cd /workspace && export MAX_JOBS=2 TORCHOP_CPU_ONLY=1 && /opt/venv/bin/pip install --no-build-isolation -v .
/opt/venv/bin/python -c 'import torchop; print(torchop.has_cuda())'
cd /workspace/scripts && /opt/venv/bin/python check_op.py
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
  "notes": "no GPU on this machine; torchop built CPU-only with --no-build-isolation after the isolated build could not import torch."
}
JSON
