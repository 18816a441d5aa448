/*
 * Stage 1 of the trace pipeline: gzip detected by its magic bytes (1f 8b),
 * inflated member after member (inflateReset at each Z_STREAM_END while
 * input follows); anything else passes through unchanged.
 */
#include "gdnctl/compat.h"
#include <zlib.h>
#include "gdnctl/trace.h"
#include "gdnctl/err.h"
#include "gdnctl/xalloc.h"

#define GZ_OUT_SIZE (256u << 10)

enum gz_mode { GZ_UNDECIDED, GZ_PLAIN, GZ_GZIP, GZ_FAILED };

struct gdn_gz {
	gdn_bytes_fn sink;
	void *ctx;
	enum gz_mode mode;
	int fail_code;
	unsigned char magic[2];
	size_t nmagic;
	z_stream zs;
	bool zinit;
	bool in_member;
	uint64_t in_off; /* compressed bytes consumed */
	uint64_t members;
	unsigned char *out;
};

struct gdn_gz *gdn_gz_new(gdn_bytes_fn sink, void *ctx)
{
	struct gdn_gz *gz = xcalloc(1, sizeof(*gz));

	gz->sink = sink;
	gz->ctx = ctx;
	return gz;
}

void gdn_gz_free(struct gdn_gz *gz)
{
	if (!gz)
		return;
	if (gz->zinit)
		inflateEnd(&gz->zs);
	free(gz->out);
	free(gz);
}

static int failed(struct gdn_gz *gz, int code)
{
	gz->mode = GZ_FAILED;
	gz->fail_code = code;
	return code;
}

static int inflate_some(struct gdn_gz *gz, const unsigned char *data, size_t len,
			struct gdn_err *err)
{
	z_stream *zs = &gz->zs;
	int ret = 0;

	zs->next_in = (unsigned char *)data;
	zs->avail_in = (uInt)len;
	for (;;) {
		int zret;
		size_t produced;

		if (!gz->in_member) {
			if (!zs->avail_in)
				break;
			if (inflateReset(zs) != Z_OK)
				BUG("inflateReset failed");
			gz->in_member = true;
			gz->members++;
		}
		zs->next_out = gz->out;
		zs->avail_out = GZ_OUT_SIZE;
		zret = inflate(zs, Z_NO_FLUSH);
		produced = GZ_OUT_SIZE - zs->avail_out;
		if (produced) {
			ret = gz->sink(gz->ctx, (const char *)gz->out, produced, err);
			if (ret)
				break;
		}
		if (zret == Z_STREAM_END) {
			gz->in_member = false;
			continue;
		}
		if (zret == Z_OK) {
			if (!zs->avail_out || zs->avail_in)
				continue;
			break;
		}
		if (zret == Z_BUF_ERROR && !zs->avail_in)
			break;
		ret = gdn_err_set(err, GDN_EPARSE,
				  "corrupt gzip data at compressed byte offset %llu: %s",
				  (unsigned long long)(gz->in_off + (uint64_t)(len - zs->avail_in)),
				  zs->msg ? zs->msg : "inflate failed");
		break;
	}
	gz->in_off += (uint64_t)(len - zs->avail_in);
	return ret;
}

static int decide(struct gdn_gz *gz, struct gdn_err *err)
{
	int ret;

	if (gz->nmagic == 2 && gz->magic[0] == 0x1f && gz->magic[1] == 0x8b) {
		gz->mode = GZ_GZIP;
		gz->out = xmalloc(GZ_OUT_SIZE);
		if (inflateInit2(&gz->zs, 16 + MAX_WBITS) != Z_OK)
			BUG("inflateInit2 failed");
		gz->zinit = true;
		gz->in_member = true;
		gz->members = 1;
		return inflate_some(gz, gz->magic, 2, err);
	}
	gz->mode = GZ_PLAIN;
	ret = gz->nmagic ? gz->sink(gz->ctx, (const char *)gz->magic, gz->nmagic, err) : 0;
	gz->in_off += gz->nmagic;
	return ret;
}

int gdn_gz_feed(struct gdn_gz *gz, const void *data, size_t len, struct gdn_err *err)
{
	const unsigned char *p = data;
	int ret = 0;

	if (gz->mode == GZ_FAILED)
		return gz->fail_code;
	while (gz->mode == GZ_UNDECIDED && len) {
		gz->magic[gz->nmagic++] = *p++;
		len--;
		if (gz->nmagic == 2)
			ret = decide(gz, err);
		if (ret)
			return failed(gz, ret);
	}
	/* inflate takes at most UINT_MAX bytes per call */
	while (len && !ret) {
		size_t n = len > (1u << 30) ? (1u << 30) : len;

		if (gz->mode == GZ_PLAIN) {
			ret = gz->sink(gz->ctx, (const char *)p, n, err);
			gz->in_off += n;
		} else {
			ret = inflate_some(gz, p, n, err);
		}
		p += n;
		len -= n;
	}
	return ret ? failed(gz, ret) : 0;
}

int gdn_gz_finish(struct gdn_gz *gz, struct gdn_err *err)
{
	int ret = 0;

	if (gz->mode == GZ_FAILED)
		return gz->fail_code;
	if (gz->mode == GZ_UNDECIDED)
		ret = decide(gz, err);
	if (!ret && gz->mode == GZ_GZIP && gz->in_member)
		ret =
		    gdn_err_set(err, GDN_EPARSE,
				"truncated gzip data: the input ends inside member %llu after %llu "
				"compressed bytes",
				(unsigned long long)gz->members, (unsigned long long)gz->in_off);
	return ret ? failed(gz, ret) : 0;
}
