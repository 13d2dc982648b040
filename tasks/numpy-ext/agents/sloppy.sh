# numpy-ext: how agents really work — looking around, false starts, and a fix in the end.
ls -la
cat README.md requirements.txt pyproject.toml setup.py
python3 --version && which python3 pip3 gcc
pip3 install -r requirements.txt
python3 -m venv /opt/venv
/opt/venv/bin/pip install numpy==2.99.0
/opt/venv/bin/pip install "numpy<2"
/opt/venv/bin/python -c 'import numpy; print(numpy.__version__)'
cd /workspace && /opt/venv/bin/pip install .
apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y build-essential python3-dev
/opt/venv/bin/pip install cython
cd /workspace && /opt/venv/bin/pip install .
/opt/venv/bin/pip list
/opt/venv/bin/python -c 'import fastops; print(fastops.row_norms)'
/opt/venv/bin/pip uninstall -y cython fastops
/opt/venv/bin/pip install --upgrade "numpy>=2" setuptools wheel
# the isolated build left build/ behind, compiled against numpy 1.x: start the build afresh
cd /workspace && rm -rf build src/fastops.egg-info && export CFLAGS="-O2 -g0" && /opt/venv/bin/pip install --no-build-isolation -v .
/opt/venv/bin/python -c 'import fastops, numpy; print(fastops.__file__, numpy.__version__)'
cd /workspace/scripts && /opt/venv/bin/python selftest.py
cat > /synth/claims.json <<'EOF2'
{
  "python_path": "/opt/venv/bin/python",
  "python_version": "3.11.2",
  "torch_version": null,
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "venv",
  "env_name": "/opt/venv",
  "notes": "needed build-essential + python3-dev; rebuilt fastops without build isolation against numpy 2.x after the isolated build picked numpy 1.x."
}
EOF2
