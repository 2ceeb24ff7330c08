/* diskfault: an LD_PRELOAD shim that injects I/O faults on the files of one directory only.
 *
 * libfiu's posix/io/rw faults hit every descriptor (sockets, the log, stdout); this shim
 * remembers which descriptors were opened under $DISKFAULT_DIR and only touches those, so a
 * test can fail the data dir's reads while the server keeps talking to its clients.
 *
 * The faults are switched on and off while the process runs by creating or removing files in
 * $DISKFAULT_CTL (one stat(2) per intercepted call; this is a test tool, not a fast path):
 *   read   read/pread/readv fail with EIO
 *   write  write/pwrite/writev fail with EIO
 *   short  write/pwrite/writev write at most half of what was asked (at least one byte),
 *          as a kernel may under memory pressure or on a signal; callers must loop
 *          (the first shortened write creates $DISKFAULT_CTL/short.hit)
 * Built by tests/harness/diskfault.py.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 65536
static volatile unsigned char tracked[MAX_FDS];

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Whether PATH (absolute, or relative to a tracked DIRFD) lies under $DISKFAULT_DIR. */
static int under_dir(int dirfd, const char *path) {
    const char *dir = env("DISKFAULT_DIR");
    if (!dir || !path) return 0;
    if (path[0] != '/') {
        if (dirfd >= 0 && dirfd < MAX_FDS && tracked[dirfd]) return 1;
        char cwd[PATH_MAX];
        if (dirfd != AT_FDCWD || !getcwd(cwd, sizeof cwd)) return 0;
        size_t n = strlen(dir);
        return strncmp(cwd, dir, n) == 0 && (cwd[n] == '/' || cwd[n] == 0);
    }
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == 0);
}

static void track(int fd, int dirfd, const char *path) {
    if (fd >= 0 && fd < MAX_FDS) tracked[fd] = (unsigned char)under_dir(dirfd, path);
}

/* Whether fault NAME is on for descriptor FD. */
static int fault(int fd, const char *name) {
    if (fd < 0 || fd >= MAX_FDS || !tracked[fd]) return 0;
    const char *ctl = env("DISKFAULT_CTL");
    if (!ctl) return 0;
    char p[PATH_MAX];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", ctl, name);
    return stat(p, &st) == 0;
}

#define REAL(ret, name, ...)                                              \
    static ret (*real_##name)(__VA_ARGS__);                               \
    if (!real_##name) real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
    REAL(int, open, const char *, int, ...);
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_open(path, flags, m);
    track(fd, AT_FDCWD, path);
    return fd;
}

int open64(const char *path, int flags, ...) {
    REAL(int, open64, const char *, int, ...);
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_open64(path, flags, m);
    track(fd, AT_FDCWD, path);
    return fd;
}

int openat(int dirfd, const char *path, int flags, ...) {
    REAL(int, openat, int, const char *, int, ...);
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_openat(dirfd, path, flags, m);
    track(fd, dirfd, path);
    return fd;
}

int openat64(int dirfd, const char *path, int flags, ...) {
    REAL(int, openat64, int, const char *, int, ...);
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    int fd = real_openat64(dirfd, path, flags, m);
    track(fd, dirfd, path);
    return fd;
}

int close(int fd) {
    REAL(int, close, int);
    if (fd >= 0 && fd < MAX_FDS) tracked[fd] = 0;
    return real_close(fd);
}

int dup2(int old, int new) {
    REAL(int, dup2, int, int);
    int fd = real_dup2(old, new);
    if (fd >= 0 && fd < MAX_FDS) tracked[fd] = old >= 0 && old < MAX_FDS ? tracked[old] : 0;
    return fd;
}

#define EIO_IF(fd, name)      \
    if (fault(fd, name)) {    \
        errno = EIO;          \
        return -1;            \
    }

/* Half of N while the short fault is on; the first time, creates $DISKFAULT_CTL/short.hit so
 * that a test can tell the fault was reached. */
static size_t shorten(int fd, size_t n) {
    static int hit;
    if (n <= 1 || !fault(fd, "short")) return n;
    if (!hit) {
        char p[PATH_MAX];
        REAL(int, open, const char *, int, ...);
        REAL(int, close, int);
        hit = 1;
        snprintf(p, sizeof p, "%s/short.hit", env("DISKFAULT_CTL"));
        int fd2 = real_open(p, O_CREAT | O_WRONLY, 0644);
        if (fd2 >= 0) real_close(fd2);
    }
    return n / 2;
}

ssize_t read(int fd, void *buf, size_t n) {
    REAL(ssize_t, read, int, void *, size_t);
    EIO_IF(fd, "read");
    return real_read(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    REAL(ssize_t, pread, int, void *, size_t, off_t);
    EIO_IF(fd, "read");
    return real_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off) {
    REAL(ssize_t, pread64, int, void *, size_t, off_t);
    EIO_IF(fd, "read");
    return real_pread64(fd, buf, n, off);
}

ssize_t readv(int fd, const struct iovec *iov, int cnt) {
    REAL(ssize_t, readv, int, const struct iovec *, int);
    EIO_IF(fd, "read");
    return real_readv(fd, iov, cnt);
}

ssize_t write(int fd, const void *buf, size_t n) {
    REAL(ssize_t, write, int, const void *, size_t);
    EIO_IF(fd, "write");
    return real_write(fd, buf, shorten(fd, n));
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    REAL(ssize_t, pwrite, int, const void *, size_t, off_t);
    EIO_IF(fd, "write");
    return real_pwrite(fd, buf, shorten(fd, n), off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
    REAL(ssize_t, pwrite64, int, const void *, size_t, off_t);
    EIO_IF(fd, "write");
    return real_pwrite64(fd, buf, shorten(fd, n), off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    REAL(ssize_t, writev, int, const struct iovec *, int);
    EIO_IF(fd, "write");
    /* A short vectored write: only the first non-empty buffer, shortened. */
    if (fault(fd, "short")) {
        REAL(ssize_t, write, int, const void *, size_t);
        for (int i = 0; i < cnt; i++)
            if (iov[i].iov_len > 0) return real_write(fd, iov[i].iov_base, shorten(fd, iov[i].iov_len));
    }
    return real_writev(fd, iov, cnt);
}
