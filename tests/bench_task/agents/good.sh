# bench-tiny: a clean setup and a truthful report.
python3 -m venv /opt/venv
/opt/venv/bin/python hello.py
cat > /synth/claims.json <<'JSON'
{"python_path": "/opt/venv/bin/python", "torch_version": null, "cuda_available": false,
 "gpu_count": 0, "ddp_expected_ok": false, "env_tool": "venv", "env_name": "/opt/venv"}
JSON
