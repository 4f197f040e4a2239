"""The long fuzz campaign of issue 17: mutated λG programs through check, run, profile and
profile --symbolic in-process (tests/fuzzing.py), and random bad command lines through
`python3 -m cli` in subprocesses. Prints per stage the inputs tried, ok, located errors, crashes
and timeouts, and writes one minimal reproducer per distinct crash (exception type and innermost
hetprof frame) to the folder given by --out, with the command that shows it.

    python3 benchmarks/fuzz_campaign.py [--mutants 50000] [--seed 1] [--time-budget 1200]
        [--symbolic-share 0.25] [--generated 100] [--command-lines 400] [--out fuzz-out]
        [--mode both|mutants|commands]

Single-process and deterministic from --seed (up to where --time-budget stops it). Every mutant
goes through check; those that check go through run and profile, and a --symbolic-share of them
through profile --symbolic too (the slowest stage).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fuzzing import (  # noqa: E402
    MAX_DEPTH,
    MAX_STEPS,
    ROOT,
    STAGES,
    Campaign,
    CommandLines,
    CommandResult,
    Mutator,
    Outcome,
    Sandbox,
    abbreviate,
    default_corpus,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mutants", type=int, default=50_000, help="mutants to try (50 000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-budget", type=float, default=1200.0,
                        help="stop drawing mutants after this many seconds (1200)")
    parser.add_argument("--symbolic-share", type=float, default=0.25,
                        help="share of the mutants that check also run with --symbolic (0.25)")
    parser.add_argument("--generated", type=int, default=100,
                        help="programs of tests/generate.py in the corpus (100)")
    parser.add_argument("--command-lines", type=int, default=400,
                        help="bad command lines to run (400): first each bad value of each "
                        "option once (158 lines), then random combinations")
    parser.add_argument("--minimise", type=int, default=3000,
                        help="trials to spend minimising each crash's reproducer (3000)")
    parser.add_argument("--minimise-seconds", type=float, default=120.0,
                        help="seconds to spend minimising each crash's reproducer (120)")
    parser.add_argument("--memory-gb", type=float, default=6.0,
                        help="cap this process's address space (6 GiB)")
    parser.add_argument("--out", default="fuzz-out", help="folder for reproducers and summary")
    parser.add_argument("--mode", choices=("both", "mutants", "commands"), default="both")
    args = parser.parse_args()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    summary_path = out / "summary.json"
    summary: dict = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary["seed"] = args.seed
    if args.mode in ("both", "mutants"):
        cap = int(args.memory_gb * 1024**3)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        summary["mutants"] = mutant_campaign(args, out)
    if args.mode in ("both", "commands"):
        summary["command_lines"] = command_campaign(args, out)
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"\nsummary: {summary_path}")
    return 0


# -- mutants ------------------------------------------------------------------------------------------


def mutant_campaign(args: argparse.Namespace, out: Path) -> dict:
    start = time.perf_counter()
    corpus = default_corpus(args.generated, args.seed)
    mutants = Mutator(corpus, random.Random(args.seed)).mutants()
    choose = random.Random(args.seed + 1)
    tried = 0
    with Sandbox() as sandbox:
        campaign = Campaign(sandbox, random.Random(args.seed))
        print(f"corpus: {len(corpus)} programs ({args.generated} generated), "
              f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
        while tried < args.mutants and time.perf_counter() - start < args.time_budget:
            source, how = next(mutants)
            stages = STAGES if choose.random() < args.symbolic_share else STAGES[:3]
            campaign.trial(source, how, stages=stages)
            tried += 1
            if tried % 1000 == 0:
                print(f"  {tried} mutants, {time.perf_counter() - start:.0f} s, "
                      f"{campaign.crash_count()} crashes in {len(campaign.crashes)} classes, "
                      f"{sandbox.abandoned} workers abandoned", file=sys.stderr)
        elapsed = time.perf_counter() - start
        print(f"\nmutants: {tried} in {elapsed:.0f} s (seed {args.seed}; corpus of {len(corpus)} "
              f"programs; sizes 0, 1, 3, 17; --max-steps {MAX_STEPS} --max-depth {MAX_DEPTH})")
        print(stage_table(campaign))
        classes = write_reproducers(campaign, out, args.minimise, args.minimise_seconds)
    return {"tried": tried, "seconds": round(elapsed),
            "stages": {stage: {o.value: n for o, n in campaign.counts[stage].items()}
                       for stage in STAGES},
            "classes": classes}


def stage_table(campaign: Campaign) -> str:
    head = f"{'stage':<10}{'tried':>9}{'ok':>9}{'located':>9}{'not reg.':>9}{'crashes':>9}" \
           f"{'timeouts':>9}"
    rows = [head]
    for stage in STAGES:
        counts = campaign.counts[stage]
        rows.append(f"{stage:<10}{sum(counts.values()):>9}" + "".join(
            f"{counts[o]:>9}" for o in (Outcome.OK, Outcome.LOCATED, Outcome.NOT_REGULAR,
                                        Outcome.CRASH, Outcome.TIMEOUT)))
    return "\n".join(rows)


def write_reproducers(campaign: Campaign, out: Path, budget: int, seconds: float) -> list[dict]:
    """For each distinct crash: minimise its smallest mutant, write it, confirm it through the
    command line."""
    folder = out / "reproducers"
    folder.mkdir(exist_ok=True)
    classes = []
    ranked = sorted(campaign.crashes.items(), key=lambda item: (STAGES.index(item[0][0]),
                                                                 -len(item[1])))
    print(f"\ndistinct crashes: {len(ranked)}")
    for number, ((stage, signature), trials) in enumerate(ranked, 1):
        smallest = min(trials, key=lambda t: len(t.source))
        result = next(r for r in smallest.results if r.stage == stage)
        if result.outcome is Outcome.TIMEOUT:
            minimal, settings = smallest.source, smallest.settings
        else:
            minimal, settings = campaign.minimise(smallest.source, stage, signature,
                                                  smallest.settings, budget, seconds)
        name = re.sub(r"[^A-Za-z0-9]+", "-", f"{number:02d}-{stage}-{signature}").strip("-")
        path = folder / f"{name[:90]}.lg"
        command = (settings.command(stage, str(path)) if settings is not None
                   else f"python3 -m cli check {path}")
        path.write_text(minimal, encoding="utf-8")
        confirmed = confirm(command)
        print(f"{number:2d}. [{stage}] {signature}: {len(trials)} mutants\n"
              f"    {result.message.splitlines()[0] if result.message else ''}\n"
              f"    reproducer ({len(minimal)} chars): {path}\n"
              f"    command: {command}  -> {confirmed}\n"
              + "".join(f"    | {line}\n" for line in abbreviate(minimal, 800).splitlines()))
        classes.append({"stage": stage, "signature": signature, "mutants": len(trials),
                        "message": result.message, "reproducer": str(path), "command": command,
                        "command_shows": confirmed, "made_by": smallest.how,
                        "traceback": result.traceback[-4000:]})
    return classes


def confirm(command: str) -> str:
    """What the command line does with a reproducer: a traceback, or an exit code."""
    words = shlex.split(command)
    try:
        done = subprocess.run([sys.executable, *words[1:]], cwd=ROOT, capture_output=True,
                              timeout=120, encoding="utf-8", errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout"
    if "Traceback" in done.stderr:
        return "traceback: " + done.stderr.strip().splitlines()[-1][:200]
    return f"exit {done.returncode}: " + (done.stderr.strip().splitlines() or [""])[0][:200]


# -- command lines ------------------------------------------------------------------------------------


def command_campaign(args: argparse.Namespace, out: Path) -> dict:
    start = time.perf_counter()
    lines = CommandLines(out / "commands", random.Random(args.seed))
    counts = {"clean": 0, "accepted": 0, "crash": 0, "timeout": 0}
    crashes: dict[str, list[CommandResult]] = {}
    accepted = []
    sweep = lines.sweep()
    for index in range(args.command_lines):
        argv = next(sweep, None)
        result = lines.run(argv or lines.command_line())
        counts[result.outcome] += 1
        if result.outcome in ("crash", "timeout"):
            crashes.setdefault(result.signature, []).append(result)
        elif result.outcome == "accepted":
            accepted.append("python3 -m cli " + shlex.join(result.argv))
        if (index + 1) % 50 == 0:
            print(f"  {index + 1} command lines, {time.perf_counter() - start:.0f} s, "
                  f"{counts['crash']} crashes", file=sys.stderr)
    elapsed = time.perf_counter() - start
    print(f"\ncommand lines: {args.command_lines} in {elapsed:.0f} s: {counts['clean']} refused "
          f"with a message (exit 1 or 2), {counts['accepted']} accepted (exit 0), "
          f"{counts['crash']} crashes, {counts['timeout']} timeouts")
    classes = []
    for number, (signature, results) in enumerate(
            sorted(crashes.items(), key=lambda item: -len(item[1])), 1):
        shortest = min(results, key=lambda r: len(" ".join(r.argv)))
        command = "python3 -m cli " + shlex.join(shortest.argv)
        last = shortest.detail.strip().splitlines()[-1] if shortest.detail.strip() else ""
        print(f"{number:2d}. {signature}: {len(results)} command lines\n    {command}\n"
              f"    {last[:200]}")
        classes.append({"signature": signature, "count": len(results), "command": command,
                        "detail": shortest.detail})
    return {"tried": args.command_lines, "seconds": round(elapsed), **counts, "classes": classes,
            "accepted_commands": accepted}


if __name__ == "__main__":
    sys.exit(main())
