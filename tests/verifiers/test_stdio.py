"""The stdio verifier, run for real in bubblewrap: whole outputs compared on the host, no false pass.

Every hostile case asserts "no false pass" and is bounded by the limits below (1 s per test).
"""

from __future__ import annotations

import secrets
import shutil

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.stdio import StdioVerifier, normalise_output

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
]

LIMITS = SandboxLimits(wall_s=5.0, cpu_s=2, memory_mb=256, processes=16, output_bytes=64 * 1024)


@pytest.fixture(scope="module")
def verifier() -> StdioVerifier:
    return StdioVerifier(limits=LIMITS, test_timeout_s=1.0, max_stdout_bytes=16 * 1024)


def count_query() -> Query:
    """Print 1..n, one per line; the hidden test is what a lookup table of visible tests misses."""
    return Query(
        "count",
        "",
        {
            "type": "stdio",
            "tests": [{"stdin": "3\n", "stdout": "1\n2\n3\n"}, {"stdin": "1\n", "stdout": "1\n"}],
            "hidden_tests": [{"stdin": "4\n", "stdout": "1\n2\n3\n4\n"}],
        },
    )


def fenced(code: str) -> str:
    return f"<think>loop</think><answer>\n```python\n{code}\n```\n</answer>"


def assert_fails(result, error_class: ErrorClass | None = None) -> None:
    assert result.verdict is Verdict.FAIL and result.score == 0.0, result
    if error_class is not None:
        assert result.error_class is error_class, result


# --- normalisation (pure) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("printed", "expected", "same"),
    [
        ("1\n2\n", "1\n2", True),  # trailing newline is a trailing blank line
        ("1  \r\n2\t\n\n\n", "1\n2\n", True),  # trailing spaces, CRLF, trailing blank lines
        (" 1\n2\n", "1\n2\n", False),  # leading whitespace counts
        ("1\n\n2\n", "1\n2\n", False),  # a blank line in the middle counts
        ("1 2\n", "1  2\n", False),  # inner whitespace counts
    ],
)
def test_normalise_output(printed: str, expected: str, same: bool) -> None:
    assert (normalise_output(printed) == normalise_output(expected)) is same


# --- honest and wrong answers -------------------------------------------------------------------

CORRECT = "n = int(input())\nfor i in range(1, n + 1):\n    print(i)"


def test_correct_program_passes_visible_and_hidden(verifier: StdioVerifier) -> None:
    result = verifier.verify(count_query(), fenced(CORRECT))
    assert result.verdict is Verdict.PASS and result.score == 1.0, result
    assert [t.name for t in result.tests] == ["visible[0]", "visible[1]", "hidden[2]"]


def test_registry_builds_the_stdio_verifier() -> None:
    assert isinstance(get_verifier("stdio"), StdioVerifier)


@pytest.mark.parametrize(
    "code",
    [
        "n = int(input())\nfor i in range(n): print(i)",  # wrong: 0..n-1
        "n = int(input())\nfor i in range(1, n + 2): print(i)",  # extra output
        "n = int(input())\nfor i in range(1, n): print(i)",  # missing output (a prefix)
        "n = int(input())\nprint(''.join(str(i) for i in range(1, n + 1))[:1])",  # prefix of the first line only
        "print()",  # nothing useful
    ],
    ids=["wrong", "extra-output", "missing-output", "prefix-only", "empty"],
)
def test_wrong_extra_missing_or_prefix_output_fails(verifier: StdioVerifier, code: str) -> None:
    assert_fails(verifier.verify(count_query(), fenced(code)), ErrorClass.WRONG_ANSWER)


def test_lookup_table_of_visible_tests_fails_hidden(verifier: StdioVerifier) -> None:
    code = "print({'3': '1\\n2\\n3', '1': '1'}[input().strip()])"
    result = verifier.verify(count_query(), fenced(code))
    assert_fails(result)
    assert [t.passed for t in result.tests] == [True, True, False]


def test_right_output_with_nonzero_exit_fails(verifier: StdioVerifier) -> None:
    result = verifier.verify(count_query(), fenced(CORRECT + "\nimport sys; sys.exit(1)"))
    assert_fails(result, ErrorClass.RUNTIME_ERROR)


def test_syntax_error(verifier: StdioVerifier) -> None:
    assert_fails(verifier.verify(count_query(), fenced("print(")), ErrorClass.SYNTAX_ERROR)


def test_empty_code_is_no_answer(verifier: StdioVerifier) -> None:
    assert_fails(verifier.verify(count_query(), "```python\n\n```"), ErrorClass.NO_ANSWER)


def test_bad_criteria_is_an_error_not_a_fail(verifier: StdioVerifier) -> None:
    query = Query("bad", "", {"type": "stdio", "tests": [{"stdin": "1"}]})
    result = verifier.verify(query, fenced(CORRECT))
    assert result.verdict is Verdict.ERROR and not result.scorable


# --- hacks and abuse ----------------------------------------------------------------------------


def test_printing_a_fake_success_sentinel(verifier: StdioVerifier) -> None:
    code = (
        "print('ALL TESTS PASSED')\nimport sys\nsys.stderr.write('PASS\\n')\n"
        "import os\nfor fd in range(3, 64):\n"
        '    try: os.write(fd, b\'{"status": "ok", "results": []}\')\n    except OSError: pass'
    )
    assert_fails(verifier.verify(count_query(), fenced(code)), ErrorClass.WRONG_ANSWER)


def test_expected_output_cannot_be_read(verifier: StdioVerifier) -> None:
    """Test 0 expects a marker only the host knows; test 1's stdin carries a second marker, which
    sits in the driver's memory while test 0 runs. The program searches the environment, every
    readable file under /sandbox and /tmp, and every other process's cmdline, environ and memory
    (the driver's included: non-dumpable, so /proc refuses), and
    prints the first marker it finds. Positive control: test 1 reads its marker from stdin."""
    secret, other_input = (f"RLVRMARK{secrets.token_hex(8)}" for _ in range(2))
    code = r"""
import os, re, sys
pattern = re.compile(rb"RLVRMARK[0-9a-f]{16}")
found = pattern.findall(sys.stdin.buffer.read())
blobs = [repr(os.environ).encode()]
for top in ("/sandbox", "/tmp"):
    for root, _, names in os.walk(top):
        for name in names:
            try: blobs.append(open(os.path.join(root, name), "rb").read())
            except OSError: pass
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue  # its own memory holds the marker it just read, once test 1 runs
    for part in ("cmdline", "environ"):
        try: blobs.append(open(f"/proc/{pid}/{part}", "rb").read())
        except OSError: pass
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        with open(f"/proc/{pid}/mem", "rb") as mem:
            for line in maps:
                span, perms = line.split()[:2]
                start, end = (int(x, 16) for x in span.split("-"))
                if perms.startswith("r") and end - start < 64 << 20:
                    try:
                        mem.seek(start); blobs.append(mem.read(end - start))
                    except (OSError, ValueError, OverflowError): pass
    except OSError: pass
for blob in blobs:
    found += pattern.findall(blob)
print(found[0].decode() if found else "")
"""
    query = Query(
        "secret",
        "",
        {"type": "stdio", "tests": [{"stdin": "", "stdout": secret}, {"stdin": other_input, "stdout": other_input}]},
    )
    result = StdioVerifier(limits=LIMITS, test_timeout_s=4.0).verify(query, fenced(code))
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert [t.passed for t in result.tests] == [False, True]  # the search works when the data is there
    assert result.tests[0].detail == "printed nothing"  # neither marker was reachable from test 0


def test_huge_output_is_output_limit(verifier: StdioVerifier) -> None:
    result = verifier.verify(count_query(), fenced("while True: print('x' * 10000)"))
    assert_fails(result, ErrorClass.OUTPUT_LIMIT)
    assert result.elapsed_s < 4.0


def test_infinite_loop_is_timeout(verifier: StdioVerifier) -> None:
    result = verifier.verify(count_query(), fenced("while True: pass"))
    assert_fails(result, ErrorClass.TIMEOUT)
    assert [t.detail.startswith("not run") for t in result.tests] == [False, True, True]
    assert result.elapsed_s < 3.0


def test_killing_the_driver_never_passes(verifier: StdioVerifier) -> None:
    code = CORRECT + "\nimport os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
    assert_fails(verifier.verify(count_query(), fenced(code)), ErrorClass.PROTOCOL_VIOLATION)


def test_memory_hog_is_memory(verifier: StdioVerifier) -> None:
    assert_fails(verifier.verify(count_query(), fenced("x = bytearray(4 * 1024**3)")), ErrorClass.MEMORY)
