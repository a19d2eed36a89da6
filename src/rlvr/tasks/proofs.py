"""Generated Coq lemmas with held-out statements: boolean identities, facts about `+` on nat, and
list facts, each a `coq` row (rlvr.verifiers.coq) that needs core Coq only (no preamble, so a
check costs milliseconds).

Five families, each with the proof that closes every member (``reference_proof``):

- ``bool``: ``forall a b : bool, E1 = E2`` where E2 is E1 rewritten by a true identity (De Morgan,
  commutativity, double negation, absorption, ...): ``intros a b. destruct a, b; reflexivity.``
- ``add_left``: ``forall n : nat, 3 + n = S (S (S n))``: ``intros n. reflexivity.`` (``+``
  recurses on its left argument, so this is computation).
- ``add_right``: ``forall n : nat, n + 2 = S (S n)``: computation stops at ``n``; it takes
  induction: ``intros n. induction n as [|i IH]. reflexivity. simpl. rewrite IH. reflexivity.``
  (``rewrite <- IH`` when the equation is written the other way round).
- ``length_cons``: ``forall l : list nat, length (4 :: 1 :: l) = S (S (length l))``:
  ``intros l. reflexivity.``
- ``app_nil``: ``forall l : list T, l ++ nil = l`` for an element type T: induction on l.

So a prover must tell computation from induction by the statement's shape. Statements are split
into train and held-out by a hash of their text, as arith splits expressions: a held-out statement
is never seen in training.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

from rlvr.tasks.arith import split_of  # the statement's hash decides its split, as an expression's does
from rlvr.types import Query

FAMILIES = ("bool", "add_left", "add_right", "length_cons", "app_nil")

INDUCTION = "induction {v} as [|{h} IH]. reflexivity. simpl. {rewrite}. reflexivity."
"""The induction proof of add_right and app_nil, after ``intros {v}.``; {h} names what the
successor case binds (the predecessor; a list's head and tail), {rewrite} is ``rewrite IH`` or
``rewrite <- IH`` by the equation's orientation."""

_BOOL_VARS = ("a", "b", "c")


def _bool_expr(rng: random.Random, variables: tuple[str, ...], depth: int) -> str:
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(variables)
    op = rng.choice(("andb", "orb", "negb"))
    if op == "negb":
        return f"negb ({_bool_expr(rng, variables, depth - 1)})"
    return f"{op} ({_bool_expr(rng, variables, depth - 1)}) ({_bool_expr(rng, variables, depth - 1)})"


_IDENTITIES: tuple[Callable[[str, str], tuple[str, str]], ...] = (
    lambda x, y: (f"negb (andb ({x}) ({y}))", f"orb (negb ({x})) (negb ({y}))"),
    lambda x, y: (f"negb (orb ({x}) ({y}))", f"andb (negb ({x})) (negb ({y}))"),
    lambda x, y: (f"andb ({x}) ({y})", f"andb ({y}) ({x})"),
    lambda x, y: (f"orb ({x}) ({y})", f"orb ({y}) ({x})"),
    lambda x, y: (f"negb (negb ({x}))", x),
    lambda x, y: (f"orb ({x}) (andb ({x}) ({y}))", x),
    lambda x, y: (f"andb ({x}) (orb ({x}) ({y}))", x),
)
"""Each maps two subterms to a true equation between two boolean terms."""


def _bool(rng: random.Random) -> tuple[str, str]:
    variables = _BOOL_VARS[: rng.choice((2, 3))]
    x, y = _bool_expr(rng, variables, 1), _bool_expr(rng, variables, 1)
    left, right = rng.choice(_IDENTITIES)(x, y)
    binder = " ".join(variables)
    proof = f"intros {binder}. destruct {', '.join(variables)}; reflexivity."
    return f"forall {binder} : bool, {left} = {right}", proof


def _succ(k: int, inner: str) -> str:
    return f"{'S (' * k}{inner}{')' * k}"


_NAT_VARS = "nmkpqxy"


def _oriented(rng: random.Random, left: str, right: str) -> tuple[str, str]:
    """(``left = right`` or ``right = left``, the rewrite the induction step needs in that
    orientation: ``rewrite IH`` turns the left side's recursive call into the right side, and
    ``rewrite <- IH`` the reverse)."""
    return (f"{left} = {right}", "rewrite IH") if rng.random() < 0.5 else (f"{right} = {left}", "rewrite <- IH")


def _add_left(rng: random.Random) -> tuple[str, str]:
    k, v = rng.randint(0, 20), rng.choice(_NAT_VARS)
    equation, _ = _oriented(rng, f"{k} + {v}", _succ(k, v))
    return f"forall {v} : nat, {equation}", f"intros {v}. reflexivity."


def _add_right(rng: random.Random) -> tuple[str, str]:
    k, v = rng.randint(0, 20), rng.choice(_NAT_VARS)
    equation, rewrite = _oriented(rng, f"{v} + {k}", _succ(k, v))
    return f"forall {v} : nat, {equation}", f"intros {v}. {INDUCTION.format(v=v, h='i', rewrite=rewrite)}"


def _length_cons(rng: random.Random) -> tuple[str, str]:
    items = [str(rng.randint(0, 9)) for _ in range(rng.randint(1, 4))]
    v = rng.choice(("l", "xs", "ys"))
    prefix = " :: ".join(items)
    return (
        f"forall {v} : list nat, length ({prefix} :: {v}) = {_succ(len(items), f'length {v}')}",
        f"intros {v}. reflexivity.",
    )


_ELEMENT_TYPES = (
    "nat", "bool", "unit", "list nat", "list bool", "nat * bool", "bool * nat", "nat * nat", "option nat",
    "option bool", "list (list nat)", "option (list nat)", "list (nat * bool)", "list (option nat)",
)  # fmt: skip


def _app_nil(rng: random.Random) -> tuple[str, str]:
    element, v = rng.choice(_ELEMENT_TYPES), rng.choice(("l", "xs", "ys", "zs", "l1", "l2", "l3", "us", "vs", "ws"))
    equation, rewrite = _oriented(rng, f"app {v} nil", v)
    return (
        f"forall {v} : list ({element}), {equation}",
        f"intros {v}. {INDUCTION.format(v=v, h=f'x {v}', rewrite=rewrite)}",
    )


_MAKERS = {
    "bool": _bool,
    "add_left": _add_left,
    "add_right": _add_right,
    "length_cons": _length_cons,
    "app_nil": _app_nil,
}


def make_queries(
    n: int, *, split: str, seed: int, families: tuple[str, ...] = FAMILIES, heldout_fraction: float = 0.3
) -> list[Query]:
    """``n`` distinct lemmas of one split, as evenly over ``families`` as ``n`` allows,
    deterministic in ``seed``; a ValueError names a family that has too few."""
    unknown = sorted(set(families) - set(FAMILIES))
    if unknown:
        raise ValueError(f"unknown lemma families {unknown}; known: {', '.join(FAMILIES)}")
    rows: list[Query] = []
    for index, family in enumerate(families):
        wanted = n // len(families) + (index < n % len(families))
        rng = random.Random(f"proofs-{family}-{split}-{seed}")
        seen: dict[str, Query] = {}
        misses = 0
        while len(seen) < wanted and misses < 5_000:
            statement, proof = _MAKERS[family](rng)
            misses += 1
            if statement in seen or split_of(statement, heldout_fraction) != split:
                continue
            misses = 0
            name = f"lemma_{hashlib.sha256(statement.encode()).hexdigest()[:10]}"
            seen[statement] = Query(
                id=f"coq-{split}-{name[6:]}",
                prompt=statement,
                verifier={"type": "coq", "statement": f"Theorem {name} : {statement}."},
                meta={"task": "proofs", "family": family, "proof": proof},
            )
        if len(seen) < wanted:
            raise ValueError(
                f"proofs: only {len(seen)} distinct {split} lemmas of family {family!r}; ask for fewer (task.num_train / num_eval)"
            )
        rows += seen.values()
    rng = random.Random(f"proofs-order-{split}-{seed}")
    rng.shuffle(rows)
    return rows


def reference_proof(query: Query) -> str:
    """The proof that closes the lemma (its family's strategy with its variable names)."""
    return query.meta["proof"]
