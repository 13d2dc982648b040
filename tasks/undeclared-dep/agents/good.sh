# undeclared-dep: a clean setup. Each top-level statement runs as its own `bash -c` in /workspace.
python3 -m venv /opt/venv
# train.py imports tensorboardX at module top; requirements.txt does not list it
/opt/venv/bin/pip install -r requirements.txt tensorboardX
/opt/venv/bin/python train.py --config configs/tiny.yaml --logdir /tmp/tinynet-runs --steps 100
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
  "notes": "requirements.txt plus the undeclared tensorboardX; train.py trains on CPU."
}
JSON
