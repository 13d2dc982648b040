# conda-only: how agents really work — no conda, a requirements file that is not one,
# numpy 2 where the code needs numpy 1.26, and a missing system program.
ls -la && cat environment.yml README.md
conda env create -f environment.yml
which conda mamba micromamba || echo "no conda on this machine"
python3 -m venv /opt/venv
/opt/venv/bin/pip install -r environment.yml
/opt/venv/bin/pip install numpy scipy pyyaml msgpack graphviz tqdm
cd /workspace && /opt/venv/bin/python fit.py --out /tmp/oscfit-results
/opt/venv/bin/pip install "numpy==1.26.*"
/opt/venv/bin/python -c 'import numpy, scipy; print(numpy.__version__, scipy.__version__)'
cd /workspace && /opt/venv/bin/python fit.py --out /tmp/oscfit-results
apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends graphviz
dot -V
/opt/venv/bin/pip uninstall -y tqdm
cd /tmp && export OSCFIT_OUT=/tmp/oscfit-results && /opt/venv/bin/python /workspace/fit.py --config /workspace/configs/damped.yaml --out "$OSCFIT_OUT"
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
  "notes": "conda is not available; used a venv with pip (numpy pinned to 1.26 as environment.yml says) and apt graphviz for dot."
}
JSON
