/* tests/common/proc.c: what the tests that run programs share (see proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common/proc.h"

int jtc_copy_file(const char *src, const char *dst, mode_t mode)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (out < 0) {
		rc = -errno;
		goto out_in;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out_out;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0) {
				if (errno == EINTR)
					continue;
				rc = -errno;
				goto out_out;
			}
			off += w;
		}
	}
	/* open's mode is filtered through the umask; the copy gets exactly `mode`. */
	if (fchmod(out, mode) < 0)
		rc = -errno;
out_out:
	if (close(out) < 0 && rc == 0)
		rc = -errno;
out_in:
	close(in);
	return rc;
}
