"""Build coq_honest.jsonl: proofs written outside this project, each a coq row with its source.

    git clone https://github.com/coq/coq /tmp/coq && git -C /tmp/coq checkout V8.16.1
    git clone https://github.com/coq-community/coq-art /tmp/coq-art && \\
        git -C /tmp/coq-art checkout 02f7d1f032961edbb696d7ae992a92bc20aede4f
    .venv/bin/python tests/verifiers/corpus/build_coq_honest.py --coq /tmp/coq --coq-art /tmp/coq-art

Sources: Coq 8.16.1's standard library (``theories/``) and test suite (``test-suite/success``), and
the exercise solutions of Bertot and Castéran's textbook "Interactive Theorem Proving and Program
Development: Coq'Art" (coq-community/coq-art), all LGPL-2.1. An item is a named lemma at the top
level of a file (``Lemma``, ``Theorem``, ... ``NAME ... : TYPE.``) with its proof as written, from
the sentence after the statement to the closing ``Qed.``/``Defined.``. Its preamble:

- standard library: the file's own ``Require``/``Open Scope``/``Import`` lines before the lemma and
  ``Require Import`` of the file itself (earlier lemmas, global hints and tactics come from there);
- test suite and textbook: every top-level sentence of the file before the lemma, earlier proofs
  included (these files define what their lemmas use).

An item is kept only if ``coqc`` (outside the sandbox; these are trusted files) accepts preamble,
statement and proof, and its ``axioms`` are what ``Print Assumptions`` lists there: the row allows
what the honest proof needs. Which items are taken per file is fixed below, so the file is
reproducible; the selection knows nothing of the verifier.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rlvr.verifiers.coq import CoqCriteria
from rlvr.verifiers.coq_sentences import CoqSyntaxRefused, split

COQ_REF = "V8.16.1"
COQ_ART_REF = "02f7d1f032961edbb696d7ae992a92bc20aede4f"
LIBRARY = {
    "Arith/Factorial": 8, "Arith/Compare_dec": 6, "Arith/Div2": 6, "Arith/EqNat": 6, "Arith/Peano_dec": 4,
    "Arith/Wf_nat": 6, "Arith/Cantor": 6, "Arith/Euclid": 4, "Arith/Even": 6, "Bool/Bool": 14, "Bool/BoolOrder": 6,
    "Bool/Sumbool": 4, "Bool/Zerob": 4, "Bool/IfProp": 4, "ZArith/Zcomplements": 4, "ZArith/Zeven": 6,
    "ZArith/Zorder": 8, "ZArith/Zmisc": 3, "ZArith/Zpow_facts": 5, "ZArith/Znumtheory": 6, "ZArith/Zabs": 6,
    "Lists/List": 10, "Logic/Classical_Prop": 5, "Logic/Decidable": 5, "Logic/Eqdep_dec": 3,
    "Sorting/Permutation": 6, "Sorting/Sorted": 3, "QArith/Qabs": 4, "QArith/Qminmax": 3, "Reals/RIneq": 5,
    "Reals/Rbasic_fun": 3, "PArith/Pnat": 4, "NArith/Ndist": 3,
}  # fmt: skip
"""Files of the standard library and how many lemmas to take from each (spread evenly over it)."""
TEST_SUITE = (
    "Tauto Decompose Injection Inversion Discriminate apply auto autorewrite bullet BracketsWithGoalSelector "
    "goal_selector destruct cc contradiction dependentind eauto forward LraTest Field RecTutorial Generalize intros "
    "induct ltac remember replace rewrite set specialize subst unfold tryif refine simpl change"
).split()
"""test-suite/success files about tactics; the first two valid lemmas of each."""
TEXTBOOK_CHAPTERS = tuple(f"ch{n}_" for n in range(1, 10))
"""Coq'Art chapters 1-9 (logic, inductive types, tactics, inductive predicates, specifications);
the first valid lemma of each file."""

STATEMENT_WORDS = {"Lemma", "Theorem", "Fact", "Remark", "Corollary", "Proposition", "Example"}
CLOSERS = {("Qed", "."), ("Defined", ".")}
GIVE_UPS = {("Admitted", "."), ("Abort", "."), ("Abort", "All", ".")}


def git_show(repo: Path, ref: str, path: str) -> str:
    shown = subprocess.run(["git", "-C", str(repo), "show", f"{ref}:{path}"], capture_output=True, check=True)
    return shown.stdout.decode("utf-8", "replace")


def top_level_lemmas(text: str) -> list[dict]:
    """(statement, proof, the top-level sentences before it, line) of each named lemma outside any
    section or module whose proof ends with Qed or Defined."""
    try:
        sentences = [(s, text[s.tokens[0].start : s.tokens[-1].end]) for s in split(text)]
    except CoqSyntaxRefused:
        return []
    found, context, depth, index = [], [], 0, 0
    while index < len(sentences):
        sentence, raw = sentences[index]
        words = [w for w in sentence.words if w not in ("Local", "Global", "Polymorphic")]
        if words and words[0] in ("Section", "Module") and ":=" not in words:
            depth += 1
        elif words and words[0] == "End":
            depth = max(depth - 1, 0)
        elif words and words[0] in STATEMENT_WORDS and depth == 0:
            end = index + 1
            while end < len(sentences) and sentences[end][0].words not in CLOSERS | GIVE_UPS:
                if sentences[end][0].words[0] in STATEMENT_WORDS:
                    break
                end += 1
            if end < len(sentences) and sentences[end][0].words in CLOSERS and end > index + 1:
                proof = text[sentences[index + 1][0].tokens[0].start : sentences[end][0].tokens[-1].end]
                line = text[: sentence.tokens[0].start].count("\n") + 1
                found.append({"statement": raw, "proof": proof, "context": list(context), "line": line})
                context.append(text[sentence.tokens[0].start : sentences[end][0].tokens[-1].end])
                index = end + 1
                continue
        context.append(raw)
        index += 1
    return found


def spread(items: list, count: int) -> list:
    if len(items) <= count:
        return items
    return [items[int(k * len(items) / count)] for k in range(count)]


def coqc_axioms(item: dict) -> list[str] | None:
    """The axioms ``Print Assumptions`` lists after coqc checks the item, or None if coqc refuses it."""
    try:
        name = CoqCriteria.from_dict(item).name
    except ValueError:
        return None
    source = (
        f"{item['preamble']}\nModule M.\n{item['statement']}\n{item['proof']}\nEnd M.\nPrint Assumptions M.{name}.\n"
    )
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "T.v").write_text(source)
        try:
            run = subprocess.run(["coqc", "-q", "T.v"], cwd=folder, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return None
    if run.returncode != 0:
        return None
    if "Closed under the global context" in run.stdout:
        return []
    report = run.stdout.split("Axioms:", 1)[-1]
    return re.findall(r"^([^\s:]+)(?: :|$)", report, re.MULTILINE)


def candidates(coq: Path, coq_art: Path) -> list[tuple[list[dict], int]]:
    """Per file, in a fixed order: its candidate items and how many valid ones to keep."""
    files = []
    for module, count in LIBRARY.items():
        path = f"theories/{module}.v"
        items = []
        for lemma in spread(top_level_lemmas(git_show(coq, COQ_REF, path)), count):
            keep = [c for c in lemma["context"] if re.match(r"(Require|From|Local Open|Open|Import|Export)\b", c)]
            items.append(
                _item(
                    "coq/coq",
                    COQ_REF,
                    path,
                    lemma,
                    "\n".join([*keep, f"Require Import Coq.{module.replace('/', '.')}."]),
                )
            )
        files.append((items, count))
    for name in TEST_SUITE:
        path = f"test-suite/success/{name}.v"
        lemmas = top_level_lemmas(git_show(coq, COQ_REF, path))
        files.append(([_item("coq/coq", COQ_REF, path, lemma, "\n".join(lemma["context"])) for lemma in lemmas], 2))
    listed = subprocess.run(
        ["git", "-C", str(coq_art), "ls-tree", "-r", "--name-only", COQ_ART_REF], capture_output=True, text=True
    )
    for path in listed.stdout.split():
        if path.endswith(".v") and path.startswith(TEXTBOOK_CHAPTERS):
            lemmas = top_level_lemmas(git_show(coq_art, COQ_ART_REF, path))
            files.append(
                (
                    [
                        _item("coq-community/coq-art", COQ_ART_REF, path, lemma, "\n".join(lemma["context"]))
                        for lemma in lemmas
                    ],
                    1,
                )
            )
    return files


def _item(repo: str, ref: str, path: str, lemma: dict, preamble: str) -> dict:
    prefix = "coqart" if repo.endswith("coq-art") else "coq"
    source = {"repo": repo, "ref": ref, "path": path, "line": lemma["line"]}
    return {"id": f"{prefix}-{Path(path).stem}-{lemma['line']}", "source": source, "preamble": preamble,
            "statement": lemma["statement"], "proof": lemma["proof"]}  # fmt: skip


def first_valid(file: tuple[list[dict], int]) -> list[dict]:
    """The first ``count`` items of a file that coqc accepts, each with its axioms."""
    items, count = file
    kept = []
    for item in items:
        if len(kept) == count:
            break
        axioms = coqc_axioms(item)
        if axioms is not None:
            kept.append({**item, "axioms": axioms})
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coq", type=Path, required=True, help="a clone of github.com/coq/coq")
    parser.add_argument("--coq-art", type=Path, required=True, help="a clone of github.com/coq-community/coq-art")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("coq_honest.jsonl"))
    args = parser.parse_args()
    files = candidates(args.coq, args.coq_art)
    with ThreadPoolExecutor(2) as pool:
        kept = [item for chosen in pool.map(first_valid, files) for item in chosen]
    args.out.write_text("".join(json.dumps(item, ensure_ascii=False) + "\n" for item in kept))
    print(f"{len(kept)} items from {sum(1 for chosen in files if chosen[0])} files -> {args.out}")


if __name__ == "__main__":
    main()
