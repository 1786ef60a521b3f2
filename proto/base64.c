/* proto/base64.c: RFC 4648 base64 (standard alphabet, padded), for the bytes JSON strings
 * cannot carry: an exec job's stdin and its captured output.  Decoding is strict (no
 * whitespace, padding required, no bits left over) so that one byte string has exactly one
 * encoding on the wire. */
#include "proto/jproto.h"

#include <stdlib.h>

static const char alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int jp_base64_encode(const void *data, size_t n, char **out)
{
	const unsigned char *p = data;
	size_t olen, i, o = 0;
	char *s;

	*out = NULL;
	if (n > (SIZE_MAX - 1) / 4 * 3 - 3)
		return JSCHED_ENOMEM;
	olen = (n + 2) / 3 * 4;
	s = malloc(olen + 1);
	if (!s)
		return JSCHED_ENOMEM;
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];

		s[o++] = alphabet[v >> 18];
		s[o++] = alphabet[(v >> 12) & 63];
		s[o++] = alphabet[(v >> 6) & 63];
		s[o++] = alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);

		s[o++] = alphabet[v >> 18];
		s[o++] = alphabet[(v >> 12) & 63];
		s[o++] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
		s[o++] = '=';
	}
	s[o] = '\0';
	*out = s;
	return 0;
}

/* value: the 6-bit value of a base64 character, -1 for anything else. */
static int value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int jp_base64_decode(const char *text, size_t len, size_t max, unsigned char **out,
		     size_t *outlen)
{
	const unsigned char *t = (const unsigned char *)text;
	size_t pad = 0, n, o = 0;
	unsigned char *buf;

	*out = NULL;
	*outlen = 0;
	if (len % 4 != 0)
		return JSCHED_EBAD_REQUEST;
	if (len == 0)
		return 0;
	if (t[len - 1] == '=')
		pad = t[len - 2] == '=' ? 2 : 1;
	n = len / 4 * 3 - pad;
	if (n > max)
		return JSCHED_ELIMIT_EXCEEDED;
	buf = malloc(n + 1);
	if (!buf)
		return JSCHED_ENOMEM;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int a = value(t[i]), b = value(t[i + 1]);
		int c = last && pad == 2 ? 0 : value(t[i + 2]);
		int d = last && pad >= 1 ? 0 : value(t[i + 3]);
		uint32_t v;

		if (a < 0 || b < 0 || c < 0 || d < 0)
			goto bad;
		v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
		buf[o++] = (unsigned char)(v >> 16);
		if (!(last && pad == 2))
			buf[o++] = (unsigned char)(v >> 8);
		else if (v & 0xffff)
			goto bad;	/* bits left over: not the canonical encoding */
		if (!(last && pad >= 1))
			buf[o++] = (unsigned char)v;
		else if (pad == 1 && (v & 0xff))
			goto bad;
	}
	buf[o] = '\0';
	*out = buf;
	*outlen = o;
	return 0;
bad:
	free(buf);
	return JSCHED_EBAD_REQUEST;
}

json_t *jp_base64_json(const void *data, size_t n)
{
	char *s;
	json_t *j;

	if (jp_base64_encode(data, n, &s) < 0)
		return NULL;
	j = json_string(s);
	free(s);
	return j;
}
