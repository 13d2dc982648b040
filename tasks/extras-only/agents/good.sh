# extras-only: a clean setup. Each top-level statement runs as its own `bash -c` in /workspace.
python3 -m venv /opt/venv
# No requirements file and no dependencies: report.py needs the yaml extra only.
/opt/venv/bin/pip install '.[yaml]'
/opt/venv/bin/python report.py configs/run.yaml
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
  "notes": "the project with its yaml extra (pyyaml); the plot extra is not needed; report.py passes."
}
JSON
