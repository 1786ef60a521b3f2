/* daemon/run/slurm_script.h: the batch script the slurm backend submits for an exec job.
 *
 * Slurm runs a batch job as a script, so the job's argv has to become shell text.  The
 * script enters the working directory and `exec`s the command, so the command itself is
 * the batch step's process: its exit status and the signal that killed it are what
 * Slurm records as the job's exit code, with no shell in between.  Every word of argv
 * and the working directory is written single-quoted ('...' with each ' written '\''):
 * inside single quotes the shell gives no character a meaning, so no argv can run
 * anything but itself.  Bytes are copied as they are (the shell does not care about
 * UTF-8); a NUL cannot occur in a C string.
 *
 * Lookup of argv[0] without a '/': with PATH in the job's environment the shell's own
 * lookup does it (execvp's rules); without one the script tries the default directories
 * /usr/local/bin, /usr/bin, /bin in order itself, so the command sees no PATH it was not
 * given.  Not found: "jschedd: no such command: NAME" on stderr and status 127, as a
 * shell would.  Working directory missing: a message and status 126.
 *
 * No Slurm headers are needed: this file is built (and unit-tested) without libslurm.
 */
#ifndef JD_SLURM_SCRIPT_H
#define JD_SLURM_SCRIPT_H

#include <stddef.h>
#include <stdint.h>

/* jd_sh_quote: s single-quoted for the shell into out (capacity cap).  Returns the
 * length the quoted text needs (without the NUL, as snprintf), so a caller can size out;
 * out is NUL-terminated whenever cap > 0. */
size_t jd_sh_quote(const char *s, char *out, size_t cap);

/* jd_slurm_script: the batch script for argv (NULL-terminated, argv[0] not empty),
 * entering cwd, for jschedd job `job`; has_path says whether the job's environment sets
 * PATH.  Returns a malloc'd NUL-terminated text, or NULL: out of memory (errno ENOMEM)
 * or argv[0] begins with '-' (errno EINVAL: some shells' `exec` would take it for an
 * option; the backend refuses such a job at submit). */
char *jd_slurm_script(char *const *argv, const char *cwd, int has_path, uint64_t job);

#endif /* JD_SLURM_SCRIPT_H */
