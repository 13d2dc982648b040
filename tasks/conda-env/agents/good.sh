# conda-env: conda create -n research python=3.11 tinylib pip (py-rattler is the installer:
# no conda here), pip install six inside, the fit run under the environment's python.
python3 -m pip install --break-system-packages --target /tmp/rattler py-rattler==0.28.0
PYTHONPATH=/tmp/rattler python3 /workspace/make_env.py @CONDA_CHANNEL@ /opt/conda/envs/research python=3.11 tinylib pip
rm -rf /tmp/rattler /tmp/rattler-cache
/opt/conda/envs/research/bin/pip install six==1.17.0
cd / && /opt/conda/envs/research/bin/python /workspace/fit.py
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
  "notes": "conda env research from the task's channel (python, tinylib, pip), six by pip; fit.py passes."
}
JSON
