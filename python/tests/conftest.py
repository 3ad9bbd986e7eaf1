"""The suite runs host arrays on the simulator (its oracles are numpy and exact arithmetic;
scripts/gpu-python is the GPU half), unless TILEC_BACKEND says otherwise: TILEC_BACKEND=cuda
runs the same checks on a GPU. Tests of the backend's choice itself run in subprocesses
with an environment of their own (test_api.py)."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

os.environ.setdefault("TILEC_BACKEND", "sim")

import tilec  # noqa: E402 (after TILEC_BACKEND is set)

LIB = os.environ.get("TILEC_LIB") or tilec.library_path


def run_py(code, **env):
    """code in a fresh interpreter (a fresh warning state and contexts), TILEC_BACKEND unset
    unless env sets it; env values of None unset the variable."""
    e = dict(os.environ, TILEC_LIB=LIB, PYTHONPATH=os.path.join(ROOT, "python"),
             TILEC_CACHE="off", PYTHONDONTWRITEBYTECODE="1")
    e.pop("TILEC_BACKEND", None)
    for k, v in env.items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout
