# uv-project: a sync without the extra, a failing first run, pyyaml added by hand with
# `uv pip` at an old version, then the extra synced and the report run through `uv run`.
ls -la && cat pyproject.toml
python3 -m venv /opt/uv && /opt/uv/bin/pip install uv==0.13.9
/opt/uv/bin/uv --version
/opt/uv/bin/uv sync --python /usr/bin/python3
.venv/bin/python report.py runs/metrics.yaml
/opt/uv/bin/uv pip install --python .venv/bin/python pyyaml==6.0.1
cd /workspace && /opt/uv/bin/uv sync --extra yaml && /opt/uv/bin/uv run --extra yaml python report.py runs/metrics.yaml
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
  "notes": "uv sync, then pyyaml by hand, then uv sync --extra yaml; report.py passes."
}
JSON
