#!/usr/bin/env python3
"""Checks what opcost reported inside an emulated guest (scripts/guest-test.sh).

  guest_check.py topology ENV_JSON --cpus N --nodes N --l3-per-package N
                 --distances ROWS --classes NAME,...
      `opcost env --json`'s topology: every CPU has a core, an L3 group, a
      NUMA node and a package; the nodes hold the CPUs; the declared node
      distances are ROWS (`10,21;21,10`); each listed class's pair is of that
      class, and the classes are those the machine's pairs have; the listed
      NAMEs are among them. Prints the model.
  guest_check.py classes RUN_JSON PREFIX [--expect N]
      The placement classes (`details.class`) of the results whose id starts
      with PREFIX, each with its CPU pair; fails when fewer than N distinct
      classes are seen (no minimum without --expect).
  guest_check.py server RUN_JSON --cpus N --nodes N --thread-counts N
      The server rows of a run: the core-to-core matrix (`run --matrix all`)
      is N x N, symmetric, every pair measured, the line's place checked;
      the topology.c2c rows name a class each; every NUMA latency and read
      entry (cpu node x memory node) ran with all its checked pages on the
      node asked for; memory.bandwidth.read ran at N thread counts or more.

Exits 1 naming the first failed check.
"""
import argparse
import json
import sys

# The levels two CPUs can share, closest first, with the class each gives
# (opcost's vocabulary, host/classes.rs); two CPUs that share none are
# `cross-package`.
LEVELS = [
    ("cpu", "same-cpu"),
    ("core", "same-core"),
    ("l2", "same-l2"),
    ("l3", "same-l3"),
    ("node", "same-node"),
    ("package", "same-package"),
]


def fail(msg):
    print(f"FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def class_of(a, b):
    for key, name in LEVELS:
        if a.get(key) is not None and a.get(key) == b.get(key):
            return name
    return "cross-package"


def topology(args):
    with open(args.file) as f:
        topo = json.load(f).get("topology")
    if not topo:
        fail("`opcost env --json` has no topology")
    cpus = topo.get("cpus", [])
    print(f"  {'cpu':>4} {'core':>5} {'l2':>4} {'l3':>4} {'node':>5} {'package':>8} {'die':>4}")
    for c in cpus:
        print("  " + " ".join(
            f"{str(c.get(k)):>{w}}"
            for k, w in [("cpu", 4), ("core", 5), ("l2", 4), ("l3", 4), ("node", 5), ("package", 8), ("die", 4)]))
    if len(cpus) != args.cpus:
        fail(f"{len(cpus)} CPUs in the topology, {args.cpus} wanted")
    for c in cpus:
        gaps = [k for k in ("core", "l3", "node", "package") if c.get(k) is None]
        if gaps:
            fail(f"CPU {c.get('cpu')} has no {', '.join(gaps)}")
    if topo.get("missing"):
        fail(f"levels missing from the model: {topo['missing']}")
    by_cpu = {c["cpu"]: c for c in cpus}

    nodes = topo.get("nodes", [])
    print("  nodes: " + "; ".join(f"{n['id']}: CPUs {n.get('cpus')}, distances {n.get('distances')}" for n in nodes))
    if len(nodes) != args.nodes:
        fail(f"{len(nodes)} NUMA nodes, {args.nodes} wanted")
    seen = []
    for n in nodes:
        if not n.get("cpus"):
            fail(f"node {n['id']} has no CPUs")
        for cpu in n["cpus"]:
            if by_cpu.get(cpu, {}).get("node") != n["id"]:
                fail(f"node {n['id']} lists CPU {cpu}, whose own node is {by_cpu.get(cpu, {}).get('node')}")
        seen += n["cpus"]
    if sorted(seen) != sorted(by_cpu):
        fail(f"the nodes hold CPUs {sorted(seen)}, the machine has {sorted(by_cpu)}")
    want = [[int(x) for x in row.split(",")] for row in args.distances.split(";")]
    got = [n.get("distances") for n in sorted(nodes, key=lambda n: n["id"])]
    if got != want:
        fail(f"declared node distances {got}, the guest was given {want}")

    packages = sorted({c["package"] for c in cpus})
    for p in packages:
        groups = sorted({c["l3"] for c in cpus if c["package"] == p})
        if len(groups) != args.l3_per_package:
            fail(f"package {p} has {len(groups)} L3 groups {groups}, {args.l3_per_package} wanted")

    classes = topo.get("classes", [])
    print("  classes: " + ", ".join(f"{c['class']} ({c['a']}, {c['b']})" for c in classes))
    for c in classes:
        a, b = by_cpu.get(c["a"]), by_cpu.get(c["b"])
        if a is None or b is None:
            fail(f"{c['class']}'s pair ({c['a']}, {c['b']}) names a CPU not in the topology")
        if class_of(a, b) != c["class"]:
            fail(f"{c['class']}'s pair ({c['a']}, {c['b']}) is of class {class_of(a, b)} by the CPUs' places")
    listed = [c["class"] for c in classes]
    names = [name for _, name in LEVELS] + ["cross-package"]
    has = {class_of(a, b) for a in cpus for b in cpus}
    expected = [n for n in names if n in has]
    if listed != expected:
        fail(f"classes listed {listed}; the pairs of this machine have {expected}")
    for name in args.classes.split(","):
        if name not in listed:
            fail(f"no {name} class among {listed}")


def classes(args):
    with open(args.file) as f:
        results = json.load(f).get("results", [])
    rows = [r for r in results if r.get("id", "").startswith(args.prefix)]
    if not rows:
        fail(f"no result whose id starts with {args.prefix}")
    found = []
    for r in rows:
        d = r.get("details") or {}
        cls = d.get("class")
        pair = [d.get(k) for k in ("parent_cpu", "peer_cpu") if k in d]
        print(f"  {r['id']}: class {cls}, CPUs {pair if pair else '(not named)'}")
        if cls is not None and cls not in found:
            found.append(cls)
    print(f"  {len(found)} distinct classes in {args.prefix}: {', '.join(found)}")
    if args.expect is not None and len(found) < args.expect:
        fail(f"{args.prefix} carries {len(found)} placement classes, {args.expect} wanted")


def server(args):
    with open(args.file) as f:
        doc = json.load(f)
    results = {r["id"]: r for r in doc.get("results", [])}
    m = doc.get("matrix")
    if not m:
        fail("the run has no core-to-core matrix")
    n = len(m["cpus"])
    print(f"  matrix: {n} CPUs ({m['sampling']}), {m['seconds']:.1f} s, line on {m['line']}")
    if n != args.cpus:
        fail(f"the matrix has {n} CPUs, {args.cpus} wanted")
    ns = m["ns"]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            if ns[i][j] is None or ns[i][j] <= 0 or ns[i][j] != ns[j][i]:
                fail(f"matrix cell ({m['cpus'][i]}, {m['cpus'][j]}) is {ns[i][j]} against {ns[j][i]}")
    if "checked with move_pages" not in m["line"]:
        fail(f"the line's place was not checked: {m['line']}")
    c2c = sorted((d.get("details") or {}).get("class", "?") for k, d in results.items() if k.startswith("topology.c2c.cas/"))
    print(f"  topology.c2c.cas classes: {', '.join(c2c)}")
    if "?" in c2c or len(c2c) < 3:
        fail(f"topology.c2c.cas rows: {c2c}")
    numa = [k for k in results if k.startswith("memory.numa.")]
    want = 2 * args.nodes * args.nodes
    for k in sorted(numa):
        d = results[k].get("details") or {}
        pl = d.get("placement") or {}
        print(f"  {k}: CPU {d.get('cpu')}, pages {pl.get('pages_on_node')}/{pl.get('pages_checked')}, declared distance {d.get('declared_distance')}")
        if not pl.get("pages_checked") or pl.get("pages_on_node") != pl.get("pages_checked"):
            fail(f"{k}: pages not all on the node asked for: {pl}")
    if len(numa) != want:
        fail(f"{len(numa)} NUMA entries, {want} wanted (latency and read, {args.nodes} x {args.nodes})")
    counts = sorted(k.split("threads=")[1] for k in results if k.startswith("memory.bandwidth.read/threads=") and "dynamic" not in k)
    print(f"  read bandwidth at threads = {', '.join(counts)}")
    if len(counts) < args.thread_counts:
        fail(f"read bandwidth at {len(counts)} thread counts, {args.thread_counts} wanted")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="what", required=True)
    t = sub.add_parser("topology")
    t.add_argument("file")
    t.add_argument("--cpus", type=int, required=True)
    t.add_argument("--nodes", type=int, required=True)
    t.add_argument("--l3-per-package", type=int, required=True)
    t.add_argument("--distances", required=True)
    t.add_argument("--classes", required=True)
    v = sub.add_parser("server")
    v.add_argument("file")
    v.add_argument("--cpus", type=int, required=True)
    v.add_argument("--nodes", type=int, required=True)
    v.add_argument("--thread-counts", type=int, required=True)
    c = sub.add_parser("classes")
    c.add_argument("file")
    c.add_argument("prefix")
    c.add_argument("--expect", type=int)
    args = parser.parse_args()
    {"topology": topology, "classes": classes, "server": server}[args.what](args)


if __name__ == "__main__":
    main()
