"""Lean 4 proofs, compiled by ``lean`` in the bubblewrap sandbox when a toolchain is on PATH.

Rows look like ``{"type": "lean", "statement": "theorem two_add_two : 2 + 2 = 4",
"preamble": "open Nat"}`` (``preamble`` optional, core Lean 4 only: no Mathlib). The completion's
proof is the last ```` ```lean ```` block, else its ``<answer>``: what follows ``:=``, e.g.
``by decide``. The host writes

    {preamble}
    namespace Rlvr_{nonce}
    {statement} :=
    {proof}
    end Rlvr_{nonce}
    #print axioms Rlvr_{nonce}.{name}

and passes the proof only if ``lean`` exits 0, prints no error, and prints exactly one axioms
report for that (nonce-named) theorem listing nothing beyond ``propext``, ``Classical.choice`` and
``Quot.sound``.

Before any of that, on every path (``verify`` and ``verify_batch``, so ``rlvr verify`` and the
trainer too) and with or without a toolchain, the proof text is screened: a bad row is ``error``, no
proof is ``no_answer``, and a proof naming a word of ``BANNED_WORDS``, a ``#command`` or an
attribute (``@[...]``) fails as ``protocol_violation``. Only proofs that pass the screen meet the
self-check and ``lean``, so without a toolchain only they are ``unavailable``.

Where no ``lean`` is on PATH (as on the machine this was written on, which can install none), or
it lives outside the sandbox's read-only binds (``/usr``), every screened proof is ``unavailable``
with the reason. The compiling path has never run here: docs/verifiers.md says so.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
from dataclasses import dataclass
from typing import Any

from rlvr.sandbox import SandboxLimits, SandboxRun, SandboxUnavailable, run_untrusted
from rlvr.types import ErrorClass, Query, Verdict, VerifierResult
from rlvr.verifiers._text import clip
from rlvr.verifiers.base import fail, unavailable
from rlvr.verifiers.proof_rows import TheoremCriteria, fenced_proof, read_theorem
from rlvr.verifiers.sandboxed import SandboxedVerifier

DEFAULT_LIMITS = SandboxLimits(wall_s=30.0, cpu_s=20, memory_mb=8192, processes=16, output_bytes=1 << 20)
"""Lean maps its .olean libraries into memory, hence the large address-space cap."""

SANDBOX_PREFIXES = ("/usr/",)
"""Where a toolchain must live to be visible inside the sandbox (``rlvr.sandbox.bwrap`` binds /usr)."""

STANDARD_AXIOMS = frozenset({"propext", "Classical.choice", "Quot.sound"})

BANNED_WORDS = (
    # proofs by fiat, and the compiler's own axiom
    "sorry", "admit", "sorryAx", "axiom", "lcProof",
    # trusting the compiler instead of the kernel: native_decide, bv_decide, and the axioms and
    # constants behind them (Init/Core.lean)
    "native_decide", "bv_decide", "ofReduceBool", "ofReduceNat", "reduceBool", "reduceNat", "trustCompiler",
    "implemented_by", "extern", "unsafe", "opaque",
    # options and imports that change what is checked (`set_option debug.skipKernelTC true in`)
    "import", "set_option", "skipKernelTC",
    # commands and terms that run code while elaborating: an elaborator defined after the proof
    # could answer the host's `#print axioms` with a fake report and exit 0
    "elab", "elab_rules", "macro", "macro_rules", "syntax", "declare_syntax_cat", "notation", "infix",
    "infixl", "infixr", "run_cmd", "run_tac", "run_elab", "run_meta", "by_elab", "simproc", "dsimproc",
    "initialize", "builtin_initialize", "attribute",
)  # fmt: skip
"""Refused as whole words, qualified or not (``Lean.ofReduceBool`` is refused)."""

BANNED_TACTIC_WORDS = ("stop", "native")
"""Refused unless qualified, where they are other names (``Std.Range.stop``): ``stop`` is
``repeat sorry`` (Init/Tactics.lean); ``decide +native`` and ``native := true`` are native_decide."""

_WORD_END = r"(?![\w'!?])"
_BANNED = re.compile(
    rf"(?<![\w'])({'|'.join(map(re.escape, BANNED_WORDS))}){_WORD_END}"
    rf"|(?<![\w'.])({'|'.join(BANNED_TACTIC_WORDS)}){_WORD_END}"
    r"|(#[A-Za-z_]+)|(@\[)"
)
"""Whole words (``sorry_free`` is fine; ``x!`` and ``x?`` are other names in Lean); any
``#command`` (``#eval``, ``#print``, ``#exit``); any attribute ``@[...]`` (``@[extern]``,
``@[implemented_by]``, ``@[command_elab]``). A proof is one term after ``:=``, so an honest one
needs none of them; they are refused in comments too."""

_STATEMENT = re.compile(r"\s*theorem\s+([A-Za-z_][\w.']*)[\s({\[:]", re.ASCII)
_FENCE = re.compile(r"```[ \t]*(?:lean4|lean)[ \t]*\r?\n(.*?)```", re.DOTALL)

SELF_CHECK = Query("lean-self-check", "", {"type": "lean", "statement": "theorem rlvr_self_check : 2 + 2 = 4"})
SELF_CHECK_PROOF = "<answer>by decide</answer>"


@dataclass(frozen=True)
class LeanCriteria(TheoremCriteria):
    """The ``verifier`` object of a lean row."""

    @classmethod
    def from_dict(cls, criteria: dict[str, Any]) -> LeanCriteria:
        """Validated criteria; a ValueError says which key is wrong."""
        return cls(*read_theorem(criteria, _STATEMENT, "theorem NAME ... : TYPE", "Lean", name_group=1))


def banned_tokens(proof: str) -> list[str]:
    """The banned words and ``#commands`` in ``proof``, in order of appearance."""
    return [match.group(0) for match in _BANNED.finditer(proof)]


def extract_proof(completion: str) -> str:
    """The last ```` ```lean ```` block, else the ``<answer>`` content, else ""."""
    return fenced_proof(completion, _FENCE)


def find_lean() -> str:
    """The real path of ``lean`` on PATH; SandboxUnavailable says why there is none usable."""
    found = shutil.which("lean")
    if found is None:
        raise SandboxUnavailable(
            "no Lean 4 toolchain: `lean` is not on PATH (install one with elan, "
            "https://github.com/leanprover/elan, into /usr/local)"
        )
    real = os.path.realpath(found)
    if not real.startswith(SANDBOX_PREFIXES):
        raise SandboxUnavailable(
            f"`lean` resolves to {real}, outside the sandbox's read-only binds "
            f"({', '.join(SANDBOX_PREFIXES)}): install the toolchain under /usr/local"
        )
    return real


class LeanVerifier(SandboxedVerifier):
    """Verifier for ``{"type": "lean", ...}`` rows (see the module docstring)."""

    name = "lean"
    self_check = (SELF_CHECK, SELF_CHECK_PROOF)
    answer_noun = "proof"

    def __init__(self, *, limits: SandboxLimits = DEFAULT_LIMITS) -> None:
        self.limits = limits

    def _answer(self, completion: str) -> str:
        return extract_proof(completion)

    def _prepare(self, query: Query, completion: str) -> VerifierResult | tuple[LeanCriteria, str]:
        """A result when the row or the proof text (banned words, commands, attributes) already
        decides, before any toolchain lookup, so a refused proof fails alike with or without
        ``lean``; else (criteria, proof)."""
        prepared = self._criteria_and_answer(query, completion, LeanCriteria.from_dict)
        if isinstance(prepared, VerifierResult):
            return prepared
        banned = banned_tokens(prepared[1])
        if banned:
            return fail(ErrorClass.PROTOCOL_VIOLATION, clip(f"proof uses banned {', '.join(dict.fromkeys(banned))}"))
        return prepared

    def _run_prepared(self, query: Query, prepared: tuple[LeanCriteria, str]) -> VerifierResult:
        criteria, proof = prepared
        try:
            lean = find_lean()
            namespace = f"Rlvr_{secrets.token_hex(8)}"
            source = (
                f"{criteria.preamble}\nnamespace {namespace}\n{criteria.statement} :=\n{proof}\n"
                f"end {namespace}\n#print axioms {namespace}.{criteria.name}\n"
            )
            run = run_untrusted(
                [lean, "/sandbox/Proof.lean"], files={"/sandbox/Proof.lean": source.encode()}, limits=self.limits
            )
        except SandboxUnavailable as error:
            return unavailable(str(error))
        return self._judge(run, f"{namespace}.{criteria.name}")

    def _judge(self, run: SandboxRun, qualified_name: str) -> VerifierResult:
        if run.timed_out:
            return fail(ErrorClass.TIMEOUT, f"lean killed after {self.limits.wall_s:g} s wall clock")
        if run.output_truncated:
            return fail(ErrorClass.OUTPUT_LIMIT, f"killed: {run.killed_reason}")
        output = (run.stdout + run.stderr).decode("utf-8", "replace")
        errors = [line for line in output.splitlines() if "error:" in line]
        if run.exit_code != 0 or errors:
            return fail(ErrorClass.COMPILE_ERROR, clip(errors[0] if errors else f"lean exit status {run.exit_code}"))
        report = rf"'{re.escape(qualified_name)}' (depends on axioms: \[([^\]]*)\]|does not depend on any axioms)"
        reports = re.findall(report, output)
        if len(reports) != 1:
            return fail(ErrorClass.PROTOCOL_VIOLATION, f"expected one axioms report, found {len(reports)}")
        axioms = {axiom.strip() for axiom in reports[0][1].split(",") if axiom.strip()}
        extra = sorted(axioms - STANDARD_AXIOMS)
        if extra:
            return fail(ErrorClass.WRONG_ANSWER, clip(f"proof depends on non-standard axioms: {', '.join(extra)}"))
        return VerifierResult(Verdict.PASS, 1.0, ErrorClass.NONE, f"proved using {sorted(axioms) or 'no axioms'}")
