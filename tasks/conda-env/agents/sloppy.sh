# conda-env, as agents really work: looks around, finds no conda, asks the channel for a
# python it lacks, makes the environment without tinylib, runs the fit (it fails), adds
# tinylib to the same environment, replaces the six it pinned first.
ls /workspace && cat /workspace/README.md
conda --version
python3 -m pip install --break-system-packages --target /tmp/rattler py-rattler==0.28.0
PYTHONPATH=/tmp/rattler python3 /workspace/make_env.py @CONDA_CHANNEL@ /opt/conda/envs/research python=3.12 pip
PYTHONPATH=/tmp/rattler python3 /workspace/make_env.py @CONDA_CHANNEL@ /opt/conda/envs/research python=3.11 pip
/opt/conda/envs/research/bin/pip install six==1.16.0
cd /workspace && /opt/conda/envs/research/bin/python -c "import doubling"
PYTHONPATH=/tmp/rattler python3 /workspace/make_env.py @CONDA_CHANNEL@ /opt/conda/envs/research python=3.11 tinylib pip
/opt/conda/envs/research/bin/pip install --upgrade six==1.17.0
/opt/conda/envs/research/bin/pip list
rm -rf /tmp/rattler /tmp/rattler-cache
cd /workspace && export PYTHONDONTWRITEBYTECODE=1 && /opt/conda/envs/research/bin/python fit.py
cat > /synth/claims.json <<'JSON'
{
  "python_path": "/opt/conda/envs/research/bin/python",
  "python_version": "3.11",
  "torch_version": null,
  "cuda_available": false,
  "gpu_count": 0,
  "ddp_expected_ok": false,
  "env_tool": "conda",
  "env_name": "research",
  "notes": "conda env research made twice over (tinylib added later), six 1.16 then 1.17; fit.py passes."
}
JSON
