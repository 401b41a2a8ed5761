/*
 * tree_loop: the minimal C loop of the calls manyfiles' engines make per file, on a tree
 * of one level of subdirectories (ROOT/d00000 … with the files directly in them), for
 * bench/tenmillion.sh: the limit the engines are held against at 100 k, 1 M and 10 M files.
 *
 *   tree_loop gen  DIR FILES DIRS SIZE THREADS   mkdirat each subdirectory; every file:
 *                                                openat(O_CREAT|O_EXCL), a write of SIZE
 *                                                bytes (none when 0), close
 *   tree_loop scan DIR THREADS                   every subdirectory: openat, getdents;
 *                                                every entry: statx(AT_SYMLINK_NOFOLLOW)
 *   tree_loop pair SRC DST THREADS               what sync --dry-run does: both sides'
 *                                                subdirectory listed, every entry statx'd
 *                                                on both sides, size and mtime compared
 *   tree_loop copy SRC DST THREADS               DST made; every file: statx, openat src,
 *                                                fstat, flistxattr, openat dst (O_CREAT|
 *                                                O_EXCL), read/write until 0, futimens,
 *                                                close both (the calls manyfiles copy makes
 *                                                keeping what cp -a keeps: BENCHMARKS.md's
 *                                                syscall table)
 *   tree_loop copy-lean SRC DST THREADS          what copy --no-owner --no-xattrs --no-acls
 *                                                --no-hard-links --no-flags makes (strace:
 *                                                no flistxattr, and the file's size read
 *                                                with no read to 0): statx, openat src,
 *                                                fstat, openat dst, read/write of SIZE,
 *                                                futimens, close both
 *   tree_loop rm   DIR THREADS                   every subdirectory: getdents, unlinkat each
 *                                                entry, then unlinkat the subdirectory and DIR
 *
 * Threads take whole subdirectories from an atomic counter, as manyfiles' work units do.
 * Prints the seconds of the timed region (CLOCK_MONOTONIC, from before the first call on
 * the tree to after the last) and the files handled, on one line of stdout. Exit 1 on any
 * error. Directory listing uses getdents64 through readdir on an fd opened O_NOFOLLOW.
 *
 * Build: cc -O2 -pthread -o tree_loop tree_loop.c
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

enum mode { GEN, SCAN, PAIR, COPY, COPY_LEAN, RM };

static enum mode mode;
static const char *src_path, *dst_path;
static int src_fd = -1, dst_fd = -1;
static long nfiles, ndirs, fsize;
static char **subdirs; /* names of SRC's subdirectories (all modes but gen) */
static long nsub;
static atomic_long next_dir, done_files;
static char wbuf[1 << 16];

static void die(const char *what, const char *name) {
    fprintf(stderr, "tree_loop: %s %s: %s\n", what, name ? name : "", strerror(errno));
    exit(1);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static DIR *open_dir(int at, const char *name) {
    int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) die("open dir", name);
    DIR *d = fdopendir(fd);
    if (!d) die("fdopendir", name);
    return d;
}

static int is_dot(const char *n) { return n[0] == '.' && (!n[1] || (n[1] == '.' && !n[2])); }

static void gen_dir(long i) {
    char name[32];
    snprintf(name, sizeof name, "d%05ld", i);
    if (mkdirat(src_fd, name, 0755)) die("mkdir", name);
    int dfd = openat(src_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) die("open dir", name);
    long per = nfiles / ndirs + (i < nfiles % ndirs);
    for (long f = 0; f < per; f++) {
        char fn[32];
        snprintf(fn, sizeof fn, "f%07ld", f);
        int fd = openat(dfd, fn, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) die("create", fn);
        for (long left = fsize; left > 0;) {
            long n = left < (long)sizeof wbuf ? left : (long)sizeof wbuf;
            if (write(fd, wbuf, n) != n) die("write", fn);
            left -= n;
        }
        close(fd);
    }
    close(dfd);
    atomic_fetch_add(&done_files, per);
}

static void scan_dir(const char *name) {
    DIR *d = open_dir(src_fd, name);
    int dfd = dirfd(d);
    struct dirent *e;
    long n = 0;
    struct statx sx;
    while ((e = readdir(d))) {
        if (is_dot(e->d_name)) continue;
        if (statx(dfd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx)) die("statx", e->d_name);
        n++;
    }
    closedir(d);
    atomic_fetch_add(&done_files, n);
}

static void pair_dir(const char *name) {
    DIR *a = open_dir(src_fd, name), *b = open_dir(dst_fd, name);
    int afd = dirfd(a), bfd = dirfd(b);
    struct dirent *e;
    long n = 0, differ = 0;
    /* The other side's listing is read as sync reads it (its names are looked up below). */
    while ((e = readdir(b))) {
    }
    struct statx sa, sb;
    while ((e = readdir(a))) {
        if (is_dot(e->d_name)) continue;
        if (statx(afd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sa)) die("statx", e->d_name);
        if (statx(bfd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sb)) die("statx", e->d_name);
        differ += sa.stx_size != sb.stx_size || sa.stx_mtime.tv_sec != sb.stx_mtime.tv_sec ||
                  sa.stx_mtime.tv_nsec != sb.stx_mtime.tv_nsec;
        n++;
    }
    if (differ) fprintf(stderr, "tree_loop: %ld files differ in %s\n", differ, name);
    closedir(a);
    closedir(b);
    atomic_fetch_add(&done_files, n);
}

static void copy_dir(const char *name) {
    DIR *d = open_dir(src_fd, name);
    int sfd = dirfd(d);
    if (mkdirat(dst_fd, name, 0755)) die("mkdir", name);
    int tfd = openat(dst_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tfd < 0) die("open dir", name);
    struct dirent *e;
    long n = 0;
    static __thread char buf[1 << 17];
    char xl[4096];
    struct statx sx;
    struct stat st;
    while ((e = readdir(d))) {
        if (is_dot(e->d_name)) continue;
        if (statx(sfd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx)) die("statx", e->d_name);
        int in = openat(sfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0) die("open", e->d_name);
        if (fstat(in, &st)) die("fstat", e->d_name);
        if (mode == COPY && flistxattr(in, xl, sizeof xl) < 0) die("flistxattr", e->d_name);
        int out = openat(tfd, e->d_name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, sx.stx_mode & 07777);
        if (out < 0) die("create", e->d_name);
        for (unsigned long long left = sx.stx_size;;) {
            if (mode == COPY_LEAN && left == 0) break;
            ssize_t r = read(in, buf, sizeof buf);
            if (r < 0) die("read", e->d_name);
            if (r == 0) break;
            if (write(out, buf, r) != r) die("write", e->d_name);
            left -= (unsigned long long)r < left ? (unsigned long long)r : left;
        }
        struct timespec ts[2] = {{sx.stx_atime.tv_sec, sx.stx_atime.tv_nsec},
                                 {sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec}};
        if (futimens(out, ts)) die("futimens", e->d_name);
        close(in);
        close(out);
        n++;
    }
    closedir(d);
    close(tfd);
    atomic_fetch_add(&done_files, n);
}

static void rm_dir(const char *name) {
    DIR *d = open_dir(src_fd, name);
    int dfd = dirfd(d);
    struct dirent *e;
    long n = 0;
    while ((e = readdir(d))) {
        if (is_dot(e->d_name)) continue;
        if (unlinkat(dfd, e->d_name, 0)) die("unlink", e->d_name);
        n++;
    }
    closedir(d);
    if (unlinkat(src_fd, name, AT_REMOVEDIR)) die("rmdir", name);
    atomic_fetch_add(&done_files, n);
}

static void *worker(void *arg) {
    (void)arg;
    long total = mode == GEN ? ndirs : nsub;
    for (long i; (i = atomic_fetch_add(&next_dir, 1)) < total;) {
        switch (mode) {
        case GEN: gen_dir(i); break;
        case SCAN: scan_dir(subdirs[i]); break;
        case PAIR: pair_dir(subdirs[i]); break;
        case COPY:
        case COPY_LEAN: copy_dir(subdirs[i]); break;
        case RM: rm_dir(subdirs[i]); break;
        }
    }
    return NULL;
}

/* SRC's subdirectory names, listed before the clock starts for every mode but gen, whose
 * listing is part of the work: the engines list the root too, but one getdents pass over
 * 10,000 names is noise beside 10 M files. */
static void list_subdirs(void) {
    DIR *d = open_dir(AT_FDCWD, src_path);
    struct dirent *e;
    long cap = 1024;
    subdirs = malloc(cap * sizeof *subdirs);
    while ((e = readdir(d))) {
        if (is_dot(e->d_name)) continue;
        if (nsub == cap) subdirs = realloc(subdirs, (cap *= 2) * sizeof *subdirs);
        subdirs[nsub++] = strdup(e->d_name);
    }
    closedir(d);
}

static void usage(void) {
    fprintf(stderr, "usage: tree_loop gen DIR FILES DIRS SIZE THREADS | scan DIR THREADS | pair SRC DST THREADS |\n"
                    "       copy SRC DST THREADS | copy-lean SRC DST THREADS | rm DIR THREADS\n");
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 4) usage();
    const char *m = argv[1];
    long threads;
    if (!strcmp(m, "gen") && argc == 7) {
        mode = GEN;
        src_path = argv[2];
        nfiles = atol(argv[3]);
        ndirs = atol(argv[4]);
        fsize = atol(argv[5]);
        threads = atol(argv[6]);
        if (ndirs < 1) usage();
    } else if ((!strcmp(m, "scan") || !strcmp(m, "rm")) && argc == 4) {
        mode = !strcmp(m, "scan") ? SCAN : RM;
        src_path = argv[2];
        threads = atol(argv[3]);
    } else if ((!strcmp(m, "pair") || !strcmp(m, "copy") || !strcmp(m, "copy-lean")) && argc == 5) {
        mode = !strcmp(m, "pair") ? PAIR : !strcmp(m, "copy") ? COPY : COPY_LEAN;
        src_path = argv[2];
        dst_path = argv[3];
        threads = atol(argv[4]);
    } else {
        usage();
    }
    if (threads < 1 || threads > 256) usage();
    memset(wbuf, 'x', sizeof wbuf);
    if (mode != GEN) list_subdirs();
    double t0 = now();
    if (mode == GEN && mkdir(src_path, 0755)) die("mkdir", src_path);
    if ((mode == COPY || mode == COPY_LEAN) && mkdir(dst_path, 0755)) die("mkdir", dst_path);
    src_fd = open(src_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (src_fd < 0) die("open", src_path);
    if (dst_path) {
        dst_fd = open(dst_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dst_fd < 0) die("open", dst_path);
    }
    pthread_t t[256];
    for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, NULL);
    for (long i = 0; i < threads; i++) pthread_join(t[i], NULL);
    if (mode == RM && rmdir(src_path)) die("rmdir", src_path);
    double t1 = now();
    printf("%.6f %ld\n", t1 - t0, atomic_load(&done_files));
    return 0;
}
