// The machine's floor for one replicated, synced command, measured with nothing in the way: how long a
// message takes from one process to another over loopback TCP (half a ping-pong's round trip), and how
// long an fdatasync of a 4 KiB write takes on the disk under DIR, alone and with three processes syncing
// at once (a leader and two followers writing the same entry). No replicated system on this machine can
// answer a command faster than the hops and the sync its protocol needs; replicate-vs-etcd.sh prints the
// resulting floor beside the measured figures. Prints one line of JSON.
//
//   cc -O2 -o floor floor.c && ./floor DIR [rounds]
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, by_value);
    return v[n / 2];
}

static void fail(const char *what) {
    perror(what);
    exit(1);
}

static int nodelay(int fd) {
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0) fail("setsockopt");
    return fd;
}

static void exactly(int fd, char *buf, size_t n, int writing) {
    size_t done = 0;
    while (done < n) {
        ssize_t k = writing ? write(fd, buf + done, n - done) : read(fd, buf + done, n - done);
        if (k <= 0) fail(writing ? "write" : "read");
        done += (size_t)k;
    }
}

// Median round trip of a 64-byte message between this process and a child echoing it.
static double loopback_rtt_us(int rounds) {
    int server = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (server < 0 || bind(server, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(server, 1) < 0) fail("listen");
    if (getsockname(server, (struct sockaddr *)&addr, &len) < 0) fail("getsockname");
    pid_t child = fork();
    if (child == 0) {
        int c = nodelay(socket(AF_INET, SOCK_STREAM, 0));
        if (connect(c, (struct sockaddr *)&addr, sizeof addr) < 0) fail("connect");
        char buf[64];
        for (int i = 0; i < rounds + 100; i++) {
            exactly(c, buf, sizeof buf, 0);
            exactly(c, buf, sizeof buf, 1);
        }
        _exit(0);
    }
    int s = nodelay(accept(server, NULL, NULL));
    char buf[64];
    memset(buf, 'x', sizeof buf);
    double *rtt = malloc(sizeof(double) * rounds);
    for (int i = 0; i < rounds + 100; i++) {
        double t = now_us();
        exactly(s, buf, sizeof buf, 1);
        exactly(s, buf, sizeof buf, 0);
        if (i >= 100) rtt[i - 100] = now_us() - t;  // the first hundred warm the path up
    }
    waitpid(child, NULL, 0);
    close(s);
    close(server);
    double m = median(rtt, rounds);
    free(rtt);
    return m;
}

// Median time of fdatasync after a 4 KiB write into a file of its own under dir.
static double sync_us(const char *dir, int tag, int rounds) {
    char path[4096];
    snprintf(path, sizeof path, "%s/floor-sync-%d-%d", dir, (int)getpid(), tag);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) fail("open");
    char page[4096];
    memset(page, 'y', sizeof page);
    double *lat = malloc(sizeof(double) * rounds);
    for (int i = 0; i < rounds + 20; i++) {
        if (pwrite(fd, page, sizeof page, (off_t)(i % 256) * 4096) != sizeof page) fail("pwrite");
        double t = now_us();
        if (fdatasync(fd) < 0) fail("fdatasync");
        if (i >= 20) lat[i - 20] = now_us() - t;
    }
    close(fd);
    unlink(path);
    double m = median(lat, rounds);
    free(lat);
    return m;
}

// The median of three processes' median sync times, all three syncing at once.
static double concurrent_sync_us(const char *dir, int rounds) {
    int pipes[3][2];
    for (int p = 0; p < 3; p++) {
        if (pipe(pipes[p]) < 0) fail("pipe");
        if (fork() == 0) {
            double m = sync_us(dir, p + 1, rounds);
            if (write(pipes[p][1], &m, sizeof m) != sizeof m) fail("pipe write");
            _exit(0);
        }
    }
    double each[3];
    for (int p = 0; p < 3; p++) exactly(pipes[p][0], (char *)&each[p], sizeof each[p], 0);
    while (wait(NULL) > 0) {}
    return median(each, 3);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: floor DIR [rounds]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 2000;
    if (rounds < 10) rounds = 10;
    double rtt = loopback_rtt_us(rounds * 5);
    double sync1 = sync_us(argv[1], 0, rounds);
    double sync3 = concurrent_sync_us(argv[1], rounds);
    printf("{\"rttUs\":%.1f,\"hopUs\":%.1f,\"syncUs\":%.1f,\"sync3Us\":%.1f}\n", rtt, rtt / 2, sync1, sync3);
    return 0;
}
