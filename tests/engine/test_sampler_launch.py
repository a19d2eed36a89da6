"""The sampler process started early (engine/sampler_launch.py): `rlvr train` starts it before it
imports torch; the run takes it only for its own config and rank; one nobody takes ends with the
command instead of holding it open."""

import subprocess
import sys
import textwrap

from rlvr.config import load_config
from rlvr.engine import sampler_launch
from rlvr.engine.sampler_launch import start_early, take


def test_the_run_takes_the_early_process_only_for_its_own_config_and_rank():
    cfg = load_config(None, ["rollout.max_staleness=1"])
    started = []
    try:
        start_early(cfg)
        started.append(sampler_launch._EARLY[-1])
        assert take(load_config(None, ["rollout.max_staleness=2"]), 0) is None  # another run's: ended
        assert not started[0].process.is_alive() and sampler_launch._EARLY == []
        start_early(cfg)
        started.append(sampler_launch._EARLY[-1])
        assert take(cfg, 1) is None  # another rank's
        start_early(cfg)
        start_early(cfg)  # a second call for the same run starts nothing more
        assert len(sampler_launch._EARLY) == 1
        mine = take(cfg, 0)
        started.append(mine)
        assert mine is not None and mine.process.is_alive() and sampler_launch._EARLY == []
    finally:
        for launched in filter(None, started):
            launched.conn.close()
            launched.process.terminate()
            launched.process.join(timeout=10)


def test_a_synchronous_run_starts_no_process():
    start_early(load_config(None, []))
    assert sampler_launch._EARLY == []


def test_a_command_that_never_took_its_early_process_exits_without_waiting_for_it():
    # the process is not daemonic (its verifiers start processes of their own), so multiprocessing
    # would join it at exit and hang; the launch's finalizer ends it first
    script = textwrap.dedent(
        """
        from rlvr.config import load_config
        from rlvr.engine import sampler_launch
        sampler_launch.start_early(load_config(None, ["rollout.max_staleness=1"]))
        print(sampler_launch._EARLY[0].process.pid, flush=True)
        raise SystemExit(2)  # as a refused setting would, after the start
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    pid = int(done.stdout.split()[0])
    assert subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0  # no longer running


def test_rlvr_train_starts_one_sampler_process_before_it_imports_torch(base_model_dir, tmp_path):
    # the command's early start and the run's build must not start two; the one started must
    # start before torch loads, or its imports no longer overlap the trainer's
    script = textwrap.dedent(
        f"""
        import sys
        from rlvr.engine import sampler_launch
        real, seen = sampler_launch.launch, []
        def spy(cfg, rank):
            seen.append("torch" in sys.modules)
            return real(cfg, rank)
        sampler_launch.launch = spy
        from rlvr.cli import main
        code = main(["train", "--quiet", "--out", {str(tmp_path / "run")!r},
                     "--set", "model.name={base_model_dir}", "--set", "rollout.max_staleness=1",
                     "--set", "train.steps=2", "--set", "train.batch_queries=4", "--set", "rollout.group_size=4",
                     "--set", "task.num_train=40", "--set", "task.num_eval=4", "--set", "train.eval_samples=1",
                     "--set", "rollout.max_new_tokens=24"])
        print("launches, torch loaded at each:", seen)
        sys.exit(code)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "launches, torch loaded at each: [False]" in done.stdout, done.stdout[-2000:]
