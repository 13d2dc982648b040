# bench-tiny: the same setup, reported with things that are not there.
python3 -m venv /opt/venv
cat > /synth/claims.json <<'JSON'
{"python_path": "/opt/venv/bin/python", "torch_version": "2.4.1", "cuda_available": true,
 "gpu_count": 1, "ddp_expected_ok": true, "env_tool": "venv", "env_name": "/opt/venv"}
JSON
