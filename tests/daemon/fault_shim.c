/* tests/daemon/fault_shim.c: an LD_PRELOAD library that makes a full disk on demand.
 *
 * While the file named by $JSCHED_FAULT_FLAG exists, every write and sync (pwrite,
 * pwrite64, write, fdatasync, fsync) on a descriptor whose path contains
 * $JSCHED_FAULT_MATCH fails with ENOSPC, as a full file system fails them; remove the
 * file and they work again.  The daemon's journal preallocates its segments, so on a
 * real disk ENOSPC comes when a segment is made; here it comes at any write, which is
 * the harder case (records that fail in the middle of a segment).  Each intercepted call
 * costs an access() and a readlink() of /proc/self/fd/N: a test's daemon only.
 *
 * A filesystem that refuses O_DIRECT: with $JSCHED_FAULT_NO_DIRECT "open", an open of a
 * path containing $JSCHED_FAULT_MATCH with O_DIRECT fails with EINVAL (as tmpfs did
 * before Linux 6.6); with "write", the open works and every write on such a descriptor
 * fails with EINVAL (as some filesystems refuse only the I/O).
 *
 * Built without sanitizers: it sits under their interceptors (TSan's, in the executable,
 * find it as the next definition; ASan's runtime wants to come first, so the test sets
 * ASAN_OPTIONS=verify_asan_link_order=0 for the daemon).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*sync_fn)(int);

/* fd_matches: true if fd's path contains $JSCHED_FAULT_MATCH. */
static int fd_matches(int fd)
{
	const char *match = getenv("JSCHED_FAULT_MATCH");
	char link[64], path[4096];
	ssize_t n;

	if (!match)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, match) != NULL;
}

/* faulty: true if a call on fd must fail now. */
static int faulty(int fd)
{
	const char *flag = getenv("JSCHED_FAULT_FLAG");

	return flag && access(flag, F_OK) == 0 && fd_matches(fd);
}

#define NEXT(type, name) ((type)dlsym(RTLD_NEXT, name))

/* no_direct: "open" or "write" if $JSCHED_FAULT_NO_DIRECT says so, else NULL. */
static const char *no_direct(void)
{
	const char *v = getenv("JSCHED_FAULT_NO_DIRECT");

	return v && v[0] ? v : NULL;
}

/* direct_refused: true if a write on fd must fail with EINVAL (O_DIRECT refused). */
static int direct_refused(int fd)
{
	const char *how = no_direct();
	int fl;

	return how && strcmp(how, "write") == 0 && (fl = fcntl(fd, F_GETFL)) >= 0 &&
	       (fl & O_DIRECT) && fd_matches(fd);
}

typedef int (*open_fn)(const char *, int, ...);

static int open_as(const char *name, const char *path, int flags, va_list ap)
{
	const char *how = no_direct(), *match = getenv("JSCHED_FAULT_MATCH");
	mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;

	if ((flags & O_DIRECT) && how && strcmp(how, "open") == 0 && match && strstr(path, match)) {
		errno = EINVAL;
		return -1;
	}
	return NEXT(open_fn, name)(path, flags, mode);
}

/* open and open64: the same wrapper, each calling its own next definition. */
#define OPEN_WRAPPER(name)                                                                 \
	int name(const char *path, int flags, ...)                                         \
	{                                                                                   \
		va_list ap;                                                                 \
		int fd;                                                                     \
                                                                                            \
		va_start(ap, flags);                                                        \
		fd = open_as(#name, path, flags, ap);                                       \
		va_end(ap);                                                                 \
		return fd;                                                                  \
	}
OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	if (direct_refused(fd)) {
		errno = EINVAL;
		return -1;
	}
	if (faulty(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(pwrite_fn, "pwrite")(fd, p, n, off);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off)
{
	if (direct_refused(fd)) {
		errno = EINVAL;
		return -1;
	}
	if (faulty(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(pwrite_fn, "pwrite64")(fd, p, n, off);
}

ssize_t write(int fd, const void *p, size_t n)
{
	if (faulty(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(write_fn, "write")(fd, p, n);
}

int fdatasync(int fd)
{
	if (faulty(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(sync_fn, "fdatasync")(fd);
}

int fsync(int fd)
{
	if (faulty(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(sync_fn, "fsync")(fd);
}
