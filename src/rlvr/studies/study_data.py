"""A study's raw data, `<out>/<study>.json`, and the tables the README and docs show from it.

The file keeps, per arm and per seed, what a reader needs to recompute every number of the study:
the arm's overrides and its reward in words, the held-out pass@1 and greedy accuracy (gold) before
and after training, the share of tokens the clip switched off, and, where the study evaluates pass@k,
each held-out query's counts for the base and the trained model (`per_query`: [n, correct], the
base drawn with that seed's own sampling seed). A study's file as measured for the docs is shipped
in the package (`studies/results/<study>.json`); `rlvr reproduce --tables` prints every shipped
study's table, and tests/studies/test_study_tables.py checks that the pages show exactly those.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.errors import UserError
from rlvr.eval.curves import SUPPORT_CLASSES, support_counts, support_summary
from rlvr.eval.stats import mean_sd
from rlvr.studies.study_reports import EDGE_STEPS

SCHEMA = "rlvr.study/1"
SELF_CHECK = ("selfcheck/rate", "selfcheck/accuracy_checked", "selfcheck/accuracy_unchecked")
"""Per-step self-verification metrics (tasks/arith.py), for a study of a base that checks its steps."""
LENGTHS = ("completions/correct_mean_length", "completions/wrong_mean_length")
"""Per-step completion lengths, right and wrong (tokens), for a study of length bias."""
FORMAT = "format_rate"
"""Per-step share of completions in the R1 format, for a study with a format reward."""
RESULTS = Path(__file__).with_name("results")
"""The studies' files as measured for the docs (the package's copy)."""


def reward_of(cfg: RunConfig) -> str:
    """The reward an arm trains on, in words."""
    r = cfg.reward
    parts = []
    if r.correctness_weight:
        correctness = {
            "gold": "gold correctness",
            "random": f"Bernoulli({r.random_rate:g}) per rollout, whatever the text",
            "noisy": f"correctness with {r.false_positive_rate:g} false passes, {r.false_negative_rate:g} false fails",
        }.get(r.fidelity, f"correctness judged {r.fidelity}")
        parts.append(correctness if r.correctness_weight == 1 else f"{r.correctness_weight:g} x {correctness}")
    if r.reasoning_weight:
        parts.append(f"{r.reasoning_weight:g} x every step checked")
    if r.format_weight:
        parts.append("format" if r.format_weight == 1 else f"{r.format_weight:g} x format")
    return " + ".join(parts) or "none"


def _curve_mean(card: dict, key: str) -> float | None:
    values = [v for v in card["curves"].get(key, []) if v is not None]
    return round(statistics.fmean(values), 6) if values else None


def run_data(run: dict, curve_keys: tuple[str, ...] = ()) -> dict[str, Any]:
    """One seed of one arm: held-out accuracy before and after, the clip's share, the per-step
    record of `curve_keys` (the study's own metrics), and the per-query counts of its pass@k
    evaluation (when there is one)."""
    card, report = run["card"], run.get("eval")
    evals = card["evals"]
    data: dict[str, Any] = {
        "seed": run["seed"],
        "dir": run["dir"],
        "heldout": {key: {"base": evals[key][0], "final": evals[key][-1]} for key in ("gold_pass@1", "gold_greedy")},
        "clipped_tokens": _curve_mean(card, "clip_ratio/region_mean"),
    }
    if curve_keys:
        data["curves"] = {"step": card["curves"]["step"], **{k: card["curves"].get(k, []) for k in curve_keys}}
    if report:
        models = report["models"]
        data["passk"] = {
            "k": report["k"],
            "n": report["n"],
            "sampling_seed": report.get("seed"),
            **{f"{m}_{key}": models[m][key] for m in ("base", "model") for key in ("pass@k", "cot_pass@k")},
        }
        data["per_query"] = {
            "query_ids": models["model"]["query_ids"],
            "base": [row[:2] for row in models["base"]["per_query"]],
            "trained": [row[:2] for row in models["model"]["per_query"]],
        }
        if models["model"]["cot_pass@k"] is not None:  # right answers whose every step is right, too
            data["per_query"] |= {"base_cot": [row[2] for row in models["base"]["per_query"]],
                                  "trained_cot": [row[2] for row in models["model"]["per_query"]]}  # fmt: skip
        if report.get("support"):
            data["support"] = {
                "k": report["support_k"],
                "classes": report["support"],
                **{f"{m}_{key}": models[label]["support"][key] for m, label in (("base", "base"), ("trained", "model"))
                   for key in ("first_correct", "first_cot")},
            }  # fmt: skip
    if run.get("supervised"):
        data["supervised"] = run["supervised"]
    for temperature, baseline in (run.get("temperatures") or {}).items():  # the base alone at T < 1
        alone = baseline["models"]["model"]
        data.setdefault("base_at_temperature", {})[temperature] = {
            "k": baseline["k"],
            "n": baseline["n"],
            "sampling_seed": baseline.get("seed"),
            "pass@k": alone["pass@k"],
            "cot_pass@k": alone["cot_pass@k"],
            "per_query": [row[:2] for row in alone["per_query"]],
        }
    return data


def study_data(card: dict[str, Any], arms: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The study's file: its card's claims and lines, and {arm: {overrides, reward, seeds: [run_data]}}."""
    keys = ("study", "title", "command", "made", "wall_s", "seeds", "steps", "claims", "falsifier", "measured")
    return {"schema": SCHEMA, **{key: card.get(key) for key in keys}, "arms": arms}


def write_study_data(data: dict[str, Any], out: Path) -> Path:
    path = out / f"{data['study']}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


def shipped() -> dict[str, dict[str, Any]]:
    """{study: its shipped file}, for the studies measured for the docs."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(RESULTS.glob("*.json"))}


# ---------------------------------------------------------------------------------------------
# Tables


def pass1(counts: list[list[int]]) -> float:
    """Mean over queries of correct / n: pass@1 from per-query counts."""
    return statistics.fmean(correct / n for n, correct in counts if n)


def _pm(values: list[float], scale: float = 100.0, signed: bool = False) -> str:
    spread = mean_sd(values)
    text = f"{scale * spread.mean:{'+' if signed else ''}.1f}"
    return text if spread.sd is None else f"{text} ± {scale * spread.sd:.1f}"


def _cell(values: list[float | None], scale: float = 100.0, signed: bool = False) -> str:
    """mean ± sd of the measured values (None: not measured), or n/a."""
    finite = [v for v in values if v is not None]
    return _pm(finite, scale, signed) if finite else "n/a"


def arm_row(arm: str, entry: dict[str, Any]) -> str:
    """One arm's line: its reward; pass@1 (from the per-query counts) base -> trained and the
    change, mean ± sd over seeds, with how many seeds rose; greedy; the clip's share."""
    seeds = entry["seeds"]
    base = [pass1(s["per_query"]["base"]) for s in seeds]
    trained = [pass1(s["per_query"]["trained"]) for s in seeds]
    change = [t - b for b, t in zip(base, trained, strict=True)]
    greedy = [(s["heldout"]["gold_greedy"]["base"], s["heldout"]["gold_greedy"]["final"]) for s in seeds]
    clipped = [s["clipped_tokens"] for s in seeds if s["clipped_tokens"] is not None]
    return (
        f"| {arm} | {entry['reward']} | {_pm(base)} → {_pm(trained)} | {_pm(change, signed=True)} | "
        f"{sum(c > 0 for c in change)} of {len(seeds)} | {_pm([g[0] for g in greedy])} → {_pm([g[1] for g in greedy])} | "
        f"{_pm(clipped, 100.0) if clipped else 'n/a'} |"
    )


def _curve_cells(curves: list[list[float]]) -> str:
    return " | ".join(_pm([curve[i] for curve in curves]) for i in range(len(curves[0])))


def passk_table(data: dict[str, Any], key: str = "pass@k", above: bool = False) -> str:
    """pass@k (or, with key "cot_pass@k", CoT-pass@k) of the base (each seed's own draw, at T = 1
    and at each lower temperature) and of each arm's trained model, mean ± sd over seeds, in %;
    with `above`, a row per arm: on how many seeds the trained curve is above that seed's base at each k."""
    arms = {arm: entry for arm, entry in data["arms"].items() if all("passk" in s for s in entry["seeds"])}
    first = next(iter(arms.values()))["seeds"]
    ks = first[0]["passk"]["k"]
    rows = [f"| base, T = 1 | {_curve_cells([s['passk'][f'base_{key}'] for s in first])} |"]
    for t in sorted(first[0].get("base_at_temperature", {}), key=float, reverse=True):
        rows.append(f"| base, T = {t} | {_curve_cells([s['base_at_temperature'][t][key] for s in first])} |")
    for arm, entry in arms.items():
        rows.append(
            f"| {arm}, trained (T = 1) | {_curve_cells([s['passk'][f'model_{key}'] for s in entry['seeds']])} |"
        )
    for arm, entry in arms.items() if above else ():
        counts = [sum(s["passk"][f"model_{key}"][i] > s["passk"][f"base_{key}"][i] for s in entry["seeds"])
                  for i in range(len(ks))]  # fmt: skip
        seeds = len(entry["seeds"])
        rows.append(f"| {arm}: seeds above their base | {' | '.join(f'{c} of {seeds}' for c in counts)} |")
    name = "CoT-pass@k" if key == "cot_pass@k" else "pass@k"
    head = f"| {name}, % | {' | '.join(f'k = {k}' for k in ks)} |\n|---|{'---|' * len(ks)}"
    return "\n".join([head, *rows])


def support_table(data: dict[str, Any]) -> str:
    """Per arm and curve, each query's support class at the study's support k (base against
    trained, recomputed from each seed's first-success indices), summed over seeds, and on how many
    seeds more queries were expanded than shrunk."""
    rows, k = [], None
    for arm, entry in data["arms"].items():
        seeds = [s for s in entry["seeds"] if "support" in s]
        for field, name in (("first_cot", "CoT-pass@k"), ("first_correct", "pass@k")) if seeds else ():
            k = seeds[0]["support"]["k"]
            per_seed = [
                support_counts(s["support"][f"base_{field}"], s["support"][f"trained_{field}"], k) for s in seeds
            ]
            total, wider = support_summary(per_seed)
            queries = len(seeds[0]["support"][f"base_{field}"])
            rows.append(f"| {arm} | {name} | {' | '.join(str(total[c]) for c in SUPPORT_CLASSES)} | "
                        f"{queries} x {len(seeds)} | {wider} of {len(seeds)} |")  # fmt: skip
    head = (f"| arm | solved means | {' | '.join(SUPPORT_CLASSES)} | queries x seeds | seeds with more "
            f"expanded than shrunk |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    return f"Support at k = {k}:\n\n" + "\n".join([head, *rows])


WINDOW = EDGE_STEPS
"""Steps at each end a table row averages: the windows `rlvr reproduce`'s readings compare."""


def _window_mean(record: dict[str, list], key: str, first: bool) -> float | None:
    width = min(WINDOW, len(record["step"]) // 2)
    values = record[key][:width] if first else record[key][len(record[key]) - width :]
    finite = [v for v in values if v is not None]
    return statistics.fmean(finite) if width and finite else None


def _paid(record: dict[str, list], first: bool) -> float | None:
    checked = _window_mean(record, "selfcheck/accuracy_checked", first)
    unchecked = _window_mean(record, "selfcheck/accuracy_unchecked", first)
    return None if checked is None or unchecked is None else checked - unchecked


def selfcheck_table(data: dict[str, Any]) -> str:
    """Per arm, from each seed's per-step record: the share of completions that check a step in the
    first and last steps, and what a check was worth there (accuracy of checked minus unchecked
    completions, points), mean ± sd over seeds."""
    rows = []
    for arm, entry in data["arms"].items():
        records = [s["curves"] for s in entry["seeds"] if SELF_CHECK[0] in s.get("curves", {})]
        if not records:
            continue
        rows.append(
            f"| {arm} | {_cell([_window_mean(r, 'selfcheck/rate', True) for r in records])} → "
            f"{_cell([_window_mean(r, 'selfcheck/rate', False) for r in records])} | "
            f"{_cell([_paid(r, True) for r in records], signed=True)} | "
            f"{_cell([_paid(r, False) for r in records], signed=True)} |"
        )
    head = (
        f"| arm | completions that check a step, % (first → last {WINDOW} steps) | checked − unchecked accuracy, "
        f"points, first {WINDOW} steps (near the base) | the same, last {WINDOW} steps |\n|---|---|---|---|"
    )
    return "\n".join([head, *rows])


def study_table(data: dict[str, Any]) -> str:
    """The study's table in Markdown: one row per arm with per-query counts; below it, for a study
    that goes past k = 16, its pass@k table, and for one whose base checks its steps, what the
    checks did."""
    tables = [_arm_table(data)]
    ks = next((s["passk"]["k"] for e in data["arms"].values() for s in e["seeds"] if "passk" in s), [])
    support = any("support" in s for e in data["arms"].values() for s in e["seeds"])
    if ks and ks[-1] > 16:
        tables.append(passk_table(data))
    if support:  # the expansion study: CoT-pass@k is its claim, support its per-query reading
        tables += [passk_table(data, "cot_pass@k", above=True), support_table(data)]
    kept = {key for e in data["arms"].values() for s in e["seeds"] for key in s.get("curves", {})}
    if SELF_CHECK[0] in kept:
        tables.append(selfcheck_table(data))
    if LENGTHS[1] in kept:
        tables.append(length_table(data))
    if FORMAT in kept:
        tables.append(format_table(data))
    return "\n\n".join(tables)


def format_table(data: dict[str, Any]) -> str:
    """Per arm, from each seed's per-step record: the share of training completions in the R1 format
    at step 1 (the base's own samples), after 10 steps, and over the last steps, mean ± sd over seeds."""
    rows = []
    for arm, entry in data["arms"].items():
        records = [s["curves"] for s in entry["seeds"] if FORMAT in s.get("curves", {})]
        if records:
            at = [_cell([r[FORMAT][i] if len(r[FORMAT]) > i else None for r in records]) for i in (0, WINDOW - 1)]
            rows.append(f"| {arm} | {at[0]} | {at[1]} | {_cell([_window_mean(r, FORMAT, False) for r in records])} |")
    head = f"| arm | completions in the format, % (step 1) | step {WINDOW} | last {WINDOW} steps |\n|---|---|---|---|"
    return "\n".join([head, *rows])


def length_table(data: dict[str, Any]) -> str:
    """Per arm, from each seed's per-step record: the mean length (tokens) of wrong and of right
    completions in the first and last steps, and how much the wrong ones grew, mean ± sd over seeds."""
    rows = []
    for arm, entry in data["arms"].items():
        records = [s["curves"] for s in entry["seeds"] if LENGTHS[1] in s.get("curves", {})]
        if not records:
            continue
        ends = {key: [(_window_mean(r, key, True), _window_mean(r, key, False)) for r in records] for key in LENGTHS}
        wrong, right = ends[LENGTHS[1]], ends[LENGTHS[0]]
        growth = [None if a is None or b is None else b - a for a, b in wrong]
        rows.append(
            f"| {arm} | {_cell([a for a, _ in wrong], 1.0)} → {_cell([b for _, b in wrong], 1.0)} | "
            f"{_cell(growth, 1.0, signed=True)} | {_cell([a for a, _ in right], 1.0)} → {_cell([b for _, b in right], 1.0)} |"
        )
    head = (
        f"| arm | wrong completions, tokens (first → last {WINDOW} steps) | growth of wrong, tokens | "
        f"right completions, tokens (first → last {WINDOW} steps) |\n|---|---|---|---|"
    )
    return "\n".join([head, *rows])


def _arm_table(data: dict[str, Any]) -> str:
    arms = {arm: entry for arm, entry in data["arms"].items() if all("per_query" in s for s in entry["seeds"])}
    n = next(iter(arms.values()))["seeds"][0]["passk"]["n"] if arms else 0
    head = (
        f"| arm | reward | pass@1 base → trained, % (n = {n}) | change, points | seeds above base | "
        "greedy base → final, % | tokens clipped, % |\n|---|---|---|---|---|---|---|"
    )
    return "\n".join([head, *(arm_row(arm, entry) for arm, entry in arms.items())])


def marked(name: str, table: str) -> str:
    """A study's table between the comments that mark it in a page (what the test compares)."""
    return f"<!-- study table: {name} (rlvr reproduce {name} --tables) -->\n{table}\n<!-- end study table -->"


def tables_text(name: str | None, out: Path | None = None) -> str:
    """`rlvr reproduce [NAME] --tables [--out DIR]`: the marked table of one study (from DIR/NAME.json
    with DIR, else its shipped file) or of every shipped study."""
    if out is not None:
        if name is None:
            raise UserError("--tables --out DIR: name the study whose DIR/NAME.json to read")
        path = out / f"{name}.json"
        if not path.is_file():
            raise UserError(f"{path}: no such file; `rlvr reproduce {name} --out {out}` writes it")
        try:
            return marked(name, study_table(json.loads(path.read_text())))
        except (ValueError, KeyError, TypeError, IndexError, StopIteration) as err:
            raise UserError(f"{path}: not a study's data file ({type(err).__name__}: {err})") from None
    files = shipped()
    if name is not None and name not in files:
        raise UserError(
            f"study {name!r} has no shipped data yet (shipped: {', '.join(files) or 'none'}); "
            f"run `rlvr reproduce {name}` and use --tables --out DIR"
        )
    return "\n\n".join(marked(study, study_table(data)) for study, data in files.items() if name in (None, study))
