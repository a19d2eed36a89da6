"""The c verifier, run for real: gcc inside bubblewrap with the query's flags, then stdio tests."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path

import pytest

from rlvr.sandbox import SandboxLimits, bwrap
from rlvr.types import ErrorClass, Query, Verdict
from rlvr.verifiers.c import CVerifier, check_flag
from rlvr.verifiers.registry import get_verifier

SANDBOX_MARKS = (
    pytest.mark.sandbox,
    pytest.mark.skipif(
        shutil.which("bwrap", path=bwrap.TOOL_PATH) is None,
        reason="bubblewrap is not installed (apt-get install bubblewrap)",
    ),
    pytest.mark.skipif(
        shutil.which("gcc", path=bwrap.TOOL_PATH) is None, reason="gcc is not installed (apt-get install gcc)"
    ),
)


def sandboxed(test):
    """The real-compile tests: they need bubblewrap and gcc, and are skipped, with the reason, without."""
    for mark in SANDBOX_MARKS:
        test = mark(test)
    return test


LIMITS = SandboxLimits(wall_s=8.0, cpu_s=3, memory_mb=512, processes=16, output_bytes=64 * 1024)
FLAGS = ["-O2", "-Wall", "-Werror"]


@pytest.fixture(scope="module")
def verifier() -> CVerifier:
    return CVerifier(limits=LIMITS, test_timeout_s=1.0, compile_timeout_s=5.0)


def add_query(flags: list[str] | None = None) -> Query:
    return Query(
        "add",
        "",
        {
            "type": "c",
            "flags": FLAGS if flags is None else flags,
            "tests": [{"stdin": "1 2\n", "stdout": "3\n"}, {"stdin": "5 5\n", "stdout": "10\n"}],
            "hidden_tests": [{"stdin": "-7 20\n", "stdout": "13\n"}],
        },
    )


def fenced(code: str) -> str:
    return f"<think>sum</think><answer>\n```c\n{code}\n```\n</answer>"


def add_program(expression: str = "a + b") -> str:
    return (
        '#include <stdio.h>\nint main(void) {\n    int a, b;\n    if (scanf("%d %d", &a, &b) != 2) return 1;\n'
        f'    printf("%d\\n", {expression});\n    return 0;\n}}'
    )


def assert_fails(result, error_class: ErrorClass | None = None) -> None:
    assert result.verdict is Verdict.FAIL and result.score == 0.0, result
    if error_class is not None:
        assert result.error_class is error_class, result


# --- flag allow-list (pure) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "flag",
    [
        "-O2",
        "-O",
        "-Os",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-Wno-unused-variable",
        "-Werror=vla",
        "-Wformat=2",
        "-w",
        "-pedantic-errors",
        "-std=c11",
        "-std=gnu17",
        "-fwrapv",
        "-fno-strict-aliasing",
        "-g",
        "-DNDEBUG",
        "-DN=10",
        "-UX",
        "-lm",
        "-pthread",
    ],
)
def test_allowed_flags(flag: str) -> None:
    check_flag(flag)


@pytest.mark.parametrize(
    "flag",
    [
        "-o",
        "-o/tmp/x",
        "@/etc/passwd",
        "-B/tmp",
        "-specs=/tmp/s",
        "-wrapper",
        "-fplugin=/tmp/p.so",
        "-fplugin-arg-x",
        "-fdump-tree-all",
        "-fprofile-generate",
        "-Wl,-rpath,/tmp",
        "-Wa,-o,/tmp/x",
        "-Wp,-MD,/tmp/x",
        "-I/etc",
        "-L/tmp",
        "-xc",
        "-include/etc/passwd",
        "--output=x",
        "solution.c",
        "-D'X=1;'",
        "-std=c11 -o x",
        "",
        3,
    ],
)
def test_forbidden_flag_is_rejected(flag: object) -> None:
    with pytest.raises(ValueError, match="not allowed"):
        check_flag(flag)


@sandboxed
def test_forbidden_flag_makes_the_row_an_error_not_a_fail() -> None:
    result = CVerifier(limits=LIMITS).verify(add_query(["-O2", "-o", "/tmp/x"]), fenced(add_program()))
    assert result.verdict is Verdict.ERROR and not result.scorable
    assert "'-o' is not allowed" in result.detail


# --- real compiles ------------------------------------------------------------------------------


@sandboxed
def test_correct_program_passes(verifier: CVerifier) -> None:
    result = verifier.verify(add_query(), fenced(add_program()))
    assert result.verdict is Verdict.PASS and result.score == 1.0, result
    assert [t.name for t in result.tests] == ["visible[0]", "visible[1]", "hidden[2]"]


@sandboxed
def test_registry_builds_the_c_verifier() -> None:
    assert isinstance(get_verifier("c"), CVerifier)


@sandboxed
def test_wrong_program_fails(verifier: CVerifier) -> None:
    assert_fails(verifier.verify(add_query(), fenced(add_program("a - b"))), ErrorClass.WRONG_ANSWER)


@sandboxed
def test_compile_error_under_werror(verifier: CVerifier) -> None:
    code = add_program().replace("int a, b;", "int a, b, unused;")
    result = verifier.verify(add_query(), fenced(code))
    assert_fails(result, ErrorClass.COMPILE_ERROR)
    assert "error:" in result.detail and "unused" in result.detail
    assert verifier.verify(add_query(["-O2"]), fenced(code)).verdict is Verdict.PASS  # the flags decide


@sandboxed
def test_crash_is_runtime_error(verifier: CVerifier) -> None:
    code = '#include <stdio.h>\nint main(void) { volatile int *p = 0; *p = 1; printf("3\\n"); return 0; }'
    assert_fails(verifier.verify(add_query(), fenced(code)), ErrorClass.RUNTIME_ERROR)


@sandboxed
def test_infinite_loop_is_timeout(verifier: CVerifier) -> None:
    result = verifier.verify(add_query(), fenced("int main(void) { for (;;) {} }"))
    assert_fails(result, ErrorClass.TIMEOUT)
    assert result.elapsed_s < 4.0


@sandboxed
def test_cannot_write_outside_the_tmpfs(verifier: CVerifier) -> None:
    """Each test's stdin names a path; the program prints "written" if it could create it. Positive
    control: /sandbox (the private tmpfs) is writable."""
    outside = Path.cwd() / f"pwned-{secrets.token_hex(4)}"
    code = (
        '#include <stdio.h>\nint main(void) {\n    char path[4096];\n    if (scanf("%4095s", path) != 1) return 1;\n'
        '    FILE *f = fopen(path, "w");\n    if (f && fputs("x", f) >= 0 && fclose(f) == 0) puts("written");\n'
        '    else puts("refused");\n    return 0;\n}'
    )
    targets = ["/sandbox/inside", "/etc/pwned", "/usr/pwned", str(outside)]
    query = Query(
        "write", "", {"type": "c", "flags": FLAGS, "tests": [{"stdin": path, "stdout": "written"} for path in targets]}
    )
    result = verifier.verify(query, fenced(code))
    assert_fails(result, ErrorClass.WRONG_ANSWER)
    assert [t.passed for t in result.tests] == [True, False, False, False]
    assert not outside.exists() and not Path("/etc/pwned").exists() and not Path("/usr/pwned").exists()
