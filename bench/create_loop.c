/*
 * create_loop: the minimal reference for `manyfiles ops --ops create`.
 *
 *   create_loop DIR N SIZE                 one thread: N files of SIZE bytes in DIR
 *   create_loop DIR N SIZE THREADS DIRS    THREADS threads over DIRS subdirectories of
 *                                          DIR (N/DIRS files each); threads take whole
 *                                          directories from an atomic counter
 *
 * Every file: openat(dirfd, name, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0644), one write of
 * SIZE bytes from a buffer of random bytes made before the clock starts, close. Names
 * are 16 bytes like manyfiles': 'f' + the file's global index in base 36 (fixed width)
 * + a pseudo-random filler. Subdirectories are d00..d99 (mkdirat, inside the timed
 * region, as manyfiles does). DIR must exist and be empty.
 *
 * Prints the seconds of the timed region (CLOCK_MONOTONIC, from just before the first
 * mkdirat/openat to after the last close) on stdout, nothing else.
 *
 * Build: cc -O2 -pthread -o create_loop create_loop.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_LEN 16

static const char ALPHABET[] = "0123456789abcdefghijklmnopqrstuvwxyz";

static int root_fd;
static uint64_t n_files, size, n_dirs, per_dir;
static int width;
static char *buf;
static atomic_uint_fast64_t next_dir;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* 'f' + base-36 index (width digits) + filler up to NAME_LEN, NUL-terminated. */
static void file_name(uint64_t index, char out[NAME_LEN + 1]) {
    out[0] = 'f';
    uint64_t v = index;
    for (int i = width; i >= 1; i--) {
        out[i] = ALPHABET[v % 36];
        v /= 36;
    }
    uint64_t r = mix64(index + 0x9e3779b97f4a7c15ULL);
    for (int i = width + 1; i < NAME_LEN; i++) {
        out[i] = ALPHABET[r % 36];
        r = r / 36 ? r / 36 : mix64(r + i);
    }
    out[NAME_LEN] = 0;
}

static void create_one(int dfd, uint64_t index) {
    char name[NAME_LEN + 1];
    file_name(index, name);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        die("openat");
    uint64_t off = 0;
    while (off < size) {
        ssize_t n = write(fd, buf + off, size - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            die("write");
        }
        if (n == 0) {
            errno = ENOSPC;
            die("write");
        }
        off += (uint64_t)n;
    }
    if (close(fd) < 0)
        die("close");
}

static void dir_name(uint64_t d, char out[24]) {
    snprintf(out, 24, "d%02llu", (unsigned long long)d);
}

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        uint64_t d = atomic_fetch_add_explicit(&next_dir, 1, memory_order_relaxed);
        if (d >= n_dirs)
            break;
        char dn[24];
        dir_name(d, dn);
        int dfd = openat(root_fd, dn, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            die("openat dir");
        uint64_t first = d * per_dir, last = first + per_dir;
        if (d == n_dirs - 1)
            last = n_files;
        for (uint64_t i = first; i < last; i++)
            create_one(dfd, i);
        close(dfd);
    }
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: %s DIR N SIZE [THREADS DIRS]\n", argv[0]);
        return 2;
    }
    n_files = strtoull(argv[2], NULL, 10);
    size = strtoull(argv[3], NULL, 10);
    int threads = argc == 6 ? atoi(argv[4]) : 1;
    n_dirs = argc == 6 ? strtoull(argv[5], NULL, 10) : 0;
    if (n_files == 0 || threads < 1 || (argc == 6 && (n_dirs == 0 || n_dirs > 100))) {
        fprintf(stderr, "bad arguments\n");
        return 2;
    }
    /* base-36 digits needed for indices 0..n_files-1 */
    width = 1;
    for (uint64_t v = n_files - 1; v >= 36; v /= 36)
        width++;
    if (1 + width > NAME_LEN) {
        fprintf(stderr, "too many files for %d-byte names\n", NAME_LEN);
        return 2;
    }
    buf = malloc(size ? size : 1);
    if (!buf)
        die("malloc");
    uint64_t r = 0x243f6a8885a308d3ULL;
    for (uint64_t i = 0; i < size; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        buf[i] = (char)(r >> 24);
    }
    root_fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        die(argv[1]);

    double t0, t1;
    if (argc == 4) {
        t0 = now();
        for (uint64_t i = 0; i < n_files; i++)
            create_one(root_fd, i);
        t1 = now();
    } else {
        per_dir = n_files / n_dirs;
        pthread_t tids[64];
        if (threads > 64)
            threads = 64;
        t0 = now();
        for (uint64_t d = 0; d < n_dirs; d++) {
            char dn[24];
            dir_name(d, dn);
            if (mkdirat(root_fd, dn, 0755) < 0)
                die("mkdirat");
        }
        for (int t = 1; t < threads; t++)
            if (pthread_create(&tids[t], NULL, worker, NULL) != 0)
                die("pthread_create");
        worker(NULL);
        for (int t = 1; t < threads; t++)
            pthread_join(tids[t], NULL);
        t1 = now();
    }
    printf("%.6f\n", t1 - t0);
    return 0;
}
