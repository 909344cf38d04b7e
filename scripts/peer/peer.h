/* What the C peers of scripts/peer-ipc.sh share: their command line,
 *
 *   PROGRAM SIZE COUNT PARENT_CPU PEER_CPU     (CPU -1: not pinned)
 *
 * pinning a process to a CPU, and the end of a ping-pong. */
#ifndef OPCOST_PEER_H
#define OPCOST_PEER_H
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

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

/* A ping-pong's failed round trip `i`: says so, kills the echoing child
 * `pid` and calls `rm` (removes what the program made); returns main's
 * exit code, 1. */
static inline int pingpong_failed(long i, pid_t pid, void (*rm)(void)) {
    fprintf(stderr, "round trip %ld failed\n", i);
    kill(pid, SIGKILL);
    rm();
    return 1;
}

/* A ping-pong's end: kills and reaps the echoing child `pid`, calls `rm`,
 * and prints the ns per round trip of `count` round trips from t0 to t1;
 * returns main's exit code, 0. */
static inline int pingpong_done(struct timespec t0, struct timespec t1, long count, pid_t pid,
                                void (*rm)(void)) {
    kill(pid, SIGKILL);
    waitpid(pid, 0, 0);
    rm();
    double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
    printf("%.0f\n", ns / count);
    return 0;
}
#endif
