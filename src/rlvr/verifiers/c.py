"""C programs: compiled with gcc and the query's flags INSIDE the sandbox, then judged like stdio.

Rows look like ``{"type": "c", "flags": ["-O2", "-Wall", "-Werror"], "tests": [{"stdin", "stdout"}],
"hidden_tests": [...]}``. The code is ``extract_code(completion, "c")``. One sandboxed process per
completion: the driver runs ``gcc FLAGS solution.c -o solution LIBS`` (gcc's toolchain lives in
``/usr``, bound read-only) under a compile timeout, then runs ``./solution`` once per test exactly
as ``rlvr.verifiers.stdio`` does. A compile error is ``fail`` with error class ``compile_error``
and the compiler's first error line as detail.

Flags come from the dataset, not the model, but they still pass an allow-list (``check_flag``):
only plain options that change what is compiled and how it is warned about. Anything that names
an output or input file, a tool to run, a plugin or a search path is rejected (``-o``, ``@file``,
``-B``, ``-specs``, ``-wrapper``, ``-fplugin``, ``-I``, ``-L``, ``-x``, ``-include``, ``-Wl,``...),
and the row is an ``error`` (its criteria are bad), never a fail for the completion.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxUnavailable, bwrap
from rlvr.types import Query
from rlvr.verifiers.stdio import Program, StdioCriteria, StdioVerifier

DEFAULT_LIMITS = SandboxLimits(wall_s=15.0, cpu_s=5, memory_mb=512, processes=16, output_bytes=1 << 20)
"""Per completion, compile and all tests together."""

COMPILE_TIMEOUT_S = 10.0

ALLOWED_FLAGS = (
    r"-O[0-3sgz]?|-Ofast",  # optimisation level
    r"-w|-pedantic|-pedantic-errors",  # warnings on/off
    r"-W(no-)?(error=)?[a-z0-9][a-z0-9+-]*(=[a-z0-9-]+)?",  # -Wall -Wextra -Werror -Wno-x -Werror=x -Wformat=2
    r"-std=(c|gnu)(89|90|99|11|17|18|2x|23)",  # language standard
    r"-f(no-)?[a-z][a-z0-9-]*",  # -fwrapv -fno-strict-aliasing (no "=value")
    r"-g[0-3]?",  # debug info
    r"-D[A-Za-z_][A-Za-z0-9_]*(=[A-Za-z0-9_]*)?|-U[A-Za-z_][A-Za-z0-9_]*",  # macros, plain values only
    r"-l[a-z][a-z0-9_]*|-pthread",  # link a system library (-lm)
)
"""Each flag must match one of these whole (``re.fullmatch``)."""

DENIED_F_PREFIXES = ("-fplugin", "-fno-plugin", "-fdump", "-fprofile", "-fauto-profile", "-fsave-optimization-record")
"""``-f`` options that load code or write files outside what the verifier reads back."""

_ALLOWED = re.compile("|".join(f"(?:{pattern})" for pattern in ALLOWED_FLAGS))


def check_flag(flag: object) -> None:
    """Raise ValueError unless ``flag`` is on the allow-list (see the module docstring)."""
    if not isinstance(flag, str) or not _ALLOWED.fullmatch(flag) or flag.startswith(DENIED_F_PREFIXES):
        raise ValueError(
            f"compiler flag {flag!r} is not allowed; allowed: -O*, -W*, -w, -pedantic*, "
            "-std=, -f* (no =value, no plugins/dumps/profiles), -g*, -D/-U, -l, -pthread"
        )


class CVerifier(StdioVerifier):
    """Verifier for ``{"type": "c", ...}`` rows."""

    name = "c"
    language = "c"
    self_check = (
        Query(
            "c-self-check",
            "",
            {"type": "c", "flags": ["-O2", "-Wall", "-Werror"], "tests": [{"stdin": "2\n", "stdout": "4\n"}]},
        ),
        '#include <stdio.h>\nint main(void) { int n; if (scanf("%d", &n) != 1) return 1; '
        'printf("%d\\n", 2 * n); return 0; }\n',
    )

    default_limits = DEFAULT_LIMITS

    def __init__(self, *, compile_timeout_s: float = COMPILE_TIMEOUT_S, **stdio: Any) -> None:
        """``stdio``: `StdioVerifier`'s options: limits (default ``DEFAULT_LIMITS``, compile and all
        tests together), test_timeout_s, max_stdout_bytes, partial_credit."""
        super().__init__(**stdio)
        self.compile_timeout_s = compile_timeout_s

    def criteria(self, verifier: dict[str, Any]) -> StdioCriteria:
        flags = verifier.get("flags", [])
        if not isinstance(flags, list):
            raise ValueError('"flags" must be a list of strings')
        for flag in flags:
            check_flag(flag)
        base = StdioCriteria.from_dict(verifier, self.max_stdout_bytes)
        return StdioCriteria(base.tests, base.num_visible, list(flags))

    def program(self, criteria: StdioCriteria, code: str) -> Program:
        gcc = shutil.which("gcc", path=bwrap.TOOL_PATH)
        if gcc is None:
            raise SandboxUnavailable("gcc is not installed: `apt-get install gcc`")
        libraries = [flag for flag in criteria.flags if flag.startswith("-l")]  # after the source, for the linker
        options = [flag for flag in criteria.flags if not flag.startswith("-l")]
        argv = [gcc, *options, "solution.c", "-o", "solution", *libraries]
        return Program(
            files={"/sandbox/solution.c": code.encode("utf-8", "replace")},
            run=["/sandbox/solution"],
            compile={"argv": argv, "timeout_s": self.compile_timeout_s},
        )
