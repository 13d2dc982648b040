# optional-extras: how agents really work — looking around, an extra that will not install, an old pin.
ls -la && cat requirements.txt pyproject.toml
grep -rn "^import\|^from" --include=*.py . | head -40
python3 -m venv /opt/venv
/opt/venv/bin/pip install "attrs==23.1.0"
/opt/venv/bin/python -c 'import h5py' || echo "h5py is the io extra; run.py does not need it"
cd /workspace && /opt/venv/bin/python run.py --n 50
/opt/venv/bin/pip install --upgrade -r requirements.txt
/opt/venv/bin/pip list 2>/dev/null | grep -i attrs
cd /tmp && /opt/venv/bin/python /workspace/run.py --n 200
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
  "notes": "attrs upgraded from requirements.txt; extras left out."
}
JSON
