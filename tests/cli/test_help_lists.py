"""Help texts that name a registry's entries name every one of them: they are filled from the
registry when the help is printed, so a new base or study cannot be left out."""

from __future__ import annotations

from rlvr.bases import BASES
from rlvr.studies.reproduce import STUDIES


def test_train_help_names_every_built_in_base(cli):
    done = cli("train", "--help")
    assert done.returncode == 0
    entry = done.stdout.split("  model.name = ", 1)[1].split("\n  model.", 1)[0]
    assert "{built-in bases}" not in done.stdout and all(name in entry for name in BASES)
    assert "train.keep_every = 0" in done.stdout  # the models a run keeps for eval --checkpoint and inspect --step


def test_reproduce_help_names_every_study(cli):
    done = cli("reproduce", "--help")
    assert done.returncode == 0
    text = "".join(done.stdout.split())  # argparse wraps the description, at a hyphen too
    assert "{studies}" not in text and "".join(f"Run one study ({', '.join(STUDIES)}) end to end".split()) in text


def test_compare_and_inspect_help_say_what_they_keep_and_refuse(cli):
    compare = " ".join(cli("compare", "--help").stdout.split())
    assert "finished runs are kept, interrupted ones resume" in compare and "evaluated once per seed" in compare
    inspect = " ".join(cli("inspect", "--help").stdout.split())
    assert "train.keep_every=K keeps a model every K steps" in inspect and "past the run's next is refused" in inspect
