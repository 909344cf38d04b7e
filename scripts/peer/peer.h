/* What the C peers of scripts/peer-ipc.sh share: their command line,
 *
 *   PROGRAM SIZE COUNT PARENT_CPU PEER_CPU     (CPU -1: not pinned)
 *
 * and pinning a process to a CPU. */
#ifndef OPCOST_PEER_H
#define OPCOST_PEER_H
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

/* The message size, the message count and the two CPUs. */
struct peer_args {
    size_t size;
    long count;
    int parent_cpu, peer_cpu;
};

/* The command line's SIZE COUNT PARENT_CPU PEER_CPU; exits 2 with the
 * usage when there are not four. */
static struct peer_args peer_args(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s SIZE COUNT PARENT_CPU PEER_CPU\n", argv[0]);
        exit(2);
    }
    struct peer_args p = {strtoull(argv[1], 0, 10), atol(argv[2]), atoi(argv[3]), atoi(argv[4])};
    return p;
}

/* Pins the calling process to `cpu` (-1: leaves it where it is). */
static void pin(int cpu) {
    if (cpu < 0) return;
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}
#endif
