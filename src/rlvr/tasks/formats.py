"""Dataset layouts for task.name=hf: which columns hold the prompt and the answer, and how the
reference answer is cut out of the answer cell.

- ``columns``: the answer cell is the reference answer itself.
- ``gsm8k``: GSM8K (Cobbe et al. 2021, arXiv:2110.14168) stores a worked solution whose last
  line is ``#### 42``; the reference is the text after the last ``####``.
- ``math``: Hendrycks MATH (Hendrycks et al. 2021, arXiv:2103.03874) stores a LaTeX solution; the
  reference is the content of its last ``\\boxed{...}`` (or ``\\fbox{...}``), as in the MATH
  paper's own ``last_boxed_only_string``.

Pure string functions: no ``datasets``, no rows, no files. A solution without an answer raises
``AnswerNotFound`` with the reason; the loader adds the file, split and row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


class AnswerNotFound(ValueError):
    """The answer cell holds no reference answer in the layout's form; the message says why."""


# A comma between digits followed by exactly three digits: "1,234,567" -> "1234567", but the
# pair "1,2" stays as it is (GSM8K writes large answers with thousands separators).
_THOUSANDS_SEPARATOR = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def gsm8k_answer(solution: str) -> str:
    """GSM8K's reference answer: the text after the last ``####``, stripped, without thousands
    separators ("... #### 1,234" -> "1234")."""
    _, marker, tail = solution.rpartition("####")
    if not marker:
        raise AnswerNotFound("no '####' in the solution; a GSM8K solution ends with '#### <answer>'")
    answer = _THOUSANDS_SEPARATOR.sub("", tail.strip())
    if not answer:
        raise AnswerNotFound("nothing after the last '####'")
    return answer


# `\boxed` or `\fbox` as a whole control word: not `\boxedtext`.
_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")


def boxed_answer(solution: str) -> str:
    r"""MATH's reference answer: the content of the last ``\boxed{...}`` or ``\fbox{...}``, nested
    braces kept (``\boxed{\frac{1}{2}}`` -> ``\frac{1}{2}``). ``\boxed 5`` without braces gives
    the text up to the next ``$`` or line end, as the MATH paper's ``remove_boxed`` reads it."""
    boxes = list(_BOX.finditer(solution))
    if not boxes:
        raise AnswerNotFound("no \\boxed{...} answer in the solution")
    rest = solution[boxes[-1].end() :]
    if rest.lstrip(" ").startswith("{"):
        answer = _braced_group(rest.lstrip(" "))
    else:
        answer = re.split(r"[$\n]", rest, maxsplit=1)[0]
    answer = answer.strip()
    if not answer:
        raise AnswerNotFound("the last \\boxed{...} is empty")
    return answer


def _braced_group(text: str) -> str:
    r"""The content of the group ``text`` opens with ``{``; ``\{`` and ``\}`` are literal braces."""
    depth = 0
    position = 0
    while position < len(text):
        char = text[position]
        if char == "\\":
            position += 2  # a control symbol such as \{ or \\: its second character is not a brace
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[1:position]
        position += 1
    raise AnswerNotFound("unbalanced braces in the last \\boxed{...}")


@dataclass(frozen=True)
class DatasetFormat:
    """A dataset layout: its usual columns and how its answer cell becomes the reference answer."""

    prompt_column: str
    answer_column: str
    reference: Callable[[str], str]
    """The answer cell's text -> the reference answer; raises AnswerNotFound."""


def _whole_cell(text: str) -> str:
    return text


FORMATS: dict[str, DatasetFormat] = {
    "columns": DatasetFormat("prompt", "answer", _whole_cell),
    "gsm8k": DatasetFormat("question", "answer", gsm8k_answer),
    "math": DatasetFormat("problem", "solution", boxed_answer),
}
"""task.hf_format -> its layout. The 'columns' layout's columns are task.hf_*_column's defaults."""
