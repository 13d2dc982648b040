# uv-project: a clean setup with the project's own tool. Each top-level statement runs as its
# own `bash -c` in /workspace. uv is not in the base: pip puts it in a venv of its own.
python3 -m venv /opt/uv && /opt/uv/bin/pip install uv==0.13.9
# The project's .venv, exactly as uv.lock pins it, with the yaml extra report.py needs.
/opt/uv/bin/uv sync --frozen --extra yaml --python /usr/bin/python3
.venv/bin/python report.py runs/metrics.yaml
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/workspace/.venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": null,
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "uv",
  "env_name": "/workspace/.venv",
  "notes": "uv sync --frozen --extra yaml from the project's uv.lock; report.py passes."
}
JSON
