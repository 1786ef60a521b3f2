/* test_exports.c: what libjsched shows the world.  The shared library exports exactly the
 * functions jsched.h declares with JSCHED_API (no codec jp_* symbol, nothing else), carries
 * its SONAME, the static library holds the codec too (so -ljsched suffices), and jsched.pc
 * says the right version.  Uses nm and objdump (binutils, which gcc depends on).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SYMS 2048

struct names {
	size_t n;
	char name[MAX_SYMS][64];
};

static bool has(const struct names *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->name[i], name) == 0)
			return true;
	return false;
}

static void add(struct names *s, const char *name, size_t len)
{
	assert_true(s->n < MAX_SYMS);
	assert_true(len < sizeof s->name[0]);
	memcpy(s->name[s->n], name, len);
	s->name[s->n][len] = '\0';
	s->n++;
}

/* The defined symbols `nm` lists for path (dynamic ones with -D), versions stripped;
 * absolute symbols (the version node) left out. */
static void nm(const char *opts, const char *path, struct names *out)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "nm %s --defined-only '%s'", opts, path);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[512];
	out->n = 0;
	while (fgets(line, sizeof line, p) != NULL) {
		char type, sym[256];
		if (sscanf(line, "%*s %c %255s", &type, sym) != 2 || type == 'A')
			continue;
		add(out, sym, strcspn(sym, "@"));
	}
	assert_int_equal(pclose(p), 0);
	assert_true(out->n > 0);
}

/* The names of the functions jsched.h declares with JSCHED_API. */
static void declared(struct names *out)
{
	FILE *f = fopen(JSCHED_SRCDIR "/include/jsched/jsched.h", "r");
	assert_non_null(f);
	static char text[1 << 17];
	size_t len = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[len] = '\0';
	out->n = 0;
	for (char *p = strstr(text, "JSCHED_API "); p != NULL; p = strstr(p + 1, "JSCHED_API ")) {
		if (p > text && p[-1] != '\n')
			continue; /* the macro's own definition and mentions in comments */
		char *paren = strchr(p, '(');
		assert_non_null(paren);
		char *end = paren;
		while (end > p && isspace((unsigned char)end[-1]))
			end--;
		char *start = end;
		while (start > p && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
			start--;
		add(out, start, (size_t)(end - start));
	}
}

static void test_exports_match_header(void **state)
{
	(void)state;
	static struct names exported, decl;
	nm("-D", LIBJSCHED_SO, &exported);
	declared(&decl);
	assert_true(decl.n > 50);
	for (size_t i = 0; i < exported.n; i++) {
		if (strncmp(exported.name[i], "jsched_", 7) != 0)
			fail_msg("libjsched.so exports %s", exported.name[i]);
		if (!has(&decl, exported.name[i]))
			fail_msg("libjsched.so exports %s, which jsched.h does not declare", exported.name[i]);
	}
	for (size_t i = 0; i < decl.n; i++)
		if (!has(&exported, decl.name[i]))
			fail_msg("jsched.h declares %s, which libjsched.so does not export", decl.name[i]);
}

static void test_soname(void **state)
{
	(void)state;
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "objdump -p '%s'", LIBJSCHED_SO);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	char line[512];
	bool found = false;
	while (fgets(line, sizeof line, p) != NULL)
		if (strstr(line, "SONAME") != NULL && strstr(line, "libjsched.so.0") != NULL)
			found = true;
	assert_int_equal(pclose(p), 0);
	assert_true(found);
}

static void test_static_has_codec(void **state)
{
	(void)state;
	static struct names syms;
	nm("-g", JSCHED_BUILD_DIR "/lib/libjsched.a", &syms);
	assert_true(has(&syms, "jsched_connect"));
	assert_true(has(&syms, "jsched_spec_exec"));
	assert_true(has(&syms, "jp_decoder_init")); /* the codec is inside */
	assert_true(has(&syms, "jp_base64_encode"));
}

static void test_pkgconfig(void **state)
{
	(void)state;
	char version[64] = "";
	FILE *f = fopen(JSCHED_SRCDIR "/VERSION", "r");
	assert_non_null(f);
	assert_non_null(fgets(version, sizeof version, f));
	fclose(f);
	version[strcspn(version, "\n")] = '\0';
	f = fopen(JSCHED_BUILD_DIR "/lib/pkgconfig/jsched.pc", "r");
	assert_non_null(f);
	char line[512];
	bool v = false, libs = false, req = false, cflags = false;
	while (fgets(line, sizeof line, f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, "Version: ", 9) == 0)
			v = strcmp(line + 9, version) == 0;
		if (strncmp(line, "Libs: ", 6) == 0)
			libs = strstr(line, "-ljsched") != NULL;
		if (strncmp(line, "Requires.private: ", 18) == 0)
			req = strstr(line, "jansson") != NULL;
		if (strncmp(line, "Cflags: ", 8) == 0)
			cflags = strstr(line, "-I${includedir}") != NULL;
		assert_null(strchr(line, '@')); /* every placeholder substituted */
	}
	fclose(f);
	assert_true(v);
	assert_true(libs);
	assert_true(req);
	assert_true(cflags);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exports_match_header),
		cmocka_unit_test(test_soname),
		cmocka_unit_test(test_static_has_codec),
		cmocka_unit_test(test_pkgconfig),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
