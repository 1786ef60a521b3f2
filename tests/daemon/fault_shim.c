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
 * Built without sanitizers: it sits under their interceptors (TSan's, in the executable,
 * find it as the next definition; ASan's runtime wants to come first, so the test sets
 * ASAN_OPTIONS=verify_asan_link_order=0 for the daemon).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*sync_fn)(int);

/* faulty: true if a call on fd must fail now. */
static int faulty(int fd)
{
	const char *flag = getenv("JSCHED_FAULT_FLAG"), *match = getenv("JSCHED_FAULT_MATCH");
	char link[64], path[4096];
	ssize_t n;

	if (!flag || !match || access(flag, F_OK) != 0)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	return strstr(path, match) != NULL;
}

#define NEXT(type, name) ((type)dlsym(RTLD_NEXT, name))

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	if (faulty(fd)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(pwrite_fn, "pwrite")(fd, p, n, off);
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off)
{
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
