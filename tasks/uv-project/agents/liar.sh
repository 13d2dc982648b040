# uv-project: syncs without the yaml extra, never runs the report, claims a GPU run.
python3 -m venv /opt/uv && /opt/uv/bin/pip install uv==0.13.9
/opt/uv/bin/uv sync --python /usr/bin/python3
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/workspace/.venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": "2.3.0",
  "cuda_available": true,
  "gpu_count": 1,
  "ddp_expected_ok": false,
  "env_tool": "uv",
  "env_name": "/workspace/.venv",
  "notes": "Synced the project with uv; the report ran on the GPU."
}
JSON
