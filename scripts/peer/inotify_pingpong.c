/* An inotify ping-pong, as opcost's ipc.inotify.rtt does it: two files in
 * a private directory under $TMPDIR (default /tmp); the parent writes its
 * message over the start of `a` (pwrite at 0) and waits on an inotify
 * descriptor with an IN_MODIFY watch on `b`, the child the other way round;
 * each reads the message back with pread once its event has come. Prints
 * ns per round trip (a write and its event each way). The directory is
 * removed on every exit path.
 *
 *   inotify_pingpong SIZE COUNT PARENT_CPU PEER_CPU     (CPU -1: not pinned)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "peer.h"

static char dir[PATH_MAX], fa[PATH_MAX + 2], fb[PATH_MAX + 2];
static void rm(void) { unlink(fa); unlink(fb); rmdir(dir); }
static void on_signal(int sig) { rm(); _exit(128 + sig); }

/* An inotify descriptor with an IN_MODIFY watch on `path`. */
static int watch(const char *path) {
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0 || inotify_add_watch(fd, path, IN_MODIFY) < 0) { perror("inotify"); exit(1); }
    return fd;
}

/* Waits for an event on `in`, then reads `size` bytes of `rx` into `buf`. */
static int recv_msg(int in, int rx, char *buf, size_t size) {
    char ev[4096] __attribute__((aligned(8)));
    if (read(in, ev, sizeof ev) <= 0) return -1;
    return pread(rx, buf, size, 0) == (ssize_t)size ? 0 : -1;
}

int main(int argc, char **argv) {
    struct peer_args p = peer_args(argc, argv);
    size_t size = p.size;
    long count = p.count;
    char *m = calloc(1, size + 1);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/inotify-pingpong-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(fa, sizeof fa, "%s/a", dir);
    snprintf(fb, sizeof fb, "%s/b", dir);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int a = open(fa, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int b = open(fb, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (a < 0 || b < 0) { perror("open"); rm(); return 1; }
    int in_parent = watch(fb), in_child = watch(fa);
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(p.peer_cpu);
        for (;;) {
            if (recv_msg(in_child, a, m, size) < 0) _exit(1);
            if (pwrite(b, m, size, 0) != (ssize_t)size) _exit(1);
        }
    }
    pin(p.parent_cpu);
    struct timespec t0, t1;
    for (long i = -1000; i < count; i++) {
        if (i == 0) clock_gettime(CLOCK_MONOTONIC, &t0);
        memset(m, (int)i, size);
        if (pwrite(a, m, size, 0) != (ssize_t)size || recv_msg(in_parent, b, m, size) < 0 ||
            m[size - 1] != (char)i) {
            return pingpong_failed(i, pid, rm);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return pingpong_done(t0, t1, count, pid, rm);
}
