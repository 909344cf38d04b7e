#!/usr/bin/env python3
# The stability verdict against the A/A test, from the pairs kept by
# `scripts/stability-calibration.sh -k DIR`: each run graded again from its
# document (the rule of `harness/canary.rs`, its thresholds given here so
# that other ones can be tried), each pair's false-verdict rate, and the
# tables: grade x A/A held (<= 5% called) or broke, per pair (a pair is
# graded by its less stable run) and per run.
#
#   scripts/stability-table.py [--left SHARE] [--drift CHANGE] [--steal SHARE] [--old] [-v] DIR [LOAD...]
#
# --old grades by the rule before verdicts were graded (stable unless the
# canary spread exceeded 10%, over 10% of rounds stayed slow, or steal
# exceeded 5%), for comparison. LOAD restricts the pairs to those of the named loads (the file prefix).
import argparse
import glob
import json
import os
import statistics

ROUNDS = {"quick": 3, "default": 5, "thorough": 8}
GRADES = ["steady", "shared", "unstable"]


def drift(doc):
    """The canary's drift, as the run computes it: mean of the last third of
    the run's time over the first, from the rounds of its passes."""
    r = ROUNDS.get(doc["run"]["profile"], 3)
    tl = [(x["at_s"], x["canary"]) for m in doc["results"] for x in (m.get("rounds") or [])[:r] if x.get("canary")]
    if not tl:
        return None
    t0 = min(t for t, _ in tl)
    span = max(t for t, _ in tl) - t0
    if span <= 0:
        return None
    first = [c for t, c in tl if (t - t0) / span <= 1 / 3]
    last = [c for t, c in tl if (t - t0) / span >= 2 / 3]
    if len(first) < 2 or len(last) < 2:
        return None
    return statistics.mean(last) / statistics.mean(first) - 1


def grade(doc, a):
    s = doc.get("stability") or {}
    rounds = s.get("rounds") or 0
    left = max(0, s.get("slow_rounds", 0) - s.get("remeasured", 0) - s.get("set_aside", 0))
    left_share = left / rounds if rounds else 0
    d = drift(doc)
    steal = s.get("steal_share") or 0
    others = s.get("others_share") or 0
    why = []
    if a.old:
        bad = s.get("spread", 0) > 0.10 or left_share > 0.10 or steal > 0.05
        return ("unstable" if bad else "steady"), why, {"spread": s.get("spread", 0), "left": left_share, "drift": d or 0, "steal": steal, "others": others}
    if left_share > a.left:
        why.append("left")
    if d is not None and abs(d) > a.drift:
        why.append("drift")
    if steal > a.steal:
        why.append("steal")
    if why:
        g = "unstable"
    elif s.get("spread", 0) > 0.10 or others > 0.10:
        g = "shared"
    else:
        g = "steady"
    return g, why, {"spread": s.get("spread", 0), "left": left_share, "drift": d or 0, "steal": steal, "others": others}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--left", type=float, default=0.50)
    p.add_argument("--drift", type=float, default=0.20)
    p.add_argument("--steal", type=float, default=0.05)
    p.add_argument("--old", action="store_true", help="the rule before graded verdicts")
    p.add_argument("-v", action="store_true", help="one line per pair")
    p.add_argument("dir")
    p.add_argument("loads", nargs="*")
    a = p.parse_args()
    pairs = []
    for c in glob.glob(os.path.join(a.dir, "*-compare.json")):
        load, n = os.path.basename(c).split("-")[:2]
        if a.loads and load not in a.loads:
            continue
        pre = c[: -len("compare.json")]
        rows = json.load(open(c))["rows"]
        rate = sum(r["verdict"] != "same" for r in rows) / max(len(rows), 1)
        runs = [grade(json.load(open(pre + x + ".json")), a) for x in ("a", "b")]
        pairs.append((load, int(n), rate, runs))
    pairs.sort()
    if a.v:
        for load, n, rate, runs in pairs:
            desc = " | ".join(
                f"{g:<8} spread={f['spread']*100:4.1f}% left={f['left']*100:4.1f}% drift={f['drift']*100:+5.1f}% others={f['others']*100:3.0f}% {','.join(w)}"
                for g, w, f in runs
            )
            print(f"{load:<7} {n:>3} {rate*100:5.1f}% {'held ' if rate <= 0.05 else 'BROKE'} | {desc}")
        print()

    def table(title, items):
        print(title)
        print(f"  {'':<10} {'held':>6} {'broke':>6}   mean rate")
        for g in GRADES:
            h = sum(1 for gg, r in items if gg == g and r <= 0.05)
            b = sum(1 for gg, r in items if gg == g and r > 0.05)
            rates = [r for gg, r in items if gg == g]
            m = f"{statistics.mean(rates)*100:5.1f}%" if rates else "    -"
            print(f"  {g:<10} {h:>6} {b:>6}   {m}")

    worst = [(max((g for g, _, _ in runs), key=GRADES.index), rate) for _, _, rate, runs in pairs]
    table(f"pairs ({len(pairs)}), graded by the less stable run:", worst)
    each = [(g, rate) for _, _, rate, runs in pairs for g, _, _ in runs]
    table(f"runs ({len(each)}), each with its pair's A/A:", each)


if __name__ == "__main__":
    main()
