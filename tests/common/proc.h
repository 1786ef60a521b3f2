/* tests/common/proc.h: what the tests that run programs share (libc only).
 *
 * jtc_copy_file() puts a copy of a built program where another user can run it: a test
 * that starts jschedd as an unprivileged user cannot run it from the checkout, which may
 * sit in a directory only its owner can enter (a clone under `mktemp -d`, a 0700 home).
 */
#ifndef JTC_PROC_H
#define JTC_PROC_H

#include <sys/types.h>

/* jtc_copy_file: copy the file `src` to `dst` (created or truncated) with mode `mode`.
 * Returns 0, or -errno of the step that failed. */
int jtc_copy_file(const char *src, const char *dst, mode_t mode);

#endif /* JTC_PROC_H */
