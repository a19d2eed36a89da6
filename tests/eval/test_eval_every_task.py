"""`rlvr eval` on every registered task: each one's held-out split is sampled by a real model and
scored by the task's real verifier (the sandbox, Coq, reasoning-gym's own scorer, an environment
with the `verifiers` contract), and every number in eval.json recomputes from samples.jsonl.

Each case is a task and the `--set` values that pick its held-out split, as a user passes them;
data files (JSONL rows, a GSM8K-format file) are written by the test. The sampled values are never
written down here: the tests recompute them from the records, so a change in how samples are
drawn changes nothing below.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rlvr.config import load_config
from rlvr.rollout.prompts import PromptFormat
from rlvr.studies.passk_eval import evaluate_passk
from rlvr.tasks.arith import make_queries as arith_queries
from rlvr.tasks.registry import get_task, task_names

from .records import check_lm_eval_export, check_recomputes, lines

PROOF_PARROT = "proof-parrot"
"""Stands for the `proof_parrot` fixture's model in a case."""
PROOF = "<answer>intros. reflexivity.</answer>"
"""What the parrot learns to write for every lemma: Coq accepts it for the lemmas that hold by
computation (add_left, length_cons) and refuses it for the ones that need induction or case
analysis, so its samples get both verdicts from coqtop."""
MAX_NEW_TOKENS = 48
"""Enough for an arith answer, a tool call and its observation, or the parrot's proof."""
NO_COQ = "coqtop or bubblewrap is not installed (setup.sh installs both); proofs are checked in real Coq"


def _math_rows(data: Path) -> list[dict]:
    """Four arith held-out questions as plain rows: the tiny arith model answers some of them."""
    queries = arith_queries(4, split="heldout", seed=7)
    return [{"id": f"row-{i}", "prompt": q.prompt, "answer": q.verifier["answer"]} for i, q in enumerate(queries)]


def _jsonl_sets(data: Path) -> list[str]:
    rows = [{"id": r["id"], "prompt": r["prompt"], "verifier": {"type": "math", "answer": r["answer"]}}
            for r in _math_rows(data)]  # fmt: skip
    path = data / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return [f"task.train_path={path}", f"task.eval_path={path}"]


def _gsm8k_sets(data: Path) -> list[str]:
    """A GSM8K-format file (question, and an answer whose last '#### ' line is the reference) as
    the held-out file beside a training file of the same layout."""
    rows = [{"question": r["prompt"], "answer": f"Work it out step by step.\n#### {r['answer']}"}
            for r in _math_rows(data)]  # fmt: skip
    path = data / "gsm8k.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return [f"task.hf_path={path}", f"task.hf_eval_path={path}", "task.hf_format=gsm8k"]


def _vf_sets(data: Path) -> list[str]:
    pytest.importorskip("verifiers")
    from ..verifiers.vf_envs import ENV_NAME, write_env

    return ["task.vf_env=" + ENV_NAME, f"task.vf_path={write_env(data / 'env')}"]


def _rg_sets(data: Path) -> list[str]:
    pytest.importorskip("reasoning_gym")
    return ["task.rg_dataset=chain_sum", "task.rg_config={min_terms: 2, max_terms: 3, min_digits: 1, max_digits: 2}"]


def _coq_reached(records: list[dict]) -> None:
    """coqtop itself judged some sample: proved it, or refused a tactic of it."""
    judged = [r for r in records if r["verdict"] == "pass" or r["error_class"] == "compile_error"]
    assert judged, [(r["completion"], r["detail"]) for r in records]


@dataclass(frozen=True)
class Case:
    task: str
    model: str
    sets: Callable[[Path], list[str]] = lambda data: []
    temperature: float = 1.0
    expect: Callable[[list[dict]], None] = lambda records: None
    """A further check of the case's sample records."""
    marks: tuple = field(default=())

    def param(self, label: str | None = None):
        return pytest.param(self, id=label or self.task, marks=self.marks)


CASES = [
    Case("arith", "tiny-arith").param(),
    Case(
        "arith",
        "tiny-arith-tool",
        lambda data: ["rollout.tools=python", "task.operands=3", "task.digits=2", "task.max_value=9999"],
        marks=(pytest.mark.sandbox,),
    ).param("tool"),
    Case("funcsynth", "tiny-funcsynth", marks=(pytest.mark.sandbox,)).param(),
    Case("jsonl", "tiny-arith", _jsonl_sets).param(),
    Case("hf", "tiny-arith", _gsm8k_sets).param(),
    Case("reasoning_gym", "tiny-arith", _rg_sets).param(),
    Case(
        "proofs",
        PROOF_PARROT,
        temperature=0.1,  # near-greedy: the parrot writes its proof whatever the draws
        expect=_coq_reached,
        marks=(
            pytest.mark.sandbox,
            pytest.mark.skipif(not (shutil.which("coqtop") and shutil.which("bwrap")), reason=NO_COQ),
        ),
    ).param(),
    Case("verifiers", "tiny-arith", _vf_sets).param(),
]


@pytest.fixture(scope="module")
def proof_parrot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Llama taught for a few seconds to answer every training lemma with `PROOF`."""
    from rlvr.bases.tiny import TinyArch, build_tiny_llama
    from rlvr.bases.warmup import WarmupSpec, warm_up
    from rlvr.models.tokenizer import build_char_tokenizer
    from rlvr.tasks.proofs import make_queries

    path = tmp_path_factory.mktemp("proof-parrot")
    tokenizer = build_char_tokenizer()
    arch = TinyArch(hidden_size=48, intermediate_size=96, num_layers=2, num_heads=2, max_positions=160)
    model = build_tiny_llama(tokenizer, arch, seed=0)
    lemmas = make_queries(40, split="train", seed=0)
    spec = WarmupSpec(steps=60, batch_size=8, lr=1e-2, warmup_steps=5)
    warm_up(model, tokenizer, lemmas, lambda query, rng: PROOF, spec)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _model(case: Case, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("proof_parrot")) if case.model == PROOF_PARROT else case.model


def test_every_registered_task_has_a_case():
    assert sorted({case.values[0].task for case in CASES}) == sorted(task_names())
    assert all(get_task(name).heldout for name in task_names())  # each says what its held-out split is


@pytest.mark.parametrize("case", CASES)
def test_every_number_recomputes_from_the_samples(case: Case, tmp_path: Path, request) -> None:
    """pass@k (and CoT-pass@k where the task has a reasoning checker) for 3 held-out queries x n=2,
    each value, interval and per-query count rebuilt from samples.jsonl."""
    cfg = load_config(None, [f"task.name={case.task}", *case.sets(tmp_path)])
    out = tmp_path / "ev"
    report = evaluate_passk(_model(case, request), base=None, task=cfg.task, n=2, ks=[1, 2], num_queries=3,
                            temperature=case.temperature, seed=0, out=out, progress=False,
                            max_new_tokens=MAX_NEW_TOKENS, prompt_format=PromptFormat.of(cfg.task),
                            rollout=cfg.rollout)  # fmt: skip
    assert report["task"] == case.task and report["num_queries"] == 3 and report["tools"] == cfg.rollout.tools
    records = lines(out / "samples.jsonl")
    checker = get_task(case.task).reasoning_checker
    assert all((r["reasoning_verdict"] is None) == (checker is None) for r in records)
    check_recomputes(out, report)
    check_lm_eval_export(out, report)
    case.expect(records)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_rlvr_eval_runs_on_every_task(case: Case, tmp_path: Path, request, cli) -> None:
    """The real command with --task and --set, against a base: its eval.json recomputes too, and the
    same model twice shows a difference of exactly 0."""
    model = _model(case, request)
    sets = [
        flag
        for value in [*case.sets(tmp_path), f"rollout.max_new_tokens={MAX_NEW_TOKENS}"]
        for flag in ("--set", value)
    ]
    out = tmp_path / "ev"
    done = cli("eval", "--task", case.task, "--model", model, "--base", model, *sets, "--n", "2", "--k", "1,2",
               "--num-queries", "2", "--temperature", str(case.temperature), "--out", str(out), "--quiet")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"held-out {case.task} queries" in done.stdout
    report = json.loads((out / "eval.json").read_text())
    check_recomputes(out, report)
    assert report["difference"]["pass@k"] == [0.0, 0.0]
    if get_task(case.task).reasoning_checker is None:
        assert f"CoT-pass@k: unavailable for task '{case.task}' (no reasoning checker)" in done.stdout


def test_a_task_without_a_held_out_split_is_one_line_exit_2(tmp_path: Path, cli) -> None:
    """task.name=hf on a single file and no task.hf_eval_path: nothing is held out, so nothing to evaluate."""
    path = tmp_path / "gsm8k.jsonl"
    path.write_text(json.dumps({"question": "What is 1 + 1?", "answer": "#### 2"}) + "\n")
    out = tmp_path / "ev"
    done = cli("eval", "--task", "hf", "--model", "tiny-arith", "--set", f"task.hf_path={path}",
               "--set", "task.hf_format=gsm8k", "--n", "2", "--k", "1", "--out", str(out))  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"rlvr: error: task.hf_path={path} is a single file, so it has no held-out split; "
        "set task.hf_eval_path to a file of held-out rows"
    ]
    assert not out.exists()
