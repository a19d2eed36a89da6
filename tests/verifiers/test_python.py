"""The python verifier, run for real in bubblewrap: honest answers pass, hacks and abuse never do.

Every hostile case asserts "no false pass" and is bounded by the verifier's limits (3 s wall clock).
"""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.pytest_style import PytestVerifier
from rlvr.verifiers.python import PythonVerifier, same_value
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.stdio import StdioVerifier

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

LIMITS = SandboxLimits(wall_s=3.0, cpu_s=2, memory_mb=256, processes=16, output_bytes=64 * 1024)


@pytest.fixture(scope="module")
def verifier() -> PythonVerifier:
    return PythonVerifier(limits=LIMITS)


def add_query(hidden_expected: int = 30) -> Query:
    return Query(
        "add",
        "",
        {
            "type": "python",
            "entry_point": "add",
            "tests": [{"args": [1, 2], "expected": 3}, {"args": [5, 5], "expected": 10}],
            "hidden_tests": [{"args": [10, 20], "expected": hidden_expected}],
        },
    )


def fenced(code: str) -> str:
    return f"<think>easy</think><answer>\n```python\n{code}\n```\n</answer>"


def verify(verifier: PythonVerifier, code: str, query: Query | None = None):
    return verifier.verify(query or add_query(), fenced(code))


def assert_fails(result, error_class: ErrorClass | None = None) -> None:
    assert result.verdict is Verdict.FAIL and result.score == 0.0, result
    if error_class is not None:
        assert result.error_class is error_class, result


# --- honest answers -------------------------------------------------------------------------


def test_correct_solution_passes_visible_and_hidden(verifier: PythonVerifier) -> None:
    result = verify(verifier, "def add(a, b):\n    return a + b")
    assert result.verdict is Verdict.PASS and result.score == 1.0
    assert [t.name for t in result.tests] == ["visible[0]", "visible[1]", "hidden[2]"]


def test_code_from_answer_without_fence(verifier: PythonVerifier) -> None:
    result = verifier.verify(add_query(), "<answer>def add(a, b): return a + b</answer>")
    assert result.verdict is Verdict.PASS


def test_wrong_solution_fails(verifier: PythonVerifier) -> None:
    assert_fails(verify(verifier, "def add(a, b):\n    return a - b"), ErrorClass.WRONG_ANSWER)


def test_lookup_table_of_visible_tests_fails_hidden(verifier: PythonVerifier) -> None:
    result = verify(verifier, "def add(a, b):\n    return {(1, 2): 3, (5, 5): 10}.get((a, b), 0)")
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert [t.passed for t in result.tests] == [True, True, False]
    assert result.detail.startswith("2/3 tests passed")


def test_partial_credit_is_opt_in() -> None:
    result = PythonVerifier(limits=LIMITS, partial_credit=True).verify(
        add_query(), fenced("def add(a, b):\n    return 3 if a == 1 else 0")
    )
    assert result.verdict is Verdict.PARTIAL and result.score == pytest.approx(1 / 3)


def test_registry_builds_the_python_verifier() -> None:
    assert isinstance(get_verifier("python"), PythonVerifier)


# --- error classes --------------------------------------------------------------------------


def test_syntax_error(verifier: PythonVerifier) -> None:
    assert_fails(verify(verifier, "def add(a, b:\n    return a"), ErrorClass.SYNTAX_ERROR)


def test_empty_code_is_no_answer(verifier: PythonVerifier) -> None:
    assert_fails(verifier.verify(add_query(), "```python\n   \n```"), ErrorClass.NO_ANSWER)
    assert_fails(verifier.verify(add_query(), ""), ErrorClass.NO_ANSWER)


def test_exception_is_runtime_error(verifier: PythonVerifier) -> None:
    assert_fails(verify(verifier, "def add(a, b):\n    raise ValueError('no')"), ErrorClass.RUNTIME_ERROR)


def test_missing_entry_point_is_runtime_error(verifier: PythonVerifier) -> None:
    assert_fails(verify(verifier, "def plus(a, b):\n    return a + b"), ErrorClass.RUNTIME_ERROR)


def test_bad_criteria_is_an_infrastructure_error_not_a_fail(verifier: PythonVerifier) -> None:
    query = Query("bad", "", {"type": "python", "entry_point": "add", "tests": [{"args": [1]}]})
    result = verifier.verify(query, fenced("def add(a): return a"))
    assert result.verdict is Verdict.ERROR and not result.scorable


def test_missing_sandbox_is_unavailable_not_a_fail(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bwrap, "TOOL_PATH", str(tmp_path))
    monkeypatch.setattr(bwrap, "_HOST", None)
    result = PythonVerifier(limits=LIMITS).verify(add_query(), fenced("def add(a, b): return a + b"))
    assert result.verdict is Verdict.UNAVAILABLE and "apt-get install bubblewrap" in result.detail


@pytest.mark.parametrize("kind", ["python", "stdio", "pytest"])
def test_without_a_sandbox_an_empty_answer_is_still_its_own_fail(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    """What the completion alone decides (no code) is decided before the sandbox is needed, in
    verify and verify_batch: a completion cannot turn its own fail into unscorable."""
    monkeypatch.setattr(bwrap, "TOOL_PATH", str(tmp_path))
    monkeypatch.setattr(bwrap, "_HOST", None)
    rows = {
        "python": {"entry_point": "add", "tests": [{"args": [1, 2], "expected": 3}]},
        "stdio": {"tests": [{"stdin": "", "stdout": "3"}]},
        "pytest": {"test_code": "def test_a():\n    assert add(1, 2) == 3\n", "expected_tests": 1},
    }
    verifier = {"python": PythonVerifier, "stdio": StdioVerifier, "pytest": PytestVerifier}[kind](limits=LIMITS)
    query = Query("q", "", {"type": kind, **rows[kind]})
    results = [verifier.verify(query, ""), *verifier.verify_batch([(query, "  "), (query, fenced("x = 1"))])]
    assert [(r.verdict, r.error_class) for r in results[:2]] == [(Verdict.FAIL, ErrorClass.NO_ANSWER)] * 2
    assert results[2].verdict is Verdict.UNAVAILABLE  # code to run, and no sandbox to run it in


# --- judging hacks --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos._exit(0)",
        "import sys\nsys.exit(0)",
        "def add(a, b):\n    import os\n    os._exit(0)",
        "def add(a, b):\n    import sys\n    sys.exit(0)",
        "def add(a, b):\n    raise SystemExit(0)",
    ],
    ids=["os_exit_at_import", "sys_exit_at_import", "os_exit_in_function", "sys_exit_in_function", "raise_systemexit"],
)
def test_exiting_early_never_passes(verifier: PythonVerifier, code: str) -> None:
    assert_fails(verify(verifier, code))


def test_object_whose_eq_is_always_true(verifier: PythonVerifier) -> None:
    code = (
        "class Anything:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
        "def add(a, b):\n    return Anything()"
    )
    assert_fails(verify(verifier, code), ErrorClass.WRONG_ANSWER)


@pytest.mark.parametrize(
    ("base", "build"),
    [
        ("int", "Sly(a + b)"),
        ("str", "Sly(a + b)"),
        ("float", "Sly(a + b)"),
        ("list", "Sly()"),
        ("dict", "Sly()"),
    ],
)
def test_builtin_subclass_result_is_rejected(verifier: PythonVerifier, base: str, build: str) -> None:
    code = (
        f"class Sly({base}):\n    def __eq__(self, other): return True\n    __hash__ = None\n"
        f"def add(a, b):\n    return {build}"
    )
    result = verify(verifier, code)
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert "non-plain" in result.tests[0].detail


def test_bool_is_not_int(verifier: PythonVerifier) -> None:
    query = Query("one", "", {"type": "python", "entry_point": "f", "tests": [{"args": [], "expected": 1}]})
    assert_fails(verify(verifier, "def f():\n    return True", query))


def test_printing_a_fake_success_sentinel(verifier: PythonVerifier) -> None:
    code = (
        'print(\'ALL TESTS PASSED\')\nprint(\'{"status": "ok", "results": [{"value": 3}]}\')\n'
        "import sys; sys.stderr.write('PASS\\n')\ndef add(a, b):\n    print('3 passed'); return None"
    )
    assert_fails(verify(verifier, code))


def test_forged_frame_on_the_channel_without_the_nonce(verifier: PythonVerifier) -> None:
    code = (
        "import os, json\nfd = int(os.environ['RLVR_CHANNEL_FD'])\n"
        "os.write(fd, json.dumps({'nonce': 'guess', 'status': 'ok', 'results': [{'value': 3}, {'value': 10}, {'value': 30}]}).encode())\n"
        "os._exit(0)"
    )
    assert_fails(verify(verifier, code), ErrorClass.PROTOCOL_VIOLATION)


def test_expected_values_are_nowhere_in_the_sandbox(verifier: PythonVerifier) -> None:
    """The answer is a marker only the host knows: the code searches files, env and argv for it."""
    marker = int("7" + "".join(str(secrets.randbelow(10)) for _ in range(17)))
    code = """
import os, sys, re
def add(a, b):
    blobs = [repr(dict(os.environ)).encode(), repr(sys.argv).encode()]
    for top in ['/sandbox', '/tmp', '/proc/self', '/proc/1']:
        for root, dirs, files in os.walk(top):
            for name in files:
                try:
                    with open(os.path.join(root, name), 'rb') as handle:
                        blobs.append(handle.read(1 << 20))
                except OSError:
                    pass
    for blob in blobs:
        for number in re.findall(rb'7[0-9]{17}', blob):
            return int(number)
    return -1
"""
    result = verify(verifier, code, add_query(hidden_expected=marker))
    assert_fails(result)
    assert str(marker) not in result.detail
    # Control: the same search does find the marker where it is present (in the code's own file).
    control = verify(
        verifier,
        code + f"# {marker}\n",
        Query("c", "", {"type": "python", "entry_point": "add", "tests": [{"args": [0, 0], "expected": marker}]}),
    )
    assert control.verdict is Verdict.PASS, control


# --- resource abuse and isolation -----------------------------------------------------------


def test_infinite_loop_is_timeout(verifier: PythonVerifier) -> None:
    result = verify(verifier, "def add(a, b):\n    while True: pass")
    assert_fails(result, ErrorClass.TIMEOUT)
    assert result.elapsed_s < 4.0


def test_sleeping_forever_is_timeout(verifier: PythonVerifier) -> None:
    result = verify(verifier, "import time\ndef add(a, b):\n    time.sleep(60)")
    assert_fails(result, ErrorClass.TIMEOUT)  # no CPU used: the wall clock catches it


def test_memory_hog_is_memory(verifier: PythonVerifier) -> None:
    assert_fails(verify(verifier, "def add(a, b):\n    return len(bytearray(4 * 1024**3))"), ErrorClass.MEMORY)


def test_huge_output_is_output_limit(verifier: PythonVerifier) -> None:
    assert_fails(verify(verifier, "def add(a, b):\n    while True: print('x' * 10000)"), ErrorClass.OUTPUT_LIMIT)


def test_fork_bomb_is_bounded(verifier: PythonVerifier) -> None:
    code = "import os\ndef add(a, b):\n    while True:\n        try: os.fork()\n        except OSError: pass"
    result = verify(verifier, code)
    assert_fails(result)
    assert result.elapsed_s < 4.0


def test_setsid_daemon_is_dead_after_verification(verifier: PythonVerifier) -> None:
    marker = f"rlvr-verifier-daemon-{secrets.token_hex(6)}"
    code = f"""
import os, sys, time
def add(a, b):
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            code = 'import time; print("daemon alive", flush=True); time.sleep(60)'
            os.execv(sys.executable, [sys.executable, '-c', code, {marker!r}])
        os._exit(0)
    time.sleep(0.5)
    return a + b
"""
    result = verify(verifier, code)
    # The daemon does not change the verdict: the answer is right. What matters is that it is gone.
    assert result.verdict is Verdict.PASS
    alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, marker)]
    assert alive == []


def _cmdline_has(proc_dir: Path, marker: str) -> bool:
    try:
        return marker.encode() in (proc_dir / "cmdline").read_bytes()
    except OSError:
        return False


def test_network_escape_never_passes(verifier: PythonVerifier) -> None:
    """The expected value is what a successful connection would return: it must not come back."""
    query = Query(
        "net",
        "",
        {
            "type": "python",
            "entry_point": "f",
            "tests": [
                {"args": ["127.0.0.1", 22], "expected": "connected"},
                {"args": ["1.1.1.1", 53], "expected": "connected"},
            ],
        },
    )
    code = (
        "import socket\ndef f(host, port):\n    try:\n        socket.create_connection((host, port), timeout=1)\n"
        "        return 'connected'\n    except OSError as e:\n        return type(e).__name__"
    )
    assert_fails(verify(verifier, code, query), ErrorClass.WRONG_ANSWER)


def test_writing_outside_the_tmpfs_never_passes(verifier: PythonVerifier) -> None:
    target = Path.cwd() / f"pwned-{secrets.token_hex(4)}"
    query = Query(
        "write",
        "",
        {
            "type": "python",
            "entry_point": "f",
            "tests": [{"args": [p], "expected": "written"} for p in ["/etc/pwned", str(target)]],
        },
    )
    code = "def f(path):\n    try:\n        open(path, 'w').write('x'); return 'written'\n    except OSError as e:\n        return type(e).__name__"
    assert_fails(verify(verifier, code, query), ErrorClass.WRONG_ANSWER)
    assert not target.exists()


def test_reading_host_files_never_passes(verifier: PythonVerifier) -> None:
    repo_file = Path.cwd() / "pyproject.toml"
    query = Query(
        "read",
        "",
        {
            "type": "python",
            "entry_point": "f",
            "tests": [{"args": [str(repo_file)], "expected": repo_file.read_text()[:100]}],
        },
    )
    code = "def f(path):\n    try:\n        return open(path).read()[:100]\n    except OSError as e:\n        return type(e).__name__"
    assert_fails(verify(verifier, code, query), ErrorClass.WRONG_ANSWER)


# --- comparison rules (pure) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "returned", "same"),
    [
        (3, 3, True),
        (1, True, False),  # bool is not int
        (True, 1, False),
        (3, 3.0, False),  # an int expected needs an int
        (0.3, 0.1 + 0.2, True),  # 0.30000000000000004: within rel 1e-9
        (0.3, 0.31, False),
        (2.0, 2, True),  # a float expected accepts an int of equal value
        (1.5, 10**400, False),  # too large for a float: not close, and no OverflowError
        ("1", 1, False),
        (None, None, True),
        ([1, [2, "a"]], [1, [2, "a"]], True),
        ([1, 2], [1, 2, 3], False),
        ({"a": 1}, {"a": 1}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"a": 1}, {"a": True}, False),
    ],
)
def test_same_value(expected: object, returned: object, same: bool) -> None:
    assert same_value(expected, returned) is same


def test_tuple_result_matches_list(verifier: PythonVerifier) -> None:
    query = Query("pair", "", {"type": "python", "entry_point": "f", "tests": [{"args": [2], "expected": [2, 4]}]})
    assert verify(verifier, "def f(x):\n    return (x, 2 * x)", query).verdict is Verdict.PASS
