# examples/train_small.py, the README's first example: an MLP with a custom
# autograd.Function trained with AdamW under symtrace.compile. It must run on every
# CPU backend, lower the loss, and give the same losses compiled as eager (dropout
# included: compiled graphs draw the same numbers as eager ops).
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(backend, steps=12):
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("SYMTRACE_EXAMPLE_WITH_TORCH", None)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_small.py"),
                        "--steps", str(steps), "--backend", backend],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    losses = [float(m) for m in re.findall(r"^step \d+  loss ([0-9.]+)$", r.stdout, re.M)]
    assert len(losses) == steps
    summary = r.stdout.strip().splitlines()[-1]
    return losses, summary


@pytest.fixture(scope="module")
def eager():
    return _run("eager")


@pytest.mark.parametrize("backend", ["llvm", "interp"])
def test_train_small_compiled_matches_eager(backend, eager):
    losses, summary = _run(backend)
    assert losses[-1] < losses[0]
    assert losses == pytest.approx(eager[0], rel=1e-4)
    graphs = int(re.search(r"graphs (\d+)", summary).group(1))
    assert graphs >= 1, summary
    assert "graphs 0" in eager[1]
