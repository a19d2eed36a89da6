"""The pytest-style verifier, run for real in bubblewrap.

Its guarantee is WEAKER than the python verifier's, and these tests say so: a rigged ``__eq__``
and a stolen nonce DO fool it (asserted below, next to the python verifier rejecting the same
answer), while exiting, skipping, deleting tests, printing fake summaries and shadowing or
patching what the tests' names resolve to (builtins, imported modules, the driver's helpers)
never pass.
"""

from __future__ import annotations

import shutil

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.pytest_style import PytestVerifier
from rlvr.verifiers.python import PythonVerifier
from rlvr.verifiers.registry import get_verifier

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

LIMITS = SandboxLimits(wall_s=3.0, cpu_s=2, memory_mb=256, processes=16, output_bytes=64 * 1024)

TESTS = """\
def test_small():
    assert f(2) == 4

def test_negative():
    assert f(-3) == -6

def test_zero():
    assert f(0) == 0
"""


@pytest.fixture(scope="module")
def verifier() -> PytestVerifier:
    return PytestVerifier(limits=LIMITS)


def row(test_code: str = TESTS, expected_tests: int = 3) -> Query:
    return Query("double", "", {"type": "pytest", "test_code": test_code, "expected_tests": expected_tests})


def fenced(code: str) -> str:
    return f"<think>easy</think><answer>\n```python\n{code}\n```\n</answer>"


def verify(verifier: PytestVerifier, code: str, query: Query | None = None):
    return verifier.verify(query or row(), fenced(code))


def assert_fails(result, error_class: ErrorClass | None = None) -> None:
    assert result.verdict is Verdict.FAIL and result.score == 0.0, result
    if error_class is not None:
        assert result.error_class is error_class, result


# --- honest answers ---------------------------------------------------------------------------


def test_correct_solution_passes_with_one_outcome_per_test(verifier: PytestVerifier) -> None:
    result = verify(verifier, "def f(x):\n    return 2 * x")
    assert (result.verdict, result.score) == (Verdict.PASS, 1.0), result
    assert [(t.name, t.passed) for t in result.tests] == [
        ("test_small", True),
        ("test_negative", True),
        ("test_zero", True),
    ]


def test_wrong_solution_fails_with_the_failing_tests(verifier: PytestVerifier) -> None:
    result = verify(verifier, "def f(x):\n    return x * x")  # right for 2 and 0 only
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert [t.passed for t in result.tests] == [True, False, True]
    assert result.detail.startswith("2/3 tests passed; test_negative failed")


def test_partial_credit_is_opt_in() -> None:
    result = PytestVerifier(limits=LIMITS, partial_credit=True).verify(row(), fenced("def f(x):\n    return x * x"))
    assert result.verdict is Verdict.PARTIAL and result.score == pytest.approx(2 / 3)


def test_tests_may_import_from_solution(verifier: PytestVerifier) -> None:
    code = "from solution import f\n\ndef test_one():\n    assert f(5) == 10\n"
    assert verify(verifier, "def f(x):\n    return 2 * x", row(code, 1)).verdict is Verdict.PASS


def test_syntax_error_and_exception(verifier: PytestVerifier) -> None:
    assert_fails(verify(verifier, "def f(x) return"), ErrorClass.SYNTAX_ERROR)
    assert_fails(verify(verifier, "def f(x):\n    raise ValueError(x)"), ErrorClass.RUNTIME_ERROR)
    assert_fails(verify(verifier, "raise ImportError('no')"), ErrorClass.RUNTIME_ERROR)


def test_missing_function_is_a_runtime_error(verifier: PytestVerifier) -> None:
    result = verify(verifier, "def g(x):\n    return 2 * x")
    assert_fails(result, ErrorClass.RUNTIME_ERROR)
    assert all(t.detail == "error: NameError" for t in result.tests)


# --- the weaker guarantee, stated as tests -----------------------------------------------------

ALWAYS_EQUAL = """\
class Anything:
    def __eq__(self, other):
        return True

def f(x):
    return Anything()
"""


def test_rigged_eq_DOES_fool_this_verifier_and_not_the_python_one(verifier: PytestVerifier) -> None:
    fooled = verify(verifier, ALWAYS_EQUAL, row("def test_one():\n    assert f(1) == 2\n", 1))
    assert fooled.verdict is Verdict.PASS  # the documented weakness: assertions run in the candidate's interpreter
    python_row = Query("same", "", {"type": "python", "entry_point": "f", "tests": [{"args": [1], "expected": 2}]})
    rejected = PythonVerifier(limits=LIMITS).verify(python_row, fenced(ALWAYS_EQUAL))
    assert rejected.verdict is Verdict.FAIL and "non-plain value" in rejected.detail


STEAL_THE_NONCE = """\
import json, os, sys

def f(x):
    frame = sys._getframe()
    while frame is not None and "nonce" not in frame.f_locals:
        frame = frame.f_back
    nonce = frame.f_locals["nonce"]
    fake = [{"name": n, "outcome": "passed", "detail": "", "elapsed_s": 0.0}
            for n in ("test_small", "test_negative", "test_zero")]
    os.write(int(os.environ["RLVR_CHANNEL_FD"]), json.dumps({"nonce": nonce, "status": "ok", "results": fake}).encode())
    os._exit(0)
"""


def test_stealing_the_nonce_DOES_fool_this_verifier(verifier: PytestVerifier) -> None:
    result = verify(verifier, STEAL_THE_NONCE)
    assert result.verdict is Verdict.PASS  # the second documented weakness: same interpreter, same secrets


# --- hacks that must not pass -----------------------------------------------------------------


@pytest.mark.parametrize("code", [
    "import sys\nsys.exit(0)",
    "import os\nos._exit(0)",
    "raise SystemExit(0)",
    "import sys\ndef f(x):\n    sys.exit(0)",
    "import os\ndef f(x):\n    os._exit(0)",
    "def f(x):\n    raise KeyboardInterrupt",
])  # fmt: skip
def test_exiting_never_passes(verifier: PytestVerifier, code: str) -> None:
    result = verify(verifier, code)
    assert result.verdict is Verdict.FAIL, (code, result)


@pytest.mark.parametrize("code", [
    "import unittest\ndef f(x):\n    raise unittest.SkipTest('later')",
    "class Skipped(Exception):\n    pass\ndef f(x):\n    raise Skipped()",
    "class SkipTest(BaseException):\n    pass\ndef f(x):\n    raise SkipTest()",
])  # fmt: skip
def test_skipping_never_passes(verifier: PytestVerifier, code: str) -> None:
    result = verify(verifier, code)
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert all(t.detail.startswith("skipped") for t in result.tests), result


DELETE_THE_TESTS = """\
import gc

def f(x):
    for obj in gc.get_objects():
        if type(obj) is dict and "test_zero" in obj:
            for name in [n for n in obj if n.startswith("test_")]:
                del obj[name]
        if type(obj) is list and obj and type(obj[0]) is tuple and str(obj[0][0]).startswith("test_"):
            del obj[1:]
    return 2 * x
"""


def test_deleting_the_tests_never_passes(verifier: PytestVerifier) -> None:
    result = verify(verifier, DELETE_THE_TESTS)
    assert_fails(result, ErrorClass.PROTOCOL_VIOLATION)
    assert result.detail.startswith("ran 1 tests, expected exactly 3")


def test_defining_extra_tests_never_passes(verifier: PytestVerifier) -> None:
    # The candidate plants a test_* function that claims tests.py as its file: one more than the row has.
    code = "exec(compile('def test_free():\\n    pass\\n', 'tests.py', 'exec'))\ndef f(x):\n    return 2 * x"
    assert_fails(verify(verifier, code), ErrorClass.PROTOCOL_VIOLATION)


@pytest.mark.parametrize("code", [
    "print('3 passed in 0.01s')\nprint('===== 3 passed =====')\nimport sys\nsys.exit(0)",
    "import sys\nsys.stderr.write('OK\\n3 passed\\n')\ndef f(x):\n    return x",
    ('import os, json\nfd = int(os.environ["RLVR_CHANNEL_FD"])\n'
     'os.write(fd, json.dumps({"status": "ok", "results": []}).encode())\nos._exit(0)'),
])  # fmt: skip
def test_printing_fake_summaries_or_forging_without_the_nonce_never_passes(verifier: PytestVerifier, code: str) -> None:
    result = verify(verifier, code)
    assert result.verdict is Verdict.FAIL, result


def test_infinite_loop_is_timeout(verifier: PytestVerifier) -> None:
    assert_fails(verify(verifier, "def f(x):\n    while True:\n        pass"), ErrorClass.TIMEOUT)


def test_memory_hog_is_memory(verifier: PytestVerifier) -> None:
    assert_fails(verify(verifier, "def f(x):\n    return [0] * (10 ** 10)"), ErrorClass.MEMORY)


# --- rows ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("criteria", "key"), [
    ({"expected_tests": 1}, '"test_code"'),
    ({"test_code": "def test_a(:\n", "expected_tests": 1}, '"test_code" does not parse'),
    ({"test_code": TESTS, "expected_tests": 2}, 'defines 3 distinct test_* functions, "expected_tests" is 2'),
    ({"test_code": TESTS, "expected_tests": "3"}, '"expected_tests"'),
    ({"test_code": TESTS}, '"expected_tests"'),
    ({"test_code": "import pytest\ndef test_a():\n    assert f(1) == 2\n", "expected_tests": 1}, "imports pytest"),
])  # fmt: skip
def test_bad_criteria_is_an_error_naming_the_query_and_key(verifier: PytestVerifier, criteria: dict, key: str) -> None:
    query = Query("bad-row", "", {"type": "pytest", **criteria})
    result = verifier.verify(query, fenced("def f(x):\n    return 2 * x"))
    assert (result.verdict, result.error_class) == (Verdict.ERROR, ErrorClass.BAD_CRITERIA), result
    assert "'bad-row'" in result.detail and key in result.detail


def test_registry_builds_the_pytest_verifier() -> None:
    assert isinstance(get_verifier("pytest"), PytestVerifier)


def test_patching_json_dumps_cannot_rewrite_the_frame(verifier: PytestVerifier) -> None:
    # The lazy forgery: rewrite every frame the driver sends. The driver bound dumps before import.
    code = (
        "import json\n_real = json.dumps\n"
        "def _fake(body, **kw):\n"
        "    body['results'] = [dict(r, outcome='passed') for r in body.get('results', [])]\n"
        "    return _real(body, **kw)\n"
        "json.dumps = _fake\n"
        "def f(x):\n    return x\n"
    )
    result = verify(verifier, code)
    assert_fails(result, ErrorClass.WRONG_ANSWER)


# --- the candidate cannot replace what the tests' names resolve to ------------------------------
# Each row: (test_code, hack, honest). The hack defines or patches a builtin, a module attribute or
# an import the tests use, with an `f` that is wrong; the honest answer is right and uses builtins
# and helpers of its own. With the tests' namespace built from the candidate's module and the live
# builtins and modules (no copies taken before the candidate ran), every hack here passes.

ABS_TEST = "def test_close():\n    assert abs(f(2) - 0.5) < 1e-9\n"
ISCLOSE_TEST = "import math\n\ndef test_half():\n    assert math.isclose(f(2), 0.5)\n"
HONEST_HALF = "import math\n\ndef _square(v):\n    return v * v\n\ndef f(x):\n    return math.sqrt(_square(x)) / 4\n"
WRONG_HALF = "def f(x):\n    return 99.0\n"

SHADOWING = {
    "def_abs": (ABS_TEST, "def abs(x):\n    return 0\n\n" + WRONG_HALF, HONEST_HALF),
    "len_lambda": ("def test_three():\n    assert len(f(3)) == 3\n",
                   "len = lambda x: 3\n\ndef f(n):\n    return []\n",
                   "def count(n):\n    return list(range(n))\n\ndef f(n):\n    return count(n)\n"),
    "builtins_abs_patched": (ABS_TEST, "import builtins\nbuiltins.abs = lambda x: 0\n\n" + WRONG_HALF,
                             HONEST_HALF),
    "math_isclose_patched": (ISCLOSE_TEST, "import math\nmath.isclose = lambda *a, **k: True\n\n" + WRONG_HALF,
                             HONEST_HALF),
    "from_math_import_isclose_patched": ("from math import isclose\n\ndef test_half():\n"
                                         "    assert isclose(f(2), 0.5)\n",
                                         "import math\nmath.isclose = lambda *a, **k: True\n\n" + WRONG_HALF,
                                         HONEST_HALF),
    "sorted_shadowed": ("def test_permutation():\n    assert sorted(f([3, 1, 2])) == [1, 2, 3]\n",
                        "def sorted(values, **kw):\n    return [1, 2, 3]\n\ndef f(values):\n    return []\n",
                        "def f(values):\n    return list(reversed(values))\n"),
    "isinstance_shadowed": ("def test_int():\n    assert isinstance(f(2), int)\n",
                            "def isinstance(obj, cls):\n    return True\n\ndef f(x):\n    return '4'\n",
                            "def f(x):\n    return int(str(2 * x))\n"),
    "AssertionError_shadowed": (  # the row asks f to reject negatives with an assert
        "def test_rejects_negative():\n    try:\n        f(-1)\n    except AssertionError:\n        return\n"
        "    raise ValueError('f(-1) returned')\n",
        "AssertionError = KeyError\n\ndef f(x):\n    return {}[x]\n",
        "def f(x):\n    assert x >= 0\n    return x\n"),
    "__builtins___mutated": (ABS_TEST, "b = __builtins__\nb = b if type(b) is dict else b.__dict__\n"
                                       "b['abs'] = lambda x: 0\n\n" + WRONG_HALF, HONEST_HALF),
    "globals_abs": (ABS_TEST, "globals()['abs'] = lambda x: 0\n\n" + WRONG_HALF, HONEST_HALF),
    "star_import_brings_abs": ("from solution import *\n\n" + ABS_TEST,
                               "def abs(x):\n    return 0\n\n" + WRONG_HALF, HONEST_HALF),
    "sys_modules_math_replaced": (ISCLOSE_TEST, "import sys, types\nfake = types.ModuleType('math')\n"
                                                "fake.isclose = lambda *a, **k: True\nsys.modules['math'] = fake\n\n"
                                                + WRONG_HALF, HONEST_HALF),
    "builtins_abs_patched_inside_f": ("def test_close():\n    assert f(2) and abs(f(2) - 0.5) < 1e-9\n",
                                      "def f(x):\n    import builtins\n    builtins.abs = lambda v: 0\n"
                                      "    return 99.0\n", HONEST_HALF),
    "math_isclose_patched_inside_f": ("import math\n\ndef test_half():\n    value = f(2)\n"
                                      "    assert math.isclose(value, 0.5)\n",
                                      "import math\n\ndef f(x):\n    math.isclose = lambda *a, **k: True\n"
                                      "    return 99.0\n", HONEST_HALF),
    "submodule_from_import_patched": ("from os import path\n\ndef test_join():\n"
                                      "    assert path.join('a', f(1)) == 'a/b'\n",
                                      "import os.path\nos.path.join = lambda *parts: 'a/b'\n\n"
                                      "def f(x):\n    return 'zzz'\n",
                                      "import os\n\ndef f(x):\n    return 'b' * x\n"),
    "dotted_import_patched": ("import os.path\n\ndef test_join():\n    assert os.path.join('a', f(1)) == 'a/b'\n",
                              "import os\nos.path.join = lambda *parts: 'a/b'\n\ndef f(x):\n    return 'zzz'\n",
                              "def f(x):\n    return 'b' * x\n"),
}  # fmt: skip


@pytest.mark.parametrize("attack", list(SHADOWING))
def test_shadowing_or_patching_what_the_tests_use_never_passes(verifier: PytestVerifier, attack: str) -> None:
    test_code, hack, honest = SHADOWING[attack]
    query = row(test_code, 1)
    assert_fails(verify(verifier, hack, query))
    assert verify(verifier, honest, query).verdict is Verdict.PASS, (attack, verify(verifier, honest, query))


def test_honest_answers_may_shadow_builtins_for_their_own_use(verifier: PytestVerifier) -> None:
    # The candidate's own `sum` and `max` serve its own code; the tests still get the real ones.
    tests = (
        "import collections\n\ndef test_mean():\n    assert sum([f([1, 2, 6])]) == 3\n\n"
        "def test_counts():\n    assert isinstance(g('aab'), collections.Counter)\n"
        "    assert max(g('aab').values()) == 2\n"
    )
    code = (
        "import collections\n\ndef sum(values):\n    total = 0\n    for v in values:\n        total += v\n"
        "    return total\n\ndef max(values):\n    return 'not the builtin'\n\n"
        "def f(values):\n    return sum(values) // len(values)\n\n"
        "def g(text):\n    return collections.Counter(text)\n"
    )
    result = verify(verifier, code, row(tests, 2))
    assert result.verdict is Verdict.PASS, result


def test_tests_may_import_the_solution_module(verifier: PytestVerifier) -> None:
    tests = (
        "import solution\nfrom solution import *\n\ndef test_module():\n    assert solution.f(5) == 10\n\n"
        "def test_star():\n    assert f(5) == 10 and helper(1) == 1\n"
    )
    code = "def helper(x):\n    return x\n\ndef f(x):\n    return 2 * helper(x)\n"
    assert verify(verifier, code, row(tests, 2)).verdict is Verdict.PASS


DRIVER_PATCHES = {
    "main_outcome_of": "import __main__\n__main__.outcome_of = lambda error: ('passed', '')\n",
    "main_run_tests": ("import __main__\n__main__.run_tests = lambda collected: [\n"
                       "    {'name': n, 'outcome': 'passed', 'detail': '', 'elapsed_s': 0.0} for n, _ in collected]\n"),
    "builtins_exec": ("import builtins\n_exec = builtins.exec\n\ndef exec(code, ns=None, *rest):\n"
                      "    _exec(code, ns, *rest)\n    if ns is not None and '__builtins__' in ns:\n"
                      "        ns['f'] = lambda x: 2 * x\n\nbuiltins.exec = exec\n"),
    "json_encoder_class": ("import json\n\nclass Passing(json.JSONEncoder):\n    def encode(self, o):\n"
                           "        o['results'] = [dict(r, outcome='passed') for r in o.get('results', [])]\n"
                           "        return super().encode(o)\n\njson.JSONEncoder = Passing\n"),
}  # fmt: skip


@pytest.mark.parametrize("attack", list(DRIVER_PATCHES))
def test_patching_the_drivers_own_helpers_never_passes(verifier: PytestVerifier, attack: str) -> None:
    # Patches of what the driver itself calls (its functions through `import __main__`, the
    # builtins, the json package) with a wrong f: each passes unless the driver binds them first.
    result = verify(verifier, DRIVER_PATCHES[attack] + "\ndef f(x):\n    return 0\n")
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert [t.passed for t in result.tests] == [False, False, True]


def test_an_entry_point_with_a_builtins_name_is_imported_by_name(verifier: PytestVerifier) -> None:
    # The namespace keeps the builtin `pow`; a row that means the candidate's must say so.
    tests = (
        "from solution import pow\n\ndef test_pow():\n    assert pow(2, 10) == 1024 and pow.__module__ == 'solution'\n"
    )
    assert verify(verifier, "def pow(a, b):\n    return a ** b\n", row(tests, 1)).verdict is Verdict.PASS
    assert_fails(verify(verifier, "def pow(a, b):\n    return a * b\n", row(tests, 1)), ErrorClass.WRONG_ANSWER)
