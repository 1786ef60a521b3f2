/* tests/journal/powercut_shim.c: an LD_PRELOAD library that logs what a process does to
 * the files of one directory, so that a checker can rebuild what a power cut at any
 * moment could have left on the disk.
 *
 * It wraps open/openat (creation and truncation), pwrite/write, fdatasync/fsync,
 * rename/renameat, unlink/unlinkat; for a file or directory under $JSCHED_PC_DIR it
 * appends one event to $JSCHED_PC_LOG after the real call has succeeded, in the order
 * the calls returned (one mutex), each as
 *
 *	u8 op | u8 pad[3] | u32 len1 | u32 len2 | u32 pad | u64 off | name1 | name2-or-data
 *
 * op: 'C' create with truncation (name1; the journal creates every file so), 'W' write (name1, off, data), 'S' sync of a file
 * (name1: its data is durable), 'D' sync of the directory (the names in it are durable),
 * 'R' rename (name1 to name2), 'U' unlink (name1), 'A' acknowledgement (a write to the
 * file named $JSCHED_PC_ACK: data is the 8-byte sequence number the writer acknowledged).
 * A write through a descriptor opened O_DSYNC (or O_SYNC; the journal's O_DIRECT writes
 * are) is durable when it returns: its 'W' is followed at once by an 'S' of its file, so
 * the moment between the two is the one at which a power cut tears it.
 * Names are relative to $JSCHED_PC_DIR.  Built without sanitizers: it sits under them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int log_fd = -1;
static char dir[PATH_MAX], ack[PATH_MAX];
static size_t dirlen;
static int ready = -1;

static void init(void)
{
	const char *d = getenv("JSCHED_PC_DIR"), *l = getenv("JSCHED_PC_LOG"),
		   *a = getenv("JSCHED_PC_ACK");

	if (!d || !l) {
		ready = 0;
		return;
	}
	snprintf(dir, sizeof(dir), "%s", d);
	dirlen = strlen(dir);
	snprintf(ack, sizeof(ack), "%s", a ? a : "");
	log_fd = (int)syscall(SYS_openat, AT_FDCWD, l, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ready = log_fd >= 0;
}

static void raw_write(const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		long w = syscall(SYS_write, log_fd, b, n);

		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			abort();
		}
		b += w;
		n -= (size_t)w;
	}
}

static void emit(char op, const char *n1, const char *n2, const void *data, size_t dlen,
		 uint64_t off)
{
	unsigned char h[24] = {0};
	uint32_t l1 = (uint32_t)strlen(n1), l2 = n2 ? (uint32_t)strlen(n2) : (uint32_t)dlen;

	h[0] = (unsigned char)op;
	memcpy(h + 4, &l1, 4);
	memcpy(h + 8, &l2, 4);
	memcpy(h + 16, &off, 8);
	raw_write(h, sizeof(h));
	raw_write(n1, l1);
	raw_write(n2 ? (const void *)n2 : data, l2);
}

/* rel: the path of fd (or of name relative to dirfd) under the directory, or NULL. */
static const char *rel(int dirfd, const char *name, int fd, char *buf, size_t len)
{
	char link[64], base[PATH_MAX];
	ssize_t n;

	if (ready < 0)
		init();
	if (!ready)
		return NULL;
	if (name && name[0] == '/') {
		snprintf(base, sizeof(base), "%s", name);
	} else {
		int which = name ? dirfd : fd;

		if (name && which == AT_FDCWD) {
			if (!getcwd(base, sizeof(base)))
				return NULL;
		} else {
			snprintf(link, sizeof(link), "/proc/self/fd/%d", which);
			n = readlink(link, base, sizeof(base) - 1);
			if (n < 0)
				return NULL;
			base[n] = 0;
		}
		if (name) {
			size_t bl = strlen(base);

			snprintf(base + bl, sizeof(base) - bl, "/%s", name);
		}
	}
	if (ack[0] && strcmp(base, ack) == 0)
		return "\001ack";
	if (strncmp(base, dir, dirlen) != 0)
		return NULL;
	if (base[dirlen] == 0)
		return ".";
	if (base[dirlen] != '/')
		return NULL;
	snprintf(buf, len, "%s", base + dirlen + 1);
	return buf;
}

#define REAL(name, ret, ...)                                                             \
	static ret (*real_##name)(__VA_ARGS__);                                          \
	if (!real_##name)                                                                \
	real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name)

static void after_open(int fd, int flags)
{
	char buf[PATH_MAX];
	const char *r;

	if (fd < 0 || !(flags & O_TRUNC))
		return;
	r = rel(AT_FDCWD, NULL, fd, buf, sizeof(buf));
	if (r && r[0] != '\001' && strcmp(r, ".")) {
		pthread_mutex_lock(&mu);
		emit('C', r, NULL, NULL, 0, 0);
		pthread_mutex_unlock(&mu);
	}
}

int openat(int dirfd, const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	REAL(openat, int, int, const char *, int, mode_t);
	va_start(ap, flags);
	mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	fd = real_openat(dirfd, path, flags, mode);
	after_open(fd, flags);
	return fd;
}

int openat64(int dirfd, const char *path, int flags, ...);
int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	REAL(openat64, int, int, const char *, int, mode_t);
	va_start(ap, flags);
	mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	fd = real_openat64(dirfd, path, flags, mode);
	after_open(fd, flags);
	return fd;
}

int open(const char *path, int flags, ...);
int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	REAL(open, int, const char *, int, mode_t);
	va_start(ap, flags);
	mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	fd = real_open(path, flags, mode);
	after_open(fd, flags);
	return fd;
}

int open64(const char *path, int flags, ...);
int open64(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode;
	int fd;

	REAL(open64, int, const char *, int, mode_t);
	va_start(ap, flags);
	mode = (mode_t)va_arg(ap, int);
	va_end(ap);
	fd = real_open64(path, flags, mode);
	after_open(fd, flags);
	return fd;
}

static void after_write(int fd, const void *p, ssize_t n, uint64_t off)
{
	char buf[PATH_MAX];
	const char *r;
	bool dsync;

	if (n <= 0)
		return;
	r = rel(AT_FDCWD, NULL, fd, buf, sizeof(buf));
	if (!r)
		return;
	dsync = r[0] != '\001' && (fcntl(fd, F_GETFL) & O_DSYNC) == O_DSYNC;
	pthread_mutex_lock(&mu);
	if (r[0] == '\001') {
		emit('A', "", NULL, p, (size_t)n, 0);
	} else {
		emit('W', r, NULL, p, (size_t)n, off);
		if (dsync)
			emit('S', r, NULL, NULL, 0, 0);
	}
	pthread_mutex_unlock(&mu);
}

ssize_t pwrite(int fd, const void *p, size_t n, off_t off)
{
	ssize_t w;

	REAL(pwrite, ssize_t, int, const void *, size_t, off_t);
	w = real_pwrite(fd, p, n, off);
	after_write(fd, p, w, (uint64_t)off);
	return w;
}

ssize_t pwrite64(int fd, const void *p, size_t n, off_t off);
ssize_t pwrite64(int fd, const void *p, size_t n, off_t off)
{
	ssize_t w;

	REAL(pwrite64, ssize_t, int, const void *, size_t, off_t);
	w = real_pwrite64(fd, p, n, off);
	after_write(fd, p, w, (uint64_t)off);
	return w;
}

ssize_t write(int fd, const void *p, size_t n)
{
	ssize_t w;
	off_t off;

	REAL(write, ssize_t, int, const void *, size_t);
	off = lseek(fd, 0, SEEK_CUR);
	w = real_write(fd, p, n);
	after_write(fd, p, w, off < 0 ? 0 : (uint64_t)off);
	return w;
}

static void after_sync(int fd, int rc)
{
	char buf[PATH_MAX];
	const char *r;

	if (rc < 0)
		return;
	r = rel(AT_FDCWD, NULL, fd, buf, sizeof(buf));
	if (!r || r[0] == '\001')
		return;
	pthread_mutex_lock(&mu);
	if (strcmp(r, ".") == 0)
		emit('D', "", NULL, NULL, 0, 0);
	else
		emit('S', r, NULL, NULL, 0, 0);
	pthread_mutex_unlock(&mu);
}

int fdatasync(int fd)
{
	int rc;

	REAL(fdatasync, int, int);
	rc = real_fdatasync(fd);
	after_sync(fd, rc);
	return rc;
}

int fsync(int fd)
{
	int rc;

	REAL(fsync, int, int);
	rc = real_fsync(fd);
	after_sync(fd, rc);
	return rc;
}

int renameat(int ofd, const char *o, int nfd, const char *n)
{
	char b1[PATH_MAX], b2[PATH_MAX];
	const char *r1, *r2;
	int rc;

	REAL(renameat, int, int, const char *, int, const char *);
	r1 = rel(ofd, o, -1, b1, sizeof(b1));
	r2 = rel(nfd, n, -1, b2, sizeof(b2));
	rc = real_renameat(ofd, o, nfd, n);
	if (rc == 0 && r1 && r2) {
		pthread_mutex_lock(&mu);
		emit('R', r1, r2, NULL, 0, 0);
		pthread_mutex_unlock(&mu);
	}
	return rc;
}

int rename(const char *o, const char *n)
{
	return renameat(AT_FDCWD, o, AT_FDCWD, n);
}

int unlinkat(int dfd, const char *name, int flags)
{
	char b[PATH_MAX];
	const char *r;
	int rc;

	REAL(unlinkat, int, int, const char *, int);
	r = rel(dfd, name, -1, b, sizeof(b));
	rc = real_unlinkat(dfd, name, flags);
	if (rc == 0 && r && r[0] != '\001') {
		pthread_mutex_lock(&mu);
		emit('U', r, NULL, NULL, 0, 0);
		pthread_mutex_unlock(&mu);
	}
	return rc;
}

int unlink(const char *name)
{
	return unlinkat(AT_FDCWD, name, 0);
}
