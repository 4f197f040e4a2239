"""No mutated program crashes hetprof (issue 17): a bounded mutation fuzz of the pipeline the
command line runs, in-process, from a fixed seed (tests/fuzzing.py).

Mutants of the examples, of tests/programs and of generated programs go through `check`; the first
ones that pass go on through `run`, `profile` and `profile --symbolic` at small sizes (0, 1, 3,
17). Every outcome must be a value or a located hetprof error (`file:line:col`): no other
exception, no HetprofError without a place in the program, no report that is not JSON, no stage
past its time limit. benchmarks/fuzz_campaign.py is the long campaign.
"""

from __future__ import annotations

import random

import pytest

from tests.fuzzing import (
    STAGES,
    Campaign,
    Mutator,
    Outcome,
    Sandbox,
    abbreviate,
    default_corpus,
)

SEED = 17
GENERATED = 24  # programs of tests/generate.py in the corpus
CHECKED = 1500  # mutants through `check`
DEEP = 150  # of those that check, how many go through run, profile and --symbolic


@pytest.fixture(scope="module")
def campaign() -> Campaign:
    corpus = default_corpus(GENERATED, SEED)
    mutants = Mutator(corpus, random.Random(SEED)).mutants()
    with Sandbox() as sandbox:
        campaign = Campaign(sandbox, random.Random(SEED))
        deep = tried = 0
        # At least CHECKED mutants through `check`, and on until DEEP of them passed it and went
        # through every stage (a stricter checker passes fewer of them).
        while tried < CHECKED or deep < DEEP:
            source, how = next(mutants)
            stages = STAGES if deep < DEEP else ("check",)
            trial = campaign.trial(source, how, stages=stages)
            deep += trial.results[0].outcome is Outcome.OK and len(stages) > 1
            tried += 1
    return campaign


def _report(campaign: Campaign, stage: str) -> str:
    lines = []
    for (where, signature), trials in sorted(campaign.crashes.items()):
        if where != stage:
            continue
        trial = trials[0]
        result = next(r for r in trial.results if r.stage == stage)
        lines.append(f"{signature} ({len(trials)}x): {result.message}\n"
                     f"  made by {trial.how}\n  settings {trial.settings}\n"
                     f"--- source ---\n{abbreviate(trial.source)}\n--- traceback ---\n"
                     f"{result.traceback[-2500:]}")
    return "\n\n".join(lines)


def test_the_fuzz_reaches_every_stage(campaign):
    counts = campaign.counts
    assert sum(counts["check"].values()) >= CHECKED
    for stage in ("run", "symbolic"):
        assert sum(counts[stage].values()) == DEEP, stage
    assert counts["check"][Outcome.LOCATED] > 0
    assert counts["profile"][Outcome.OK] > 0


@pytest.mark.parametrize("stage", STAGES)
def test_no_mutant_crashes_a_stage(campaign, stage):
    counts = campaign.counts[stage]
    crashed = counts[Outcome.CRASH] + counts[Outcome.TIMEOUT]
    assert crashed == 0, f"{crashed} crashes in {stage}:\n\n" + _report(campaign, stage)
