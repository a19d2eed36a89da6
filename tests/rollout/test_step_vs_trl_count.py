"""benchmarks/step_vs_trl.py's matmul accounting: the FLOPs it reports for a step are those of the
step's matrix multiplies, no more (element-wise ops carry FLOP counts in torch.profiler too)."""

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("trl")  # the benchmark exits without its extra

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "step_vs_trl.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("step_vs_trl", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["step_vs_trl"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    yield module
    del sys.modules["step_vs_trl"]


def test_counts_the_matrix_multiplies_of_a_forward_and_backward(bench):
    layer = torch.nn.Linear(128, 48, bias=False)
    x = torch.randn(16, 10, 128, requires_grad=True)
    counter = bench.MatmulCounter()
    counter.start()
    y = torch.nn.functional.silu(layer(x)) * 3.0 + 1.0  # element-wise work the count must leave out
    y.sum().backward()
    count = counter.stop()
    rows = 16 * 10
    one = 2 * rows * 128 * 48  # forward: [160, 128] x [128, 48]
    assert count.gflop * 1e9 == pytest.approx(3 * one)  # forward, grad of the input, grad of the weight
    assert count.calls == 3
    assert count.self_s > 0


def test_floor_lines_follow_from_the_counts(bench, capsys):
    summary = {
        "matmul_per_step": {
            "rlvr": {"gflop": 20.0, "calls": 10, "self_s": 0.4},
            "trl": {"gflop": 40.0, "calls": 5, "self_s": 0.7},
        },
        "gemm_peak_gflops": 50.0,
        "sides": {"rlvr": {"median_s": 1.0}, "trl": {"median_s": 1.2}},
    }
    bench.print_matmul_floor(summary)
    out = capsys.readouterr().out
    assert "rlvr 20.0 GFLOP in 10 calls, TRL 40.0 GFLOP in 5 calls (rlvr/TRL 0.50)" in out
    assert "take rlvr 0.400 s, TRL 0.800 s per step" in out  # 20 / 50, 40 / 50
    assert "at most 0.600 s (TRL median / 2), of which its matmul floor is 67%" in out
    assert "the rest of rlvr's step now takes 0.600 s" in out


def test_gemm_rate_is_measured(bench):
    assert 0.1 < bench.gemm_peak_gflops(rounds=1) < 10_000
