/*
 * read_tree: read every regular file of a tree the way `manyfiles`' read op does, for
 * bench/predict_accuracy.sh's read task (`xargs cat` forks a process per batch and makes
 * ~5 system calls per file, so the read op's model cannot predict it).
 *
 *   read_tree DIR      one thread, depth first
 *
 * Every directory: openat(parent, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW), getdents via
 * fdopendir/readdir. Every regular file: openat(dirfd, name, O_RDONLY|O_NOFOLLOW|
 * O_CLOEXEC), read() into one 128 KiB buffer until 0, close. Symlinks and other types are
 * skipped; DT_UNKNOWN falls back to fstatat(AT_SYMLINK_NOFOLLOW).
 * Prints the seconds of the timed region (CLOCK_MONOTONIC, from before opening DIR to after
 * the last close: no process start-up, as the read op's phase has none), then the number
 * of files and bytes read, on one line of stdout. Exit 1 on any error.
 *
 * Build: cc -O2 -o read_tree read_tree.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char buf[128 * 1024];
static unsigned long long files, bytes;

static int walk(int dfd) {
    DIR *d = fdopendir(dfd);
    if (!d) { perror("fdopendir"); close(dfd); return -1; }
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        unsigned char t = e->d_type;
        if (t == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) { perror(e->d_name); rc = -1; continue; }
            t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
        }
        if (t == DT_DIR) {
            int c = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (c < 0) { perror(e->d_name); rc = -1; continue; }
            if (walk(c)) rc = -1;
        } else if (t == DT_REG) {
            int f = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
            if (f < 0) { perror(e->d_name); rc = -1; continue; }
            ssize_t n;
            while ((n = read(f, buf, sizeof buf)) != 0) {
                if (n < 0) { if (errno == EINTR) continue; perror(e->d_name); rc = -1; break; }
                bytes += (unsigned long long)n;
            }
            close(f);
            files++;
        }
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: read_tree DIR\n"); return 2; }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int fd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) { perror(argv[1]); return 1; }
    int rc = walk(fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("%.6f %llu %llu\n", (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9, files, bytes);
    return rc ? 1 : 0;
}
