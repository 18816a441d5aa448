/*
 * MD5 (RFC 1321): the checksum of GCS objects (md5Hash) and W&B artifact
 * manifest entries (digest), both base64. Portable C; little-endian
 * words are assembled byte by byte.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/md5.h"

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static const unsigned char R[64] = {
    7,	12, 17, 22, 7,	12, 17, 22, 7,	12, 17, 22, 7,	12, 17, 22, 5,	9,  14, 20, 5,	9,
    14, 20, 5,	9,  14, 20, 5,	9,  14, 20, 4,	11, 16, 23, 4,	11, 16, 23, 4,	11, 16, 23,
    4,	11, 16, 23, 6,	10, 15, 21, 6,	10, 15, 21, 6,	10, 15, 21, 6,	10, 15, 21,
};

static uint32_t rol(uint32_t x, unsigned n)
{
	return (x << n) | (x >> (32 - n));
}

static void block(uint32_t h[4], const unsigned char *p)
{
	uint32_t m[16], a = h[0], b = h[1], c = h[2], d = h[3];

	for (int i = 0; i < 16; i++)
		m[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
		       (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
	for (int i = 0; i < 64; i++) {
		uint32_t f, t;
		int g;

		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		t = d;
		d = c;
		c = b;
		b = b + rol(a + f + K[i] + m[g], R[i]);
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
}

void gdn_md5_init(struct gdn_md5 *c)
{
	c->h[0] = 0x67452301;
	c->h[1] = 0xefcdab89;
	c->h[2] = 0x98badcfe;
	c->h[3] = 0x10325476;
	c->len = 0;
	c->nbuf = 0;
}

void gdn_md5_update(struct gdn_md5 *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	c->len += len;
	if (c->nbuf) {
		size_t n = 64 - c->nbuf < len ? 64 - c->nbuf : len;

		memcpy(c->buf + c->nbuf, p, n);
		c->nbuf += n;
		p += n;
		len -= n;
		if (c->nbuf < 64)
			return;
		block(c->h, c->buf);
		c->nbuf = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		block(c->h, p);
	memcpy(c->buf, p, len);
	c->nbuf = len;
}

void gdn_md5_final(struct gdn_md5 *c, unsigned char out[GDN_MD5_LEN])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = {0x80};
	size_t padlen = c->nbuf < 56 ? 56 - c->nbuf : 120 - c->nbuf;

	for (int i = 0; i < 8; i++)
		pad[padlen + (size_t)i] = (unsigned char)(bits >> (8 * i));
	gdn_md5_update(c, pad, padlen + 8);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			out[4 * i + j] = (unsigned char)(c->h[i] >> (8 * j));
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void gdn_md5_b64(const unsigned char d[GDN_MD5_LEN], char out[GDN_MD5_B64_SIZE])
{
	size_t o = 0;

	for (size_t i = 0; i < GDN_MD5_LEN; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16;

		if (i + 1 < GDN_MD5_LEN)
			v |= (uint32_t)d[i + 1] << 8;
		if (i + 2 < GDN_MD5_LEN)
			v |= d[i + 2];
		out[o++] = B64[(v >> 18) & 63];
		out[o++] = B64[(v >> 12) & 63];
		out[o++] = i + 1 < GDN_MD5_LEN ? B64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < GDN_MD5_LEN ? B64[v & 63] : '=';
	}
	out[o] = '\0';
}

bool gdn_md5_b64_valid(const char *s)
{
	if (strlen(s) != 24 || strcmp(s + 22, "=="))
		return false;
	for (size_t i = 0; i < 22; i++)
		if (!strchr(B64, s[i]) || !s[i])
			return false;
	/* The last character's low 4 bits must be zero (16 bytes end there). */
	return ((strchr(B64, s[21]) - B64) & 15) == 0;
}

/* gdn_read_chunks' callback: one chunk into the digest. */
static void update_chunk(const void *buf, size_t len, void *ctx)
{
	gdn_md5_update(ctx, buf, len);
}

int gdn_md5_file(const char *path, uint64_t limit, struct gdn_md5 *c, uint64_t *hashed,
		 struct gdn_err *err)
{
	return gdn_read_chunks(path, limit, update_chunk, c, hashed, err);
}
