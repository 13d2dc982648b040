# optional-extras: a clean setup. Each top-level statement runs as its own `bash -c` in /workspace.
python3 -m venv /opt/venv
# The extras (h5py, matplotlib, flask, wandb) are not needed by run.py: leave them out.
/opt/venv/bin/pip install -r requirements.txt
/opt/venv/bin/python run.py --n 200
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
  "notes": "requirements.txt (attrs) only; the io/viz extras, the flask demo and the wandb sweep are optional."
}
JSON
