r"""Build the honest math corpus (``math_honest.jsonl``) and its controls from other graders' tests.

Not a test: it reads checkouts of three outside projects and writes the JSONL files next to it,
which tests/verifiers/test_math_corpus.py reads. Rerun it after changing a rule below:

    python tests/verifiers/corpus/build_math_corpus.py \
        --math-verify PATH/Math-Verify --hendrycks PATH/math --qwen PATH/Qwen2.5-Math

Sources (the commit each pair was read at is written into its ``source``):

- huggingface/Math-Verify ``tests/*.py``: every ``(gold, pred, expected)`` row of a
  ``pytest.mark.parametrize`` list; ``expected`` is the authors' mark.
- hendrycks/math ``modeling/math_equivalence_test.py``: ``test_in``/``test_out`` with
  ``assertTrue``/``assertFalse``; ``test_in`` is taken as the gold.
- QwenLM/Qwen2.5-Math ``evaluation/data/eval_rm_maj_example/math_cot_100.jsonl``: 100 MATH
  problems, 8 sampled answers each, with the ``score`` Qwen2.5-Math's grader gave each against
  ``gt``; and each problem's MATH ``answer`` beside ``gt``, the form Qwen's normaliser makes of it
  (both directions are pairs a reader calls equal: ``\$6`` and ``6``). The grader pairs of
  Qwen2.5-Math's ``evaluation/grader.py`` (``_test_math_equal``) carry no marks there; Math-Verify
  copied them with marks (``test_complex_math_expressions``), and they are read from that copy.

What becomes an rlvr pair (gold = the row's ``answer``, answer = the text inside ``<answer>``):

- A worked solution (over 150 characters, or one that thinks aloud in ``<think>``) is reduced to
  its last ``\boxed{}``: that is what a model asked for its final answer writes in ``<answer>``.
  One with no ``\boxed{}`` is not used: its answer is somewhere in prose, which rlvr never reads.
- Doubled backslashes before a command (``\\frac`` in a raw string: an escaping slip in the
  source) are read as one, and a literal ``\n`` as a newline.
- A mark made under a setting rlvr's row states otherwise: math-verify rounds decimals to 6
  places by default (``precision``), which an rlvr row states as ``"tolerance": 1e-6``, so such a
  pair carries that tolerance when its answer is a decimal; ``precision=2`` pairs are not used for
  matrices and intervals (a tolerance applies to one number).
- ``SET_ASIDE`` below names, pair by pair, those marked equal that rlvr refuses on purpose, with
  the documented rule that refuses each (docs/verifiers.md, ``math``); the test checks that each is
  refused with that error class. ``NOT_EQUAL`` names pairs marked equal that are not.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
WORKED_SOLUTION_CHARS = 150

MV = "tests/test_all.py::"
DECIMAL_COMMA = "a comma is never a decimal point (docs/verifiers.md, math: thousands separators)"
APPROXIMATE = "a relation other than symbol = value: \\approx states an approximation, not the value"
SET_ASIDE: dict[str, tuple[str, str]] = {
    # (source id ending) -> (error class, the documented rule that refuses the pair)
    MV + "test_number_extraction[2]": ("bad_format", "numbers side by side: a space is not a thousands separator"),
    MV + "test_number_extraction[5]": ("bad_format", DECIMAL_COMMA),
    MV + "test_number_extraction[6]": ("wrong_answer", DECIMAL_COMMA + "; the gold 1,22 is the list 1, 22"),
    MV + "test_number_extraction[7]": ("bad_format", DECIMAL_COMMA),
    MV + "test_number_extraction[13]": ("unparseable", "a character that is not math (€), and a second number (10)"),
    MV + "test_number_extraction[15]": ("unparseable", "a character that is not math (²), and a second number (10)"),
    MV + "test_number_extraction[16]": ("unparseable", "a character that is not math (²), and a second number (10)"),
    MV + "test_latex_notation[9]": ("bad_format", "= whose left side is not one symbol: 1/2 = 10/9 is no value"),
    MV + "test_relations_math[10]": ("bad_format", "a chain of relations: x = 5+5+1 = 7 = 11 states 7 too"),
    MV + "test_relations_math[13]": ("bad_format", APPROXIMATE),
    MV + "test_relations_math[15]": ("bad_format", APPROXIMATE),
    MV + "test_relations_math[16]": ("bad_format", APPROXIMATE),
    MV + "test_math_extraction_additional_cases[4]": (
        "bad_format", "a number outside $...$: the one $...$ holds n, and 34 stands in the prose"),
}  # fmt: skip
"""Pairs marked equal that rlvr refuses on purpose; the test checks each is refused with its class."""
NOT_EQUAL: dict[str, str] = {
    "tests/test_yujianll.py::test_string_extraction[9]": "1 - 1/e is not 1 + 1/e (math-verify read both as 1)",
}
"""Pairs marked equal that are not equal: they join the wrong controls, with why."""
UNUSED: dict[str, str] = {
    "tests/test_all.py::test_complex_math_expressions[4]": "a form feed where the source meant \\frac (escaping)",
    "tests/test_numina_cases.py::test_numina_cases[24]": "the gold's \\boxed{ is never closed (a typo)",
    "tests/test_open_thoughts.py::test_open_thoughts[24]": "delimiters garbled in the source: \\($ ... \\)",
    "math_cot_100.jsonl idx 3: answer vs gt": "4:30p.. is an artifact of Qwen's normaliser, not an answer",
    "math_cot_100.jsonl idx 3: gt vs answer": "4:30p.. is an artifact of Qwen's normaliser, not an answer",
}
"""Pairs not used at all, with why (``rlvr_pair`` adds the ones it cannot convert)."""
NOT_USED: dict[str, str] = {}
"""Every source pair not used, by its full source id, with why: printed by ``main``."""
AS_A_SET = "rlvr compares a bare list as a set (math-verify's reading); MATH's string checker keeps the order"
EQUAL_AFTER_ALL: dict[str, str] = {
    "tests/test_all.py::test_latex_notation[5]": "the value is 9: math-verify's extractor does not let $...$ span lines",
    "tests/test_all.py::test_latex_notation[6]": "the value is 9: math-verify's extractor does not let \\(...\\) span lines",
    "tests/test_open_thoughts.py::test_open_thoughts[28]": (
        "a test of math-verify's reading of prose around a gold's boxes; rlvr reads a gold of several boxes as their list"),
    "modeling/math_equivalence_test.py::test_order": AS_A_SET,
    "modeling/math_equivalence_test.py::test_decimals": AS_A_SET,
}  # fmt: skip
"""Pairs a source marks unequal that rlvr passes by a documented rule: checked to pass, with why."""


def equal_after_all(pair: dict[str, Any]) -> str | None:
    """Why rlvr passes a pair its source marks unequal, or None."""
    if (pair["gold"], pair["answer"]) == ("10{,}000", "10000"):
        return "10{,}000 is 10000: Qwen2.5-Math's grader missed the MATH thousands separator"
    return named(EQUAL_AFTER_ALL, pair["source"])


def named(table: dict[str, Any], source: str) -> Any:
    """The entry of ``table`` whose key ends ``source`` (keys leave out repository and commit)."""
    for key, value in table.items():
        if re.search(re.escape(key) + r"(?![\w\[])", source):
            return value
    return None


def commit_of(checkout: Path) -> str:
    result = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return result.stdout.strip()[:12] if result.returncode == 0 else "unknown"


def boxes(text: str) -> list[tuple[int, int]]:
    r"""(start, end) of each ``\boxed{...}`` (braces balanced), in order."""
    found = []
    for match in re.finditer(r"\\boxed\{", text):
        depth = 0
        for j in range(match.end() - 1, len(text)):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                found.append((match.start(), j + 1))
                break
    return found


def final_boxes(text: str) -> str | None:
    r"""The last ``\boxed{}``, with the boxes just before it in the same sentence
    (``\boxed{-2} \quad \text{and} \quad \boxed{1}``); None if there is none."""
    found = boxes(text)
    if not found:
        return None
    first = len(found) - 1
    while first > 0 and re.fullmatch(r"[^.$]{0,40}", text[found[first - 1][1] : found[first][0]]):
        first -= 1
    start, end = found[first][0], found[-1][1]
    if first == len(found) - 1:
        return text[start + len("\\boxed{") : end - 1].strip()
    return text[start:end]


def stated_final_answer(text: str) -> str | None:
    """X in "The final answer is X. I hope it is correct." (the MATH/Minerva few-shot format)."""
    stated = re.findall(r"[Ff]inal [Aa]nswer is:?\s*(.+?)\s*(?:\.\s*I hope|\.?\s*$|\.\s*<\|)", text, re.DOTALL)
    return stated[-1].strip() if stated else None


def unescape(text: str) -> str:
    r"""A raw string that doubled its backslashes (``\\frac``, ``\\boxed``): one backslash each, and
    its ``\n`` a newline. Only where the text doubles them; ``\\`` (a line break) is left alone."""
    if not re.search(r"(?<!\\)\\\\(?=[A-Za-z])", text):
        return text
    text = re.sub(r"(?<!\\)\\n(?![A-Za-z])", "\n", text)
    return re.sub(r"(?<!\\)\\\\(?=[A-Za-z])", r"\\", text)


def is_worked_solution(text: str) -> bool:
    """Reasoning, not an answer: long, thinking aloud, several pieces of math, or a derivation
    (an equation in a sentence) that ends in its box."""
    math = r"\$\$.*?\$\$|\$.*?\$|\\\[.*?\\\]|\\\(.*?\\\)"
    pieces = len(re.findall(math, text, re.DOTALL)) if re.search(r"[A-Za-z]{4,}", re.sub(math, "", text)) else 0
    derivation = "\\boxed" in text and "=" in text and re.search(r"[A-Za-z]{4,}", text.split("\\boxed")[0])
    return (
        len(text) > WORKED_SOLUTION_CHARS
        or "<think>" in text
        or "\\begin{align" in text
        or pieces > 1
        or bool(derivation)
    )


def reduce(text: str) -> tuple[str | None, str]:
    """(the answer a model would write, how it was obtained); None when there is none to take."""
    if not is_worked_solution(text):
        return text, "verbatim"
    stated = stated_final_answer(text)
    if stated:
        return stated, '"The final answer is" of a worked solution'
    boxed = final_boxes(text)
    if boxed:
        return boxed, "final \\boxed{} of a worked solution"
    return None, "worked solution without \\boxed{} or a stated final answer"


def math_verify_pairs(root: Path) -> list[dict[str, Any]]:
    """Every (gold, pred, expected) row of Math-Verify's parametrized tests, in file order."""
    commit = commit_of(root)
    pairs = []
    for path in sorted((root / "tests").glob("test_*.py")):
        for function in ast.walk(ast.parse(path.read_text())):
            if not isinstance(function, ast.FunctionDef):
                continue
            for decorator in function.decorator_list:
                if not (isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", "") == "parametrize"):
                    continue
                names = [name.strip() for name in ast.literal_eval(decorator.args[0]).split(",")]
                try:
                    rows = ast.literal_eval(decorator.args[1])
                except ValueError:  # an f-string row (test_float_precision): computed, not written
                    continue
                for index, values in enumerate(rows):
                    row = dict(zip(names, values, strict=True))
                    if "gold" not in row or "pred" not in row:
                        continue
                    source = f"huggingface/Math-Verify@{commit} tests/{path.name}::{function.name}[{index}]"
                    mark = row.get("expected", row.get("result"))
                    options = {k: v for k, v in row.items() if k not in ("gold", "pred", "expected", "result")}
                    pairs.append({"gold": row["gold"], "answer": row["pred"], "equal": bool(mark),
                                  "source": source, "options": options})  # fmt: skip
    return pairs


def hendrycks_pairs(root: Path) -> list[dict[str, Any]]:
    """``test_in``/``test_out`` and the assertion of each method of MATH's equivalence tests."""
    commit = commit_of(root)
    text = (root / "modeling" / "math_equivalence_test.py").read_text()
    method = re.compile(
        r'def (test_\w+)\(self\):\s*test_in = ("(?:[^"\\]|\\.)*")\s*test_out = ("(?:[^"\\]|\\.)*")\s*'
        r"self\.assert(True|False)"
    )
    return [
        {"gold": ast.literal_eval(m.group(2)), "answer": ast.literal_eval(m.group(3)), "equal": m.group(4) == "True",
         "source": f"hendrycks/math@{commit} modeling/math_equivalence_test.py::{m.group(1)}", "options": {}}
        for m in method.finditer(text)
    ]  # fmt: skip


def qwen_pairs(root: Path) -> list[dict[str, Any]]:
    """Distinct (gt, pred, score) of math_cot_100.jsonl, and (answer, gt) both ways where they differ."""
    commit = commit_of(root)
    name = "evaluation/data/eval_rm_maj_example/math_cot_100.jsonl"
    pairs, seen = [], set()
    for line in (root / name).read_text().splitlines():
        problem = json.loads(line)
        where = f"QwenLM/Qwen2.5-Math@{commit} {name} idx {problem['idx']}"
        for pred, score in zip(problem["pred"], problem["score"], strict=True):
            if (problem["gt"], pred) not in seen:
                seen.add((problem["gt"], pred))
                pairs.append({"gold": problem["gt"], "answer": pred, "equal": bool(score),
                              "source": f"{where}: gt vs pred (grader score {score})", "options": {}})  # fmt: skip
        if problem["answer"] != problem["gt"]:
            for gold, answer, how in ((problem["answer"], problem["gt"], "answer vs gt"),
                                      (problem["gt"], problem["answer"], "gt vs answer")):  # fmt: skip
                pairs.append({"gold": gold, "answer": answer, "equal": True,
                              "source": f"{where}: {how} (Qwen's normaliser maps answer to gt)", "options": {}})  # fmt: skip
    return pairs


def rlvr_pair(pair: dict[str, Any]) -> dict[str, Any] | None:
    """The rlvr pair a source pair stands for, with how it was read; None if it stands for none."""
    gold, gold_how = reduce(unescape(pair["gold"]))
    answer, answer_how = reduce(unescape(pair["answer"]))
    if gold is None or answer is None:
        NOT_USED[pair["source"]] = f"gold: {gold_how}; answer: {answer_how}"
        return None
    options = pair["options"]
    unsupported = {
        k: v
        for k, v in options.items()
        if (k, v) not in (("precision", 6), ("strict", True), ("allow_set_relation_comp", False))
    }
    if unsupported:
        NOT_USED[pair["source"]] = f"marked under math-verify options rlvr does not use: {unsupported}"
        return None
    out = {"gold": gold, "answer": answer, "source": pair["source"]}
    if (gold_how, answer_how) != ("verbatim", "verbatim"):
        out["read"] = f"gold: {gold_how}; answer: {answer_how}"
    if re.search(r"[0-9]\.[0-9]{6,}", answer) and not re.search(r"[0-9]\.[0-9]", gold):
        out["tolerance"] = 1e-6  # math-verify's default precision=6, as an rlvr row states it
    return out


def build(math_verify: Path, hendrycks: Path, qwen: Path) -> dict[str, list[dict[str, Any]]]:
    files: dict[str, list[dict[str, Any]]] = {"math_honest": [], "math_set_aside": [], "math_wrong": []}
    seen: set[tuple[str, str]] = set()
    for pair in [*math_verify_pairs(math_verify), *hendrycks_pairs(hendrycks), *qwen_pairs(qwen)]:
        source = pair["source"]
        if named(UNUSED, source) is not None:
            NOT_USED[source] = named(UNUSED, source)
            continue
        converted = rlvr_pair(pair)
        if converted is None or (converted["gold"], converted["answer"]) in seen:
            continue
        seen.add((converted["gold"], converted["answer"]))
        if not pair["equal"] and equal_after_all(pair):
            converted["expect"], converted["rule"] = "pass", equal_after_all(pair)
            files["math_set_aside"].append(converted)
        elif not pair["equal"] or named(NOT_EQUAL, source):
            if named(NOT_EQUAL, source):
                converted["why"] = named(NOT_EQUAL, source)
            files["math_wrong"].append(converted)
        elif named(SET_ASIDE, source):
            converted["expect"], converted["rule"] = named(SET_ASIDE, source)
            files["math_set_aside"].append(converted)
        else:
            files["math_honest"].append(converted)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--math-verify", type=Path, required=True, help="checkout of huggingface/Math-Verify")
    parser.add_argument("--hendrycks", type=Path, required=True, help="checkout of hendrycks/math")
    parser.add_argument("--qwen", type=Path, required=True, help="checkout of QwenLM/Qwen2.5-Math")
    args = parser.parse_args()
    files = build(args.math_verify, args.hendrycks, args.qwen)
    for name, rows in files.items():
        with open(HERE / f"{name}.jsonl", "w", encoding="utf-8") as out:
            out.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        print(f"{name}.jsonl: {len(rows)} pairs")
    print(f"not used: {len(NOT_USED)} source pairs")
    for source, why in NOT_USED.items():
        print(f"  {source}: {why}")


if __name__ == "__main__":
    main()
