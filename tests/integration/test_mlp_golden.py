"""tests/unit/worker/train/mlp_golden.inc (the real PyTorch's outputs that
tests/unit/worker/train/mlp_golden_test.cpp compares tzrec_train's MLP with) is what
mlp_golden.py computes with the venv's torch now: same names and flags, numbers within 1e-6.
"""
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(os.environ.get("TZRUN_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
HERE = ROOT / "tests" / "unit" / "worker" / "train"
NUMBER = re.compile(r"^-?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$", re.I)


def tokens(text):
    body = [line for line in text.splitlines() if not line.startswith("//")]
    return re.findall(r'"[^"]*"|[^\s{},"]+', "\n".join(body))


def test_committed_golden_values_match_torch():
    fresh = subprocess.run([sys.executable, str(HERE / "mlp_golden.py")], check=True,
                           capture_output=True, text=True).stdout
    committed = (HERE / "mlp_golden.inc").read_text()
    a, b = tokens(fresh), tokens(committed)
    assert len(a) == len(b), "regenerate: mlp_golden.py > mlp_golden.inc"
    for x, y in zip(a, b):
        if NUMBER.match(x) and NUMBER.match(y):
            assert abs(float(x) - float(y)) <= 1e-6 + 1e-6 * abs(float(y)), (x, y)
        else:
            assert x == y
