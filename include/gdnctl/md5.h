/*
 * MD5 (RFC 1321), src/hub/md5.c: the checksum GCS (md5Hash) and W&B
 * artifact manifests (digest) give, both as base64. Integrity against
 * transfer errors only, never against an adversary.
 */
#ifndef GDNCTL_MD5_H
#define GDNCTL_MD5_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"

#define GDN_MD5_LEN 16
/* Base64 of a digest: 24 characters and a NUL. */
#define GDN_MD5_B64_SIZE 25

struct gdn_md5 {
	uint32_t h[4];
	uint64_t len;
	unsigned char buf[64];
	size_t nbuf;
};

void gdn_md5_init(struct gdn_md5 *c);
void gdn_md5_update(struct gdn_md5 *c, const void *data, size_t len);
void gdn_md5_final(struct gdn_md5 *c, unsigned char out[GDN_MD5_LEN]);
/* Standard base64 (with padding) of a digest; out holds GDN_MD5_B64_SIZE bytes. */
void gdn_md5_b64(const unsigned char d[GDN_MD5_LEN], char out[GDN_MD5_B64_SIZE]);
/* Whether s is the base64 of 16 bytes ("...==", 24 characters). */
bool gdn_md5_b64_valid(const char *s);
/* Hash a whole file (or its first `limit` bytes when limit != UINT64_MAX). */
int gdn_md5_file(const char *path, uint64_t limit, struct gdn_md5 *c, uint64_t *hashed,
		 struct gdn_err *err);

#endif
