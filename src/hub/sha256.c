/*
 * SHA-256 as specified in FIPS 180-4 (sections 4.1.2, 4.2.2, 5.1.1, 5.3.3
 * and 6.2). The portable block function follows the specification word by
 * word; on x86-64 CPUs with the SHA extensions the same compression runs
 * on the SHA-NI instructions (chosen at run time), which keeps hashing
 * well ahead of a loopback download.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/sha256.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_SHANI_CODE 1
#endif

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube roots of the primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/* FIPS 180-4 5.3.3: the initial hash value. */
static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

static inline uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

/* FIPS 180-4 4.1.2 */
#define CH(x, y, z)  (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x)     (rotr((x), 2) ^ rotr((x), 13) ^ rotr((x), 22))
#define BSIG1(x)     (rotr((x), 6) ^ rotr((x), 11) ^ rotr((x), 25))
#define SSIG0(x)     (rotr((x), 7) ^ rotr((x), 18) ^ ((x) >> 3))
#define SSIG1(x)     (rotr((x), 17) ^ rotr((x), 19) ^ ((x) >> 10))

static inline uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* FIPS 180-4 6.2.2: process n 512-bit blocks. */
static void blocks_portable(uint32_t h[8], const unsigned char *p, size_t n)
{
	uint32_t w[64];

	for (; n; n--, p += 64) {
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
		uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];

		for (int t = 0; t < 16; t++)
			w[t] = load_be32(p + 4 * t);
		for (int t = 16; t < 64; t++)
			w[t] = SSIG1(w[t - 2]) + w[t - 7] + SSIG0(w[t - 15]) + w[t - 16];
		for (int t = 0; t < 64; t++) {
			uint32_t t1 = hh + BSIG1(e) + CH(e, f, g) + K[t] + w[t];
			uint32_t t2 = BSIG0(a) + MAJ(a, b, c);

			hh = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = b;
			b = a;
			a = t1 + t2;
		}
		h[0] += a;
		h[1] += b;
		h[2] += c;
		h[3] += d;
		h[4] += e;
		h[5] += f;
		h[6] += g;
		h[7] += hh;
	}
}

#ifdef HAVE_SHANI_CODE
/*
 * The same compression on the SHA-NI instructions: the state lives as
 * ABEF/CDGH, sha256rnds2 does two rounds, sha256msg1/msg2 compute the
 * message schedule four words at a time:
 *   W[j+4] = msg2(msg1(W[j], W[j+1]) + (W[j+2]:W[j+3] shifted by a word), W[j+3]).
 */
__attribute__((target("sha,sse4.1,ssse3"))) static void
blocks_shani(uint32_t h[8], const unsigned char *p, size_t n)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i tmp, st0, st1;

	tmp = _mm_loadu_si128((const __m128i *)&h[0]);
	st1 = _mm_loadu_si128((const __m128i *)&h[4]);
	tmp = _mm_shuffle_epi32(tmp, 0xB1);    /* CDAB */
	st1 = _mm_shuffle_epi32(st1, 0x1B);    /* EFGH */
	st0 = _mm_alignr_epi8(tmp, st1, 8);    /* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xF0); /* CDGH */
	for (; n; n--, p += 64) {
		__m128i abef = st0, cdgh = st1, w[4], m;

		/* Unrolled, so that w[] lives in registers. */
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++) {
			if (i < 4) {
				w[i] = _mm_shuffle_epi8(
				    _mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			} else {
				m = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
				m = _mm_add_epi32(
				    m, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
				w[i & 3] = _mm_sha256msg2_epu32(m, w[(i + 3) & 3]);
			}
			m = _mm_add_epi32(w[i & 3], _mm_loadu_si128((const __m128i *)&K[4 * i]));
			st1 = _mm_sha256rnds2_epu32(st1, st0, m);
			m = _mm_shuffle_epi32(m, 0x0E);
			st0 = _mm_sha256rnds2_epu32(st0, st1, m);
		}
		st0 = _mm_add_epi32(st0, abef);
		st1 = _mm_add_epi32(st1, cdgh);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1B);    /* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xB1);    /* DCHG */
	st0 = _mm_blend_epi16(tmp, st1, 0xF0); /* DCBA */
	st1 = _mm_alignr_epi8(st1, tmp, 8);    /* HGFE */
	_mm_storeu_si128((__m128i *)&h[0], st0);
	_mm_storeu_si128((__m128i *)&h[4], st1);
}

static bool cpu_has_shani(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d))
		return false;
	if (!(c & (1u << 19)) || !(c & (1u << 9))) /* SSE4.1, SSSE3 */
		return false;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return (b >> 29) & 1; /* SHA */
}
#endif

typedef void (*blocks_fn)(uint32_t h[8], const unsigned char *p, size_t n);

static pthread_once_t impl_once = PTHREAD_ONCE_INIT;
static blocks_fn impl_best = blocks_portable;
static const char *impl_best_name = "portable";
static volatile bool force_portable;

static void pick_impl(void)
{
#ifdef HAVE_SHANI_CODE
	if (cpu_has_shani()) {
		impl_best = blocks_shani;
		impl_best_name = "sha-ni";
	}
#endif
}

static blocks_fn impl(void)
{
	pthread_once(&impl_once, pick_impl);
	return force_portable ? blocks_portable : impl_best;
}

const char *gdn_sha256_impl(void)
{
	pthread_once(&impl_once, pick_impl);
	return force_portable ? "portable" : impl_best_name;
}

void gdn_sha256_force_portable(bool on)
{
	force_portable = on;
}

void gdn_sha256_init(struct gdn_sha256 *c)
{
	memcpy(c->h, H0, sizeof(H0));
	c->len = 0;
	c->nbuf = 0;
}

void gdn_sha256_update(struct gdn_sha256 *c, const void *data, size_t len)
{
	const unsigned char *p = data;
	blocks_fn fn = impl();

	c->len += len;
	if (c->nbuf) {
		size_t take = 64 - c->nbuf < len ? 64 - c->nbuf : len;

		memcpy(c->buf + c->nbuf, p, take);
		c->nbuf += take;
		p += take;
		len -= take;
		if (c->nbuf < 64)
			return;
		fn(c->h, c->buf, 1);
		c->nbuf = 0;
	}
	if (len >= 64) {
		fn(c->h, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	if (len) {
		memcpy(c->buf, p, len);
		c->nbuf = len;
	}
}

/* FIPS 180-4 5.1.1: a 1 bit, zeros, and the 64-bit message length in bits. */
void gdn_sha256_final(struct gdn_sha256 *c, unsigned char out[GDN_SHA256_LEN])
{
	uint64_t bits = c->len * 8;
	unsigned char pad[72] = {0x80};
	size_t padlen = (c->nbuf < 56 ? 56 : 120) - c->nbuf;

	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	gdn_sha256_update(c, pad, padlen + 8);
	for (int i = 0; i < 8; i++)
		store_be32(out + 4 * i, c->h[i]);
}

void gdn_sha256_hex(const unsigned char d[GDN_SHA256_LEN], char out[65])
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < GDN_SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = '\0';
}

/* gdn_read_chunks' callback: one chunk into the digest. */
static void update_chunk(const void *buf, size_t len, void *ctx)
{
	gdn_sha256_update(ctx, buf, len);
}

int gdn_sha256_file(const char *path, uint64_t limit, struct gdn_sha256 *c, uint64_t *hashed,
		    struct gdn_err *err)
{
	return gdn_read_chunks(path, limit, update_chunk, c, hashed, err);
}
