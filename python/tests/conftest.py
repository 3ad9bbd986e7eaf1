"""The suite runs host arrays on the simulator (its oracles are numpy and exact arithmetic;
scripts/gpu-python is the GPU half), unless TILEC_BACKEND says otherwise: TILEC_BACKEND=cuda
runs the same checks on a GPU. Tests of the backend's choice itself run in subprocesses
with an environment of their own (test_api.py)."""
import os

os.environ.setdefault("TILEC_BACKEND", "sim")
