"""Hostile rows for every verifier but python (whose suite is tests/sandbox/test_hostile.py): each
is a dataset row and a completion that a hole in its verifier would pass. All must ``fail``, and
none may be unscorable (``error``/``unavailable``): a wrong answer that makes itself unscorable
escapes the reward, the group baseline, pass@k and the hacking monitor alike.

One function per verifier type returns ``(name, row, completion)`` triples; ``ROWS`` holds them all.
"""

from __future__ import annotations

import secrets

Row = tuple[str, dict, str]
SECRET = secrets.randbelow(10**9) + 10**9


def _answer(text: str) -> str:
    return f"<think>working</think><answer>{text}</answer>"


def math_rows() -> list[Row]:
    """Several values, relations, chains, cases and rounded decimals for one-value golds."""
    forty_two = [
        ("disjunction_lor", r"x = 43 \lor x = 42"),
        ("disjunction_or_text", r"43 \text{ or } 42"),
        ("disjunction_vee", r"43 \vee 42"),
        ("conjunction_land", r"x = 43 \land x = 42"),
        ("conjunction_wedge", r"x=43 \wedge x=42"),
        ("conjunction_and_word", "43 and 42"),
        ("equation_chain", "x = 43 = 42"),
        ("relation_lt", "x < 43"),
        ("relation_le", r"x \le 42"),
        ("relation_ne", r"42 \ne x"),
        ("relation_ge", r"x \geq 42"),
        ("set_lbrace", r"\lbrace 43, 42 \rbrace"),
        ("set_braces", r"\{43, 42\}"),
        ("comma_list", "43, 42"),
        ("semicolon_list", "43; 42"),
        ("cases_env", r"\begin{cases} 43 & a \\ 42 & b \end{cases}"),
        ("latex_line_break", r"43 \\ 42"),
        ("newline", "43\n42"),
        ("pm", r"42 \pm 1"),
        ("boxed_two", r"\boxed{43} \boxed{42}"),
    ]
    rows = [(f"math_{name}", {"type": "math", "answer": "42"}, _answer(text)) for name, text in forty_two]
    two_thirds = [("rounded_7_digits", "0.6666667"), ("rounded_4_digits", "0.6667"), ("truncated", "0.666666")]
    rows += [(f"math_{name}", {"type": "math", "answer": r"\frac{2}{3}"}, _answer(text)) for name, text in two_thirds]
    rows.append(("math_sqrt2_decimal", {"type": "math", "answer": r"\sqrt{2}"}, _answer("1.41421356")))
    rows.append(("math_pi_decimal", {"type": "math", "answer": r"\pi"}, _answer("3.14159265")))
    rows.append(("math_set_with_extra", {"type": "math", "answer": r"\{1, 2\}"}, _answer(r"\{1, 2\} \cup \{3\}")))
    return rows + _math_hidden_value_rows() + _math_spelling_rows()


def _math_hidden_value_rows() -> list[Row]:
    """A second value inside a construct the parser drops (issue 27, item 4): each passed for 42."""
    hidden = {
        # text-like groups: math-verify reads the value beside them and drops their content
        "text": r"42 \text{ (approximately 43)}",
        "textbf": r"42 \textbf{ (43)}",
        "textit": r"42 \textit{43}",
        "textrm": r"42 \textrm{ about 43}",
        "textnormal": r"42 \textnormal{ 43}",
        "mbox": r"42\mbox{ 43}",
        "mathrm": r"42 \mathrm{43}",
        "operatorname": r"42\operatorname{43}",
        "operatorname_before": r"\operatorname{43} 42",
        "boxed_with_text": r"\boxed{42 \text{ (43)}}",
        "hbox": r"42 \hbox{43}",
        # evaluation bars
        "eval_bar_left_right": r"\left. 42 \right|_{43}",
        "eval_bar_equation": r"\left. 42 \right|_{x=43}",
        "eval_bar_superscript": r"\left. 42 \right|^{43}",
        "eval_bar_bigg": r"42 \bigg|_{43}",
        "eval_bar_Big_both": r"42\Big|_{43}^{44}",
        # sub- and superscript groups
        "scripts_on_group": r"{42}^{1}_{43}",
        "scripts_on_number": r"42^{1}_{43}",
        "empty_superscript": r"42^{}_{43}",
        "subscript_on_number": r"42_{43}",
        "subscript_on_group": r"{42}_{43}",
        "prescript": r"{}_{43}42",
        "subscript_holding_text": r"42_{\text{or } 43}",
        # comments and percent signs: LaTeX hides what follows, math-verify multiplies it
        "comment": r"42 % 43",
        "comment_tight": r"42 %43",
        "percent_then_value": r"42 \% 43",
        "comment_newline": "42 %\n43",
        # invisible or metadata commands
        "phantom": r"42\phantom{43}",
        "hphantom": r"42\hphantom{43}",
        "vphantom": r"42 \vphantom{43}",
        "tag": r"42 \tag{43}",
        "tag_star": r"42 \tag*{43}",
        "label": r"42 \label{43}",
        "eqno": r"42 \eqno{43}",
        "hspace": r"42 \hspace{43pt}",
        "kern": r"42 \kern43pt",
        "color": r"42 \color{white}{43}",
        "overset": r"\overset{43}{42}",
        "stackrel": r"\stackrel{43}{42}",
        # spacing between two values
        "quad": r"42 \quad 43",
        "thin_space": r"42\,43",
        "control_space": r"42 \ 43",
        "negative_space": r"42 \!43",
    }
    rows = [(f"math_hidden_{name}", {"type": "math", "answer": "42"}, _answer(text)) for name, text in hidden.items()]
    constants = [("pi_in_text", "3", r"3 \text{ (approx } \pi)"), ("pi_in_mbox", "3", r"3 \mbox{ or } \pi")]
    # a symbol math-verify drops: each was read as 42
    constants += [("symbol_exponent", "42", "42^e"), ("symbol_exponent_word", "42", "42^ee"),
                  ("symbol_before_percent", "42", "42x%"), ("symbol_between_percents", "42", "42%e%")]  # fmt: skip
    rows += [(f"math_hidden_{name}", {"type": "math", "answer": gold}, _answer(text)) for name, gold, text in constants]
    return rows


def _math_spelling_rows() -> list[Row]:
    """The spellings read as one value (delimiters, separators, E-notation, ASCII relations, bases,
    bare lists) used to carry a second value or a wrong one."""
    rows: list[tuple[str, str, str]] = [
        ("delimiters_two_spans", "42", r"\(43\) \(42\)"),
        ("delimiters_display_then_value", "42", r"\[43\] 42"),
        ("delimiters_value_before", "42", r"43 \(42\)"),
        ("thousands_short_group", "42", r"42{,}43"),
        ("thousands_thin_comma", "42", r"42,\! 43"),
        ("thousands_joined", "42", r"42{,}043"),
        ("currency_two_amounts", "42", r"\$42 \$43"),
        ("ascii_le", "42", "x <= 42"),
        ("ascii_ge", "42", "x >= 42"),
        ("ascii_ne", "42", "42 != 43"),
        ("e_notation_wrong_power", "1000", "1e4"),
        ("e_notation_is_not_euler", "e^{3}", "1e3"),
        ("e_notation_hedge", "1000", r"1e3 \text{ or } 1e4"),
        ("base_other", "204_5", "204_6"),
        ("base_braced_other", "204_5", "204_{6}"),
        ("base_twice", "204_5", "204_{5}_{43}"),
        ("list_for_tuple", "(1,2)", "2, 1"),
        ("list_for_interval", "[0,1)", "0, 1"),
        ("list_of_sets_for_set", r"\{1,2\}", r"\{1,3\}, \{1,2\}"),
        ("boxes_one_too_many", "1, 2", r"\boxed{1} \boxed{2} \boxed{3}"),
        ("prose_after_value", "42", "The answer is $42$ (or 43)."),
    ]
    return [(f"math_{name}", {"type": "math", "answer": gold}, _answer(text)) for name, gold, text in rows]


def smt_rows() -> list[Row]:
    x, xy = "(declare-const x Int)", "(declare-const x Int) (declare-const y Int)"
    traps = [
        ("div_two_values", x, "(assert (= (div 1 x) 5)) (assert (= (div 1 x) 6))", "x = 0"),
        ("div_out_of_range", x, "(assert (= (div 1 x) 5))", "x = 0"),
        ("mod_self", x, "(assert (= (mod x x) 1))", "x = 0"),
        ("real_div_self", "(declare-const r Real)", "(assert (= (/ r r) 2.0))", "r = 0"),
        ("rem_contradiction", xy, "(assert (= (rem x y) 3)) (assert (< (rem x y) 3))", "x = 7, y = 0"),
        ("forall_div", x, "(assert (forall ((k Int)) (= (div k x) 7)))", "x = 0"),
    ]
    rows = [
        (
            f"smt_zero_divisor_{name}",
            {"type": "smt", "mode": "model", "declarations": decls, "constraints": asserts},
            _answer(claim),
        )
        for name, decls, asserts, claim in traps
    ]
    equivalent = {"type": "smt", "mode": "equivalent", "declarations": xy, "reference": "(* 2 x)"}
    rows += [
        (
            "smt_out_of_memory_raise",
            equivalent,
            _answer("(bv2int ((_ extract 7 0) ((_ repeat 100000000) ((_ int2bv 8) x))))"),
        ),
        ("smt_out_of_memory_exit", equivalent, _answer("(bv2int ((_ int2bv 100000000) x))")),
        (
            "smt_equivalent_zero_divisor",
            {**equivalent, "reference": "0", "constraints": "(assert (= y 0))"},
            _answer("(div x y)"),
        ),
    ]
    return rows


def checklist_rows() -> list[Row]:
    """Texts that read differently from their code points: blank, invisible and look-alike
    characters, bidirectional controls, and tokens with no letter or digit counted as words."""
    short = {"type": "checklist", "items": [{"check": "max_words", "value": 3}]}
    forbidden = {"type": "checklist", "items": [{"check": "not_contains", "value": "forbidden"}]}
    many_words = "one two three four five six"
    separators = {
        "braille_blank": "\u2800",
        "hangul_filler": "\u3164",
        "halfwidth_filler": "\uffa0",
        "zero_width_space": "\u200b",
        "word_joiner": "\u2060",
        "ideographic_space": "\u3000",
        "variation_selector": "\ufe0f",
        "invisible_separator": "\u2063",
        "comma": ",",
        "slash": "/",
    }
    rows = [
        (f"checklist_max_words_{name}", short, _answer(many_words.replace(" ", sep)))
        for name, sep in separators.items()
    ]
    disguises = {
        "zero_width_space": "for\u200bbidden",
        "soft_hyphen": "forbid\u00adden",
        "cyrillic_o": "f\u043erbidden",
        "greek_omicron": "f\u03bfrbidden",
        "fullwidth": "ｆｏｒｂｉｄｄｅｎ",
        "math_bold": "\U0001d41f\U0001d428\U0001d42b\U0001d41b\U0001d422\U0001d41d\U0001d41d\U0001d41e\U0001d427",
        "combining_joiner": "forb\u034fidden",
        "variation_selector_17": "forb\U000e0100idden",
        "tag_character": "forbid\U000e0041den",
        "invisible_times": "f\u2062orbidden",
        "null_notehead": "forb\U0001d159idden",
        "khitan_filler": "forbid\U00016fe4den",
    }
    rows += [
        (f"checklist_not_contains_{name}", forbidden, _answer(f"this is {text}")) for name, text in disguises.items()
    ]
    return rows + _checklist_bidi_rows() + _checklist_not_word_rows()


def _checklist_bidi_rows() -> list[Row]:
    """Bidirectional controls: the text shows a forbidden word it does not hold, or does not show
    a required one it holds."""
    no_paris = {"type": "checklist", "items": [{"check": "not_contains", "value": "Paris"}]}
    paris = {"type": "checklist", "items": [{"check": "contains", "value": "Paris"}]}
    forty_two = {"type": "checklist", "items": [{"check": "answer_equals", "value": "42"}]}
    year = {"type": "checklist", "items": [{"check": "regex", "pattern": r"^1190$"}]}
    shows = {
        "override": (no_paris, "P\u202esira\u202c"),  # RIGHT-TO-LEFT OVERRIDE: shows "Paris"
        "override_unterminated": (no_paris, "\u202esiraP"),
        "override_in_isolate": (no_paris, "\u2067\u202esiraP\u202c\u2069"),
        "override_in_embedding": (no_paris, "\u202b\u202esiraP\u202c\u202c"),
        "override_in_think": (no_paris, "siraP"),  # the override opened in <think> runs into the answer
        "hides_required": (paris, "\u202eParis\u202c"),  # holds "Paris", shows "siraP"
        "hides_number": (forty_two, "\u202e42\u202c"),  # shows "24"
        "hides_pattern": (year, "\u202e1190\u202c"),  # shows "0911"
        "ltr_override": (paris, "\u202dParis\u202c"),
        "right_to_left_marks": (no_paris, "\u200fris\u200fPa"),  # marks alone: shows "Paris" (UAX #9, L2)
        "arabic_letter_marks": (no_paris, "\u061cris\u061cPa"),
    }
    rows = []
    for name, (row, text) in shows.items():
        think = "\u202e" if name == "override_in_think" else "working"
        rows.append((f"checklist_bidi_{name}", row, f"<think>{think}</think><answer>{text}</answer>"))
    return rows


def _checklist_not_word_rows() -> list[Row]:
    """Tokens with no letter or digit between spaces, offered as words to min_words."""
    five_words = {"type": "checklist", "items": [{"check": "min_words", "value": 5}]}
    tokens = {
        "combining_acute": "\u0301",
        "combining_enclosing_circle": "\u20dd",
        "hebrew_point": "\u05b4",
        "dash": "-",
        "ellipsis": "...",
        "emoji": "\U0001f600",
        "zero_width_space": "\u200b",
        "variation_selector": "\ufe0f",
        "modifier_letter": "\u02c6",
    }
    return [
        (f"checklist_min_words_{name}", five_words, _answer("one two " + " ".join([token] * 3)))
        for name, token in tokens.items()
    ]


def _rg(dataset: str, question: str, answer: str, metadata: dict | None = None) -> dict:
    entry = {"question": question, "answer": answer, "metadata": metadata or {}}
    return {"type": "reasoning_gym", "dataset": dataset, "config": {}, "entry": entry}


def reasoning_gym_rows() -> list[Row]:
    """Answers that reasoning-gym 0.1.25's own scorers pay in full (or, for the shared decimal
    scorer, in large part), by scorer bug: rlvr checks each before it is trusted. Entries are items
    it generated at seed 1 (puzzle24's at seed 0 with its numbers set to 5, 5, 5, 1), metadata
    trimmed to what each scorer reads."""
    halting = _rg("game_of_life_halting", "Will this game halt at or before 20 steps?", "False")
    complex_sum = _rg(
        "complex_arithmetic",
        "Add the complex numbers: (-8.0 - 2.0i) + (-7.0 + 5.0i)",
        "-15.0 + 3.0i",
        {"result": {"__tuple__": [-15, 3]}},
    )
    coin = _rg("coin_flip", "What is the probability of getting exactly 2 heads in 5 fair coin flips?", "0.3125")
    gsm = _rg("gsm_symbolic", "How many kiwi and apple does John have in total?", "288")
    figlet = _rg("figlet_font", "What word does this say?", "CHEMOTROPIC")
    chain = _rg("chain_sum", "State the final answer to the following arithmetic problem: 57 + 87 + 70 =", "214")
    puzzle = _rg("puzzle24", "Make 24 using 5, 5, 5, 1.", "(5 - 1/5)*5", {"numbers": [5, 5, 5, 1]})
    integral = _rg(
        "simple_integration",
        "Calculate the antiderivative: ∫ -272*x**7/15 - 5/4 dx",
        "-34*x**8/15 - 5*x/4 + C",
        {"integrand": "-272*x**7/15 - 5/4", "variable": "x"},
    )
    knights = _rg("knights_knaves", "Who is a hero and who is a villain?", "Amelia is a hero, and Elizabeth is a hero.")
    right = integral["entry"]["answer"]
    attacks = {
        "truthiness_opposite": (halting, "True"),  # compares bool("True") with bool("False")
        "truthiness_zero": (halting, "0"),
        "truthiness_dot": (halting, "."),
        "nan": (complex_sum, "nan"),  # min(1.0, exp(-nan)) is 1.0
        "nan_complex": (complex_sum, "NaN + NaNi"),
        "nan_parenthesised": (complex_sum, "(nan)"),
        "nan_j": (complex_sum, "nan+nanj"),
        "prefix_zero": (coin, "0"),  # prefix credit: "0" matches the first character of 0.3125
        "prefix_one_digit": (coin, "0.3"),
        "prefix_two_digits": (coin, "0.31"),
        "first_number_sign": (gsm, "-288"),  # \b-?\d+ skips the minus sign
        "first_number_or": (gsm, "288 or 289"),
        "first_number_comma": (gsm, "288, 289"),
        "first_number_text": (gsm, "not 288"),
        "letters_in_place": (figlet, "CHEMOTROPIX"),  # 0.1 per letter in place, capped at 1
        "letters_in_place_longer": (figlet, "CHEMOTROPICS"),
        "letters_in_place_spaced": (figlet, "C H E M O T R O P I Q"),
        "decimal_wrong_sign": (chain, "-214"),  # len("214") / len("-214") = 0.75
        "decimal_extra_digit": (chain, "2147"),
        "decimal_hedge": (chain, "213 214 215"),
        "puzzle_constant": (puzzle, "1*2*3*4"),  # any four numbers in range that make 24
        "puzzle_other_constant": (puzzle, "4*6*1*1"),
        "puzzle_truncated": (puzzle, "5*5 - 1/5"),  # 24.8, truncated to 24
        "sympy_or": (integral, f"{right} or 0"),  # Python's `or` returns its first truthy operand
        "sympy_or_wrong": (integral, f"({right}) or (x**9)"),
        "sympy_and_wrong": (integral, f"x**9 and {right}"),
        "roles_negated": (knights, "not Amelia is a hero, and Elizabeth is a hero."),  # unpaired words skipped
        "roles_doubted": (knights, "I doubt Amelia is a hero, and Elizabeth is a hero."),
        "roles_trailing": (knights, "Amelia is a hero, and Elizabeth is a hero. Wrong"),
    }
    return [(f"reasoning_gym_{name}", row, _answer(text)) for name, (row, text) in attacks.items()]


def lean_rows() -> list[Row]:
    row = {"type": "lean", "statement": "theorem t : 2 + 2 = 5"}
    proofs = {
        "sorry": "by sorry",
        "admit": "by admit",
        "stop": "by stop",
        "native_decide": "by native_decide",
        "decide_native": "by decide +native",
        "axiom": "by exact absurd_axiom\naxiom absurd_axiom : 2 + 2 = 5",
        "sorryAx": "sorryAx _ false",
        "set_option": "by\n  set_option debug.skipKernelTC true in rfl",
        "elab_print": 'rfl\nelab "#print" : command => pure ()',
        "exit": "by rfl\n#exit",
        "extern_attr": 'by rfl\n@[extern "f"] def f : Nat := 0',
        "import": "by rfl\nimport Mathlib",
    }
    return [(f"lean_{name}", row, f"```lean\n{proof}\n```") for name, proof in proofs.items()]


def pytest_rows() -> list[Row]:
    tests = "import math\ndef test_root():\n    assert abs(f(2) - math.sqrt(2)) < 1e-9\n    assert len([f(4)]) == 1\n"
    row = {"type": "pytest", "test_code": tests, "expected_tests": 1}
    attacks = {
        "def_abs": "def abs(x):\n    return 0\ndef f(x):\n    return 0.0",
        "patch_builtins": "import builtins\nbuiltins.abs = lambda x: 0\ndef f(x):\n    return 0.0",
        "patch_math": "import math\nmath.sqrt = lambda x: 0.0\ndef f(x):\n    return 0.0",
        "replace_module": "import sys, types\nm = types.ModuleType('math')\nm.sqrt = lambda x: 0.0\n"
        "sys.modules['math'] = m\ndef f(x):\n    return 0.0",
        "globals_abs": "globals()['abs'] = lambda x: 0\ndef f(x):\n    return 0.0",
        "assertion_error": "AssertionError = ZeroDivisionError\ndef f(x):\n    return 0.0",
        "patch_inside_f": "def f(x):\n    import builtins\n    builtins.abs = lambda v: 0\n    return 0.0",
    }
    return [(f"pytest_{name}", row, f"```python\n{code}\n```") for name, code in attacks.items()]


def stdio_rows() -> list[Row]:
    row = {"type": "stdio", "tests": [{"stdin": "2 3\n", "stdout": f"{SECRET}\n"}]}
    attacks = {
        "print_sentinel": "print('ALL TESTS PASSED')",
        "exit_zero_silent": "import os\nos._exit(0)",
        "read_host_file": "print(open('/etc/hostname').read())",
        "keyring_lookup": "print(open('/proc/keys').read())",
        "nested_dirs": "import os\nfor _ in range(3000):\n    os.mkdir('d'); os.chdir('d')\nprint(0)",
    }
    return [(f"stdio_{name}", row, f"```python\n{code}\n```") for name, code in attacks.items()]


def coq_rows() -> list[Row]:
    """Three classes, several mechanisms each: commands smuggled past a sentence boundary Coq has
    (``{`` after a selector, bullets, attributes, command prefixes), assumption reports made to
    look clean, and proofs that try to wedge the shared coqtop (each followed by a wrong proof that
    must still fail, not error, on the same session)."""
    false = {"type": "coq", "statement": "Theorem absurd : False."}
    one_two = {"type": "coq", "statement": "Theorem one_is_two : 1 = 2."}
    lem = {
        "type": "coq",
        "statement": "Theorem lem : forall P : Prop, P \\/ ~ P.",
        "preamble": "Require Import Classical.",
    }
    loop = "Unset Guard Checking. Fixpoint loop (n : nat) : False := loop n. exact (loop 0)."
    smuggled = {
        "selector_brace": f"1: {{ {loop} }}",
        "named_goal_brace": f"[absurd]: {{ {loop} }}",
        "bullet_selector_brace": f"- 1: {{ {loop} }}",
        "bullet_brace": f"- {{ {loop} }}",
        "invalid_selector_brace": f"7: {{ {loop} }}",
        "all_selector_brace": f"all: {{ {loop} }}",
        "range_selector_brace": f"1-2, 4: {{ {loop} }}",
        "comment_before_brace": f"1 : (* x *) {{ {loop} }}",
        "bypass_attribute": "1: { #[bypass_check(guard)] Fixpoint l (n : nat) : False := l n. exact (l 0). }",
        "positivity": "1: { Unset Positivity Checking. Inductive b := C : (b -> False) -> b. "
        "exact (match C (fun x => match x with C f => f x end) with C f => f (C f) end). }",
        "universes": "1: { Unset Universe Checking. Local Definition U := Type. exact I. }",
        "fail_prefix": "Fail Fail Unset Guard Checking. exact I.",
        "quotation": "cbv. w:{{ . Unset Guard Checking. }} exact I.",
    }
    rows = [(f"coq_smuggle_{key}", false, _answer(proof)) for key, proof in smuggled.items()]
    reports = {
        "printed_closed": 'idtac "Closed under the global context". intros. apply classic.',
        "printed_chars_lines": 'idtac "Chars 0 - 6 [Proof.] 0. secs (0.u,0.s)". intros. apply classic.',
        "printed_axioms_header": 'idtac "Axioms:". idtac "Closed under the global context". intros. apply classic.',
        "required_inside": "1: { Require Import Classical. intros. apply classic. }",
    }
    rows += [(f"coq_report_{key}", lem, _answer(proof)) for key, proof in reports.items()]
    other_axiom = {**lem, "preamble": "Require Import Classical ProofIrrelevance.", "axioms": ["proof_irrelevance"]}
    rows.append(("coq_report_other_axiom", other_axiom, _answer("intros. apply classic.")))
    wedges = {
        "public_mark": "Definition Rlvr_after_preamble := 0. reflexivity.",
        "reset_initial": "idtac. Reset Initial.",
        "back": "Back 2. reflexivity.",
        "open_module": "Abort All. Module Wedge.",
        "open_section": "1: { Section Wedge. }",
        "unterminated_comment": "reflexivity. (* Qed.",
        "unterminated_string": 'idtac "Qed.',
        "no_final_period": "reflexivity",
        "ltac_profiling": "start ltac profiling. idtac. reflexivity.",
    }
    for key, proof in wedges.items():
        rows.append((f"coq_wedge_{key}", one_two, _answer(proof)))
        rows.append((f"coq_wedge_{key}_then_wrong", one_two, _answer("reflexivity.")))
    return rows


def all_rows() -> list[Row]:
    return [
        *math_rows(),
        *smt_rows(),
        *checklist_rows(),
        *reasoning_gym_rows(),
        *lean_rows(),
        *coq_rows(),
        *pytest_rows(),
        *stdio_rows(),
    ]
