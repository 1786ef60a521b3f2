/* daemon/run/slurm_script.c: argv to a batch script (see slurm_script.h). */
#include "daemon/run/slurm_script.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t jd_sh_quote(const char *s, char *out, size_t cap)
{
	size_t n = 0;

#define PUT(c)                                                                           \
	do {                                                                             \
		if (n + 1 < cap)                                                         \
			out[n] = (c);                                                    \
		n++;                                                                     \
	} while (0)
	PUT('\'');
	for (; *s; s++) {
		if (*s == '\'') {
			PUT('\'');
			PUT('\\');
			PUT('\'');
			PUT('\'');
		} else {
			PUT(*s);
		}
	}
	PUT('\'');
#undef PUT
	if (cap)
		out[n < cap ? n : cap - 1] = '\0';
	return n;
}

/* A growing text buffer; on allocation failure `failed` is set and appends do nothing. */
struct text {
	char *p;
	size_t len, cap;
	int failed;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *q;

		while (t->len + n + 1 > cap)
			cap *= 2;
		if (!(q = realloc(t->p, cap))) {
			t->failed = 1;
			return;
		}
		t->p = q;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

/* put_quoted: s single-quoted. */
static void put_quoted(struct text *t, const char *s)
{
	size_t need = jd_sh_quote(s, NULL, 0);
	char *q = malloc(need + 1);

	if (!q) {
		t->failed = 1;
		return;
	}
	jd_sh_quote(s, q, need + 1);
	put(t, q, need);
	free(q);
}

char *jd_slurm_script(char *const *argv, const char *cwd, int has_path, uint64_t job)
{
	struct text t = {0};
	char line[128];
	int search = !strchr(argv[0], '/') && !has_path;

	if (argv[0][0] == '-') {
		errno = EINVAL;
		return NULL;
	}
	snprintf(line, sizeof(line), "#!/bin/sh\n# jschedd job %llu\n", (unsigned long long)job);
	puts_(&t, line);
	puts_(&t, "cd ");
	put_quoted(&t, cwd);
	puts_(&t, " || { echo 'jschedd: cannot enter the working directory' >&2; exit 126; }\n");
	if (search) {
		/* No PATH of its own: the default directories, in order, without setting one. */
		puts_(&t, "for jschedd_dir in /usr/local/bin /usr/bin /bin; do\n"
			  "\tif [ -f \"$jschedd_dir\"/");
		put_quoted(&t, argv[0]);
		puts_(&t, " ] && [ -x \"$jschedd_dir\"/");
		put_quoted(&t, argv[0]);
		puts_(&t, " ]; then\n\t\texec \"$jschedd_dir\"/");
	} else {
		puts_(&t, "exec ");
	}
	put_quoted(&t, argv[0]);
	for (size_t i = 1; argv[i]; i++) {
		puts_(&t, " ");
		put_quoted(&t, argv[i]);
	}
	puts_(&t, "\n");
	if (search) {
		puts_(&t, "\tfi\ndone\necho 'jschedd: no such command: '");
		put_quoted(&t, argv[0]);
		puts_(&t, " >&2\nexit 127\n");
	}
	if (t.failed) {
		free(t.p);
		errno = ENOMEM;
		return NULL;
	}
	return t.p;
}
