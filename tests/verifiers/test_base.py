"""Answer and code extraction (DESIGN.md, "Completions")."""

import pytest

from rlvr.types import Query
from rlvr.verifiers.base import BaseVerifier, Verifier, extract_answer, extract_code
from rlvr.verifiers.format import FormatVerifier


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>t</think><answer> 42 </answer>", "42"),
        ("<answer>1</answer> wait, no <answer>2</answer>", "2"),  # the last answer counts
        ("<answer>1</answer> then cut off: <answer>3", "1"),  # an unclosed tag is no answer
        ("<answer>a<answer>b</answer>", "b"),  # innermost opening before the last closing
        ("<answer></answer>", ""),  # present but empty: not None
        ("no tags at all", None),
        ("</answer> closing only", None),
    ],
)
def test_extract_answer(completion: str, expected: str | None) -> None:
    assert extract_answer(completion) == expected


def test_extract_code_takes_last_fenced_block_of_the_language() -> None:
    completion = "```python\nold = 1\n```\n```cpp\nint cpp;\n```\n```py\nnew = 2\n```\n<answer>not this</answer>"
    assert extract_code(completion, "python") == "new = 2\n"
    assert extract_code(completion, "c") == "not this"  # "cpp" is not "c": falls back to the answer


def test_extract_code_falls_back_to_answer_then_whole_text() -> None:
    assert extract_code("<think>x</think><answer>print(1)</answer>", "python") == "print(1)"
    assert extract_code("def f(): pass", "python") == "def f(): pass"
    assert extract_code("```c\nint main(){}\n```", "c") == "int main(){}\n"


def test_extract_code_rejects_unknown_language() -> None:
    with pytest.raises(ValueError, match="rust"):
        extract_code("fn main() {}", "rust")


def test_base_verifier_satisfies_protocol_and_batches_by_looping() -> None:
    verifier = FormatVerifier()
    assert isinstance(verifier, Verifier) and isinstance(verifier, BaseVerifier)
    query = Query("q", "p", {"type": "math", "answer": "1"})
    good, bad = "<think>a</think><answer>1</answer>", "1"
    verdicts = [r.verdict.value for r in verifier.verify_batch([(query, good), (query, bad)])]
    assert verdicts == ["pass", "fail"]
