"""A small environment package with the `verifiers` contract, written into a test's directory.

``tiny_arith_env.load_environment(**kwargs)`` returns a ``vf.SingleTurnEnv`` over questions "What
is a + b?" whose rubric is ``exact`` (weight 1.0: the <answer> is the sum) plus ``tagged``
(weight 0.2: the completion has an <answer> element), so the rubric pays 1.2, 0.2 or 0. Switches
make the shapes rlvr refuses (multi-turn, group rewards, no eval_dataset). Some answers make
``exact`` misbehave, so that one environment exercises every outcome:
``raise`` raises, ``hang`` sleeps a minute, ``oversize`` pays 5, ``nan`` pays NaN, ``none`` returns
None.
"""

from __future__ import annotations

from pathlib import Path

ENV_NAME = "tiny_arith_env"

ENV_SOURCE = """
import math
import time

import verifiers as vf
from datasets import Dataset

SYSTEM = "Answer with the number inside <answer></answer>."


def _rows(start, n):
    return [
        {"question": f"What is {a} + {a + 1}?", "answer": str(2 * a + 1), "info": {"a": a}}
        for a in range(start, start + n)
    ]


def load_environment(num_train=12, num_eval=4, with_eval=True, kind="single", system_prompt=SYSTEM):
    parser = vf.XMLParser(["answer"], answer_field="answer")

    def exact(completion, answer, parser, **kwargs) -> float:
        given = (parser.parse_answer(completion) or "").strip()
        if given == "raise":
            raise ZeroDivisionError("asked to raise")
        if given == "hang":
            time.sleep(60)
        if given in ("oversize", "nan", "none"):
            return {"oversize": 5.0, "nan": math.nan, "none": None}[given]
        return 1.0 if given == answer else 0.0

    def tagged(completion) -> float:
        text = completion[-1]["content"]
        return 1.0 if "<answer>" in text and "</answer>" in text else 0.0

    def group_exact(completions, answers) -> list[float]:
        return [0.0 for _ in completions]

    funcs = [exact, tagged, group_exact] if kind == "group" else [exact, tagged]
    weights = [1.0, 0.2, 1.0] if kind == "group" else [1.0, 0.2]
    rubric = vf.Rubric(funcs=funcs, weights=weights, parser=parser)
    env_class = vf.ToolEnv if kind == "tools" else vf.SingleTurnEnv
    return env_class(
        dataset=Dataset.from_list(_rows(0, num_train)),
        eval_dataset=Dataset.from_list(_rows(100, num_eval)) if with_eval else None,
        system_prompt=system_prompt,
        parser=parser,
        rubric=rubric,
    )
"""


def write_env(directory: Path) -> Path:
    """Writes the environment module into ``directory`` and returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{ENV_NAME}.py").write_text(ENV_SOURCE)
    return directory
