# mixed-frameworks: the clean setup, checked — then a later install replaces jax 0.7.1 with
# 0.7.0 (it still runs the code), and the claims still report the version first installed.
python3 -m venv /opt/venv
/opt/venv/bin/pip install --find-links /synth/wheelhouse -r requirements.txt torch==2.13.0+cpu "jax[cpu]==0.7.1"
/opt/venv/bin/python check_parity.py --steps 100
# "the paper used jax 0.7.0": numpy 1.26 and ml_dtypes already satisfy it, so pip changes
# only jax and jaxlib
/opt/venv/bin/pip install "jax[cpu]==0.7.0"
/opt/venv/bin/python check_parity.py --steps 20
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
  "notes": "torch 2.13.0+cpu and jax 0.7.1 (CPU) with numpy 1.26; check_parity.py passes."
}
JSON
