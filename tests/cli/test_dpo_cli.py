"""Commands built on advantages and a per-token loss refuse DPO with one line, not a traceback.
(`rlvr inspect` captures DPO steps too: tests/diagnostics/test_inspect_matches_train.py.)"""


def test_grad_variance_refuses_dpo(cli):
    done = cli("grad-variance", "--config", "configs/smoke.yaml", "--set", "algo.algorithm=dpo")
    assert done.returncode == 2, done.stderr
    assert "learns from preference pairs" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
