# mixed-frameworks: a clean setup. Each top-level statement runs as its own `bash -c`.
python3 -m venv /opt/venv
# One resolve for everything: the CPU torch from the wheelhouse (the index's default torch is
# the multi-GB CUDA build), and jax 0.7.1, the newest jax that accepts numpy<2.
/opt/venv/bin/pip install --find-links /synth/wheelhouse -r requirements.txt torch==2.13.0+cpu "jax[cpu]==0.7.1"
/opt/venv/bin/python check_parity.py --steps 100
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
