/* proto/utf8.c: cutting and cleaning text so that it stays UTF-8.
 *
 * Every message and field path the codec and the daemon build can quote the peer's own
 * text (an op name, a member name, a ref, a handler's error), cut to fit a buffer.  A cut
 * by bytes can split a multi-byte character, and jansson then refuses the string: the
 * error reply could not be built and the request went unanswered.  So quotes are cut at a
 * character boundary (jp_utf8_cut, for "%.*s"), and every error text is scrubbed once it
 * is formatted (jp_utf8_scrub), which also catches a cut made by vsnprintf at the end of
 * a fixed buffer.  Well-formed means RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF (what jansson accepts).
 */
#include "proto/jproto.h"

#include <string.h>

size_t jp_utf8_seq(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	unsigned c = s[0];

	/* Each test reads a byte only after the one before it passed, and NUL never
	 * passes, so nothing past the terminator is read. */
	if (c == 0)
		return 0;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
			       (s[3] & 0xc0) == 0x80
			       ? 4
			       : 0;
	}
	return 0;
}

int jp_utf8_cut(const char *s, size_t max)
{
	size_t i = 0;

	if (max > JP_UTF8_CUT_MAX)
		max = JP_UTF8_CUT_MAX;
	while (s[i]) {
		size_t k = jp_utf8_seq(s + i);

		if (k == 0)
			k = 1; /* a stray byte: jp_utf8_scrub drops it later */
		if (i + k > max)
			break;
		i += k;
	}
	return (int)i;
}

bool jp_utf8_valid(const char *s)
{
	for (size_t k; *s; s += k)
		if ((k = jp_utf8_seq(s)) == 0)
			return false;
	return true;
}

size_t jp_utf8_scrub(char *s)
{
	size_t r = 0, w = 0;

	while (s[r]) {
		size_t k = jp_utf8_seq(s + r);

		if (k == 0) {
			r++;
			continue;
		}
		if (w != r)
			memmove(s + w, s + r, k);
		w += k;
		r += k;
	}
	s[w] = '\0';
	return w;
}
