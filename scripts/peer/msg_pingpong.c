/* A System V message-queue ping-pong: one private queue, type 1 to the
 * child, type 2 back; the child echoes. Prints ns per round trip. The
 * queue is removed on every exit path.
 *
 *   msg_pingpong SIZE COUNT PARENT_CPU PEER_CPU     (CPU -1: not pinned)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "peer.h"

static int q = -1;
static void rm(void) { if (q >= 0) msgctl(q, IPC_RMID, 0); }
static void on_signal(int sig) { rm(); _exit(128 + sig); }

int main(int argc, char **argv) {
    struct peer_args p = peer_args(argc, argv);
    size_t size = p.size;
    long count = p.count;
    struct { long type; char text[65536]; } *m = calloc(1, sizeof *m);
    if (size > sizeof m->text) return 2;
    q = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
    if (q < 0) { perror("msgget"); return 1; }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(p.peer_cpu);
        for (;;) {
            ssize_t n = msgrcv(q, m, size, 1, 0);
            if (n < 0) _exit(1);
            m->type = 2;
            if (msgsnd(q, m, n, 0) < 0) _exit(1);
        }
    }
    pin(p.parent_cpu);
    struct timespec t0, t1;
    for (long i = -1000; i < count; i++) {
        if (i == 0) clock_gettime(CLOCK_MONOTONIC, &t0);
        m->type = 1;
        memset(m->text, (int)i, size);
        if (msgsnd(q, m, size, 0) < 0 || msgrcv(q, m, size, 2, 0) != (ssize_t)size ||
            m->text[size - 1] != (char)i) {
            return pingpong_failed(i, pid, rm);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return pingpong_done(t0, t1, count, pid, rm);
}
