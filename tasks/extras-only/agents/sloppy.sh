# extras-only: a first run that fails, a pin by hand, an upgrade.
ls -la && cat pyproject.toml
python3 -m venv /opt/venv
/opt/venv/bin/pip install .
/opt/venv/bin/python report.py configs/run.yaml
/opt/venv/bin/pip install pyyaml==6.0.1
/opt/venv/bin/pip install --upgrade pyyaml
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
  "notes": "pip install . then pyyaml by hand; report.py passes."
}
JSON
