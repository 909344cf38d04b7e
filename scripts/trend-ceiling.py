#!/usr/bin/env python3
"""What an ideal detector could find in the kept trend histories.

For each history of tests/fixtures/trend/ (or the CSV files given), the
shift test of tests/trend_history.rs (the first 24 runs, every other
benchmark made 8% and 5% slower from run 17, a point counted when it is
within one run of the step) is answered by an oracle instead of opcost's
detector: a scan over every split (each side at least 3 runs) of a
Gaussian series whose run-to-run noise is *known* (the series' robust
noise, 1.4826 MAD of successive log differences / sqrt 2, as
opcost::trend::noise), at the same 5% false-alarm rate. No real detector
does better without knowing the noise: its figures are the ceiling for
`opcost trend`'s found rate at that noise. Also printed: the fixed-split
test (the step's run known in advance), a looser bound still.

    scripts/trend-ceiling.py [HISTORY.csv ...]
"""

import collections
import csv
import glob
import math
import os
import random
import statistics
import sys

RUNS = 24
STEP_AT = 16  # the first run after the step, 0-based
MIN_SEGMENT = 3
TRIALS = 600


def scan(x):
    """The largest standardised mean difference over the splits, and where."""
    n = len(x)
    best, where = 0.0, None
    for k in range(MIN_SEGMENT, n - MIN_SEGMENT + 1):
        z = abs(statistics.fmean(x[k:]) - statistics.fmean(x[:k])) / math.sqrt(1 / k + 1 / (n - k))
        if z > best:
            best, where = z, k
    return best, where


def main(paths):
    rng = random.Random(1)
    null = sorted(scan([rng.gauss(0, 1) for _ in range(RUNS)])[0] for _ in range(4000))
    crit = null[int(0.95 * len(null))]
    power_cache = {}

    def scan_power(effect):
        """Share of Gaussian series (unit noise) with a step of `effect`
        at run 17 whose scan passes `crit` within one run of it."""
        key = round(min(effect, 20.0), 1)
        if key not in power_cache:
            hits = 0
            for _ in range(TRIALS):
                x = [rng.gauss(0, 1) + (key if i >= STEP_AT else 0.0) for i in range(RUNS)]
                z, k = scan(x)
                hits += z > crit and abs(k - STEP_AT) <= 1
            power_cache[key] = hits / TRIALS
        return power_cache[key]

    def fixed_power(effect):
        se = math.sqrt(1 / STEP_AT + 1 / (RUNS - STEP_AT))
        phi = lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2)))
        return phi(effect / se - 1.96) + phi(-effect / se - 1.96)

    print(f"scan's critical value at 5% over {RUNS} runs: {crit:.2f}")
    print("history                 8% scan oracle   5% scan oracle   8% step's run known")
    for path in paths:
        series = collections.defaultdict(list)
        with open(path) as f:
            for row in csv.DictReader(f):
                series[row["id"]].append((int(row["run"]), float(row["median"])))
        shifted = sorted(series)[::2]
        sums = [0.0, 0.0, 0.0]
        for sid in shifted:
            x = [math.log(v) for _, v in sorted(series[sid])[:RUNS]]
            d = [b - a for a, b in zip(x, x[1:])]
            med = statistics.median(d)
            sd = 1.4826 * statistics.median(abs(v - med) for v in d) / math.sqrt(2)
            for j, step in enumerate((1.08, 1.05)):
                effect = math.log(step) / sd if sd > 0 else float("inf")
                sums[j] += scan_power(effect)
            sums[2] += fixed_power(math.log(1.08) / sd) if sd > 0 else 1.0
        n = len(shifted)
        cells = "   ".join(f"{s:4.1f}/{n} ({100 * s / n:3.0f}%)" for s in sums)
        print(f"{os.path.basename(path):22}  {cells}")


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    args = sys.argv[1:] or sorted(glob.glob(os.path.join(here, "..", "tests", "fixtures", "trend", "*.csv")))
    if not args:
        sys.exit("trend-ceiling: no history given and none kept in tests/fixtures/trend/")
    main(args)
