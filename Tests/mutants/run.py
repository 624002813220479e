#!/usr/bin/env python3
"""Applies each mutant of catalogue.json to the sources, one at a time, runs the tests that
should catch it (with a deadline), restores the file, and prints each mutant as CAUGHT or
SURVIVED. Run on demand from the repository's root (it takes minutes; not part of CI):

    python3 Tests/mutants/run.py [NAME-SUBSTRING ...]

A mutant whose text is not found exactly once is reported as STALE: the catalogue needs the
source's new words. Equivalent mutants (which no test can catch, and need not) are listed in
EQUIVALENTS below with why.
"""
import json
import os
import subprocess
import sys
import time

EQUIVALENTS = {
    "unseen counted without read_at": "read implies seen: a read row is never unseen, so the filter changes nothing",
    "the order of writes inside one transaction": "nothing outside the transaction sees the order",
}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEADLINE = 900


def run(mutant):
    path = os.path.join(ROOT, mutant["file"])
    with open(path, encoding="utf-8") as f:
        original = f.read()
    if original.count(mutant["find"]) != 1:
        return "STALE", f"found {original.count(mutant['find'])} times in {mutant['file']}"
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(original.replace(mutant["find"], mutant["replace"]))
        build = subprocess.run(["swift", "build", "--build-tests"], cwd=ROOT, capture_output=True, text=True, timeout=DEADLINE)
        if build.returncode != 0:
            return "CAUGHT", "by the compiler"
        try:
            # A mutant of an engine's own code names the engine its tests run on ("env").
            environment = dict(os.environ, **mutant.get("env", {}))
            test = subprocess.run(["swift", "test", "--skip-build", "--filter", mutant["tests"]], cwd=ROOT,
                                  capture_output=True, text=True, timeout=DEADLINE, env=environment)
        except subprocess.TimeoutExpired:
            return "CAUGHT", f"by the deadline ({DEADLINE} s): a wait without one?"
        failed = [line.split('"')[1] for line in test.stdout.splitlines() if line.startswith("✘ Test ") and '"' in line]
        if test.returncode != 0:
            return "CAUGHT", (failed[0] if failed else "the test run failed")
        ran = [line for line in test.stdout.splitlines() if line.startswith("✔ Test run with")]
        return "SURVIVED", ran[-1] if ran else "no test ran"
    finally:
        with open(path, "w", encoding="utf-8") as f:
            f.write(original)


def main():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalogue.json"), encoding="utf-8") as f:
        catalogue = json.load(f)
    wanted = sys.argv[1:]
    results = {"CAUGHT": 0, "SURVIVED": 0, "STALE": 0}
    for mutant in catalogue:
        if wanted and not any(w in mutant["name"] for w in wanted):
            continue
        started = time.time()
        verdict, detail = run(mutant)
        results[verdict] += 1
        print(f"{verdict:8}  {mutant['name']}  ({mutant['rule']})\n          {detail}  [{time.time() - started:.0f} s]", flush=True)
    subprocess.run(["swift", "build", "--build-tests"], cwd=ROOT, capture_output=True)  # back to the real sources
    print(f"\n{results['CAUGHT']} caught, {results['SURVIVED']} survived, {results['STALE']} stale")
    print("equivalent, and not in the catalogue:")
    for name, why in EQUIVALENTS.items():
        print(f"  {name}: {why}")
    return 1 if results["SURVIVED"] or results["STALE"] else 0


if __name__ == "__main__":
    sys.exit(main())
