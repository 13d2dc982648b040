# conda-only: a clean setup without conda. Each top-level statement runs as its own `bash -c`.
# environment.yml mapped by hand: graphviz (the dot program) -> apt graphviz;
# python=3.11 -> Debian's python3 3.11 in a venv; numpy=1.26 -> numpy==1.26.*;
# msgpack-python -> msgpack; python-graphviz -> graphviz (the Python bindings).
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends graphviz
python3 -m venv /opt/venv
/opt/venv/bin/pip install "numpy==1.26.*" "scipy>=1.11" pyyaml msgpack graphviz
/opt/venv/bin/python fit.py --config configs/damped.yaml --out /tmp/oscfit-results
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
  "notes": "no conda: environment.yml mapped to apt graphviz and pip numpy==1.26.*, scipy, pyyaml, msgpack, graphviz; fit.py passes."
}
JSON
