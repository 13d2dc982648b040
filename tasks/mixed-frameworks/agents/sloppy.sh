# mixed-frameworks: how agents really work — one framework at a time, and numpy in between.
ls -la && cat requirements.txt README.md
python3 -m venv /opt/venv
/opt/venv/bin/pip install "torch==2.13.0+cpu"
/opt/venv/bin/pip install --find-links /synth/wheelhouse "torch==2.13.0+cpu"
/opt/venv/bin/pip install "jax[cpu]==0.10.2" -r requirements.txt
/opt/venv/bin/pip install "jax[cpu]==0.7.1" einops
/opt/venv/bin/pip list 2>/dev/null | grep -i -E "^(torch|jax|jaxlib|numpy|scipy) "
cd /workspace && /opt/venv/bin/python check_parity.py --steps 20
/opt/venv/bin/pip install "numpy>=1.24,<2"
/opt/venv/bin/pip uninstall -y einops
/opt/venv/bin/pip check
/opt/venv/bin/pip install "ml_dtypes<0.6" && /opt/venv/bin/pip check
cd /workspace && export JAX_PLATFORMS=cpu OMP_NUM_THREADS=2 && /opt/venv/bin/python check_parity.py --steps 100
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/opt/venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": "2.13.0+cpu",
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "venv",
  "env_name": "/opt/venv",
  "jax_version": "0.7.1",
  "notes": "newest jax needs numpy>=2 but parity/metrics.py needs numpy<2: jax 0.7.1 with numpy 1.26."
}
JSON
