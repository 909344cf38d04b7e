#!/usr/bin/env python3
"""The words of findings, and which changes between runs contradict.

Used by findings-stability.sh. A finding's words are its area and text with
every number blanked, and a number's scaled unit with it (`1.2 GB/s` and
`950 MB/s` are one figure read at two scales): what must hold from run to
run is the sentence, not the figure.

Two sentences of one area *contradict* when one says the opposite of the
other: the same sentence with two names swapped ("pipe is # faster than
unix_stream" / "unix_stream is # faster than pipe", "fastest: a; then b" /
"fastest: b; then a"), or with one word turned into its opposite ("a is
faster than b" / "a is slower than b", "grows" / "falls"). Both at once
(names swapped and "faster" turned to "slower") is the same claim said the
other way round. A move to an adjacent word ("faster" to "no clear
difference", "grows" to "stays flat", one tier split in two) is a flip, not
a contradiction. The note a finding carries when the host's history settled
its words ("words over the last 4 runs") says where the claim came from and
is not part of it.

    python3 findings_words.py --self-test
"""

import re
import sys

# A digit that is part of a name (lz4, zstd3, p99, zstd-19) is a word, not
# a number.
NUM = r"(?<![A-Za-z_\d])(?<![A-Za-z_\d]-)[-+]?\d+(?:[.,]\d+)*"
UNIT = r"(?:\s?(?:[kMGT]?B/s|[kMG]?bit/s|[kMGT]?op/s|[nµm]?s|[KMGT]iB|[kMG]?Hz|B|×|%))?"
# An open bound of an interval ("(1.1–∞)") is a figure too.
PAT = re.compile(f"(?:{NUM}{UNIT}|∞)")

# Words whose swap for the other turns a claim into its opposite.
OPPOSITES = {
    "faster": "slower",
    "slower": "faster",
    "grows": "falls",
    "falls": "grows",
    "cheaper": "dearer",
    "dearer": "cheaper",
    "earlier": "later",
    "later": "earlier",
}

TOKEN = re.compile(r"[A-Za-z_][\w+./-]*|#|[^\sA-Za-z_#]")


# Where a finding's words came from when the host's history settled them
# (src/analysis/history_words.rs): a note on the evidence, not part of the claim.
SETTLED = " (words over the last # runs)"


def words(area, text):
    """The finding's area and text, every number (and its unit) blanked,
    without the note that the history settled its words."""
    w = PAT.sub("#", text)
    if w.endswith(SETTLED):
        w = w[: -len(SETTLED)]
    return area + ": " + w


def tokens(w):
    """A sentence's tokens: names and words, blanks, punctuation."""
    return TOKEN.findall(w)


def contradicts(w1, w2):
    """True when sentence w2 says the opposite of w1 (see the module doc)."""
    t1, t2 = tokens(w1), tokens(w2)
    if len(t1) != len(t2) or t1[0] != t2[0]:
        return False
    diff = [i for i, (a, b) in enumerate(zip(t1, t2)) if a != b]
    opposite = [i for i in diff if OPPOSITES.get(t1[i]) == t2[i]]
    rest = [i for i in diff if i not in opposite]
    swapped = (
        len(rest) == 2
        and t1[rest[0]] == t2[rest[1]]
        and t1[rest[1]] == t2[rest[0]]
    )
    if swapped and len(opposite) == 0:
        return True
    if not rest and len(opposite) % 2 == 1:
        return True
    return False


def contradictions(runs):
    """Pairs of sentences (w1, w2) from different runs that contradict: two
    sentences one run prints side by side are two claims, not one claim
    and its opposite ("glibc above its threshold" and "below it")."""
    union = sorted(set().union(*runs))
    out = []
    for i, a in enumerate(union):
        for b in union[i + 1:]:
            together = any(a in r and b in r for r in runs)
            if not together and contradicts(a, b):
                out.append((a, b))
    return out


def self_test():
    w = lambda t: words("ipc", t)
    # An ordered pair flipping side.
    assert contradicts(w("pipe is 1.3× faster than unix_stream"),
                       w("unix_stream is 1.2× faster than pipe"))
    assert contradicts(w("fastest: a; then b (3.1× slower)"),
                       w("fastest: b; then a (2.9× slower)"))
    # The opposite word.
    assert contradicts(w("float is 1.9× slower than int"),
                       w("float is 1.1× faster than int"))
    assert contradicts(w("fork+exec grows with the memory"),
                       w("fork+exec falls with the memory"))
    # The same claim said the other way round.
    assert not contradicts(w("a is 2× faster than b"), w("b is 2× slower than a"))
    # Adjacent words: flips, not contradictions.
    assert not contradicts(w("fork+exec grows with the memory"),
                           w("fork+exec stays flat with the memory"))
    assert not contradicts(w("fork+exec grows with the memory"),
                           w("fork+exec shows no clear trend with the memory"))
    assert not contradicts(w("fastest: a and b; then c (2× slower)"),
                           w("fastest: a; then b and c (2× slower)"))
    assert not contradicts(w("a is 1.3× faster than b"),
                           w("a and b are within noise of each other"))
    # Other figures are the same words.
    assert w("pipe 1.2 GB/s") == w("pipe 950 MB/s")
    assert w("zstd3 at 31 µs") == w("zstd3 at 1.2 ms")
    assert w("zstd-1 wins") != w("zstd-19 wins")
    assert w("a is 2× faster than b (words over the last 4 runs)") == w("a is 3× faster than b")
    assert w("a −3% and -3%") == w("a −4% and -5%")
    # Another area is another sentence.
    assert not contradicts("ipc: a is # faster than b", "net: b is # faster than a")
    runs = [{w("a is 2× faster than b"), w("x grows")},
            {w("b is 2× faster than a"), w("x stays flat")}]
    assert len(contradictions(runs)) == 1
    # Two claims of one run are not a claim and its opposite.
    above = w("glibc memcpy above its threshold: # (not clearly apart)")
    below = w("glibc memcpy below its threshold: # (not clearly apart)")
    assert len(contradictions([{above, below}, {above}, {below}])) == 0
    assert not contradicts(above, below)
    # Words that are names of two things, not a direction.
    assert not contradicts(w("# less payload"), w("# more payload"))
    print("findings_words: self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    else:
        print(__doc__.strip())
        sys.exit(2)
