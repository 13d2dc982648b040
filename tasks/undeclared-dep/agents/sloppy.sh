# undeclared-dep: how agents really work — a failing first run, a wrong guess, a fix.
ls -la && cat requirements.txt README.md
head -30 train.py
python3 -m venv /opt/venv
cd /workspace && /opt/venv/bin/pip install -r requirements.txt
/opt/venv/bin/python train.py --config configs/tiny.yaml --logdir /tmp/tinynet-runs --steps 50
/opt/venv/bin/pip install tensorbaordx
/opt/venv/bin/pip install tensorboard
/opt/venv/bin/python -c 'import tensorboardX'
/opt/venv/bin/pip uninstall -y tensorboard
/opt/venv/bin/pip install "tensorboardX==2.5"
/opt/venv/bin/pip install --upgrade tensorboardX
/opt/venv/bin/pip list 2>/dev/null | grep -i -E "tensorboard|protobuf|numpy"
/opt/venv/bin/python -c 'import wandb' || echo "wandb is optional (try/except ImportError)"
cd /tmp && export TINYNET_LOGDIR=/tmp/tinynet-runs && /opt/venv/bin/python /workspace/train.py --config /workspace/configs/tiny.yaml --logdir "$TINYNET_LOGDIR" --steps 100
echo 'export TINYNET_LOGDIR=/tmp/tinynet-runs' >> ~/.bashrc
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
  "notes": "train.py needs tensorboardX, which requirements.txt omits; wandb left out (optional)."
}
JSON
