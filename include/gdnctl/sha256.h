/*
 * SHA-256 (FIPS 180-4), src/hub/sha256.c: the Hugging Face downloads' checksum.
 */
#ifndef GDNCTL_SHA256_H
#define GDNCTL_SHA256_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"

#define GDN_SHA256_LEN 32

struct gdn_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	unsigned char buf[64];
	size_t nbuf;
};

void gdn_sha256_init(struct gdn_sha256 *c);
void gdn_sha256_update(struct gdn_sha256 *c, const void *data, size_t len);
void gdn_sha256_final(struct gdn_sha256 *c, unsigned char out[GDN_SHA256_LEN]);
/* Lower-case hex of a digest; out holds 65 bytes. */
void gdn_sha256_hex(const unsigned char d[GDN_SHA256_LEN], char out[65]);
/*
 * The block function in use: "sha-ni" (x86 SHA extensions, chosen at run
 * time when the CPU has them) or "portable". Tests force the portable one.
 */
const char *gdn_sha256_impl(void);
void gdn_sha256_force_portable(bool on);
/* Hash a whole file (or its first `limit` bytes when limit != UINT64_MAX). */
int gdn_sha256_file(const char *path, uint64_t limit, struct gdn_sha256 *c, uint64_t *hashed,
		    struct gdn_err *err);

#endif
