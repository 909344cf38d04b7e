#!/usr/bin/env python3
"""The ceiling on what `opcost ab` can see: an oracle test that knows each
row's noise exactly.

Reads the comparisons `scripts/ab-power.sh -k DIR` keeps (ab-SHIFT-TRY.json,
`opcost ab --format json`). A row's paired interval is Student's t on the
log ratios of its round pairs, so its half-width h over n pairs gives the
spread of one pair's log ratio: s = h * sqrt(n) / t(0.975, n - 1). The
row's s is the median of its s over every kept comparison (any shift: a
known slowdown moves the level, not the spread). An oracle z-test that
knew s would call a slowdown of d with probability
Phi(ln(1 + d) * sqrt(n) / s - 1.96): the best any test of n pairs can do,
whatever its statistics. Printed: that power at +3%, +5% and +10% for n =
the rounds ab took and for more pairs, per area, and the pairs each row
would need for 80% power at +3%.

    scripts/ab-ceiling.py DIR [DIR...]
"""

import glob
import json
import math
import os
import statistics
import sys
from collections import defaultdict
from statistics import NormalDist

# Student's t, two-sided 95%, by degrees of freedom.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
        8: 2.306, 9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t975(df):
    """Student's t quantile for df degrees of freedom (the next listed)."""
    for k in sorted(T975):
        if df <= k:
            return T975[k]
    return 1.96


def pair_sd(row):
    """One pair's log-ratio spread from a row's paired interval, or None."""
    lo, hi = row.get("ci_low"), row.get("ci_high")
    rounds = row.get("rounds") or []
    if row.get("method") != "paired_rounds" or not lo or not hi or lo <= 0 or len(rounds) != 2:
        return None
    n = min(rounds)
    if n < 2:
        return None
    return (math.log(hi) - math.log(lo)) / 2 * math.sqrt(n) / t975(n - 1), n


def main(dirs):
    files = [f for d in dirs for f in sorted(glob.glob(os.path.join(d, "ab-*.json")))]
    if not files:
        sys.exit(f"no ab-*.json in {' '.join(dirs)} (keep them with scripts/ab-power.sh -k DIR)")
    sds, areas, pairs = defaultdict(list), {}, []
    for f in files:
        for row in json.load(open(f))["rows"]:
            got = pair_sd(row)
            if got:
                sds[row["id"]].append(got[0])
                areas[row["id"]] = row["area"]
                pairs.append(got[1])
    if not sds:
        sys.exit("no row with a paired interval in the kept comparisons")
    s = {i: statistics.median(v) for i, v in sds.items()}
    n0 = int(statistics.median(pairs))
    z = NormalDist()
    power = lambda sd, n, d: z.cdf(math.log1p(d) * math.sqrt(n) / sd - 1.96)
    print(f"{len(files)} comparisons, {len(s)} rows, {n0} pairs a row")
    q = sorted(s.values())
    pick = lambda xs, p: xs[min(len(xs) - 1, int(len(xs) * p))]
    print("one pair's log-ratio spread, quartiles: "
          + ", ".join(f"{100 * pick(q, p):.1f}%" for p in (0.25, 0.5, 0.75)))
    print(f"{'pairs':>6} {'+3%':>7} {'+5%':>7} {'+10%':>7}   (oracle: mean share of rows called slower)")
    for n in (n0, 2 * n0, 4 * n0, 8 * n0):
        cells = [100 * statistics.mean(power(sd, n, d) for sd in s.values()) for d in (0.03, 0.05, 0.10)]
        print(f"{n:>6} " + " ".join(f"{c:>6.1f}%" for c in cells))
    by = defaultdict(list)
    for i, sd in s.items():
        by[areas[i]].append(sd)
    print(f"by area at {n0} pairs, +3%:")
    for a in sorted(by):
        print(f"  {a:<10} {len(by[a]):>4} rows  {100 * statistics.mean(power(sd, n0, 0.03) for sd in by[a]):5.1f}%")
    need = sorted(((1.96 + 0.8416) * sd / math.log1p(0.03)) ** 2 for sd in s.values())
    print("pairs a row needs for 80% power at +3%, quartiles: "
          + ", ".join(f"{math.ceil(pick(need, p))}" for p in (0.25, 0.5, 0.75)))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
