/*
 * Peaks per device kind for the integrity gate's physics floor
 * (integrity.h). One chip each: the dense peak of the fastest arithmetic
 * format the vendor's sheet lists (so that no real kernel, whatever its
 * precision, is above it) and the device memory bandwidth. Figures with
 * sparsity are halved to dense where the sheet only lists those. A
 * configuration row (integrity.peaks) replaces a built-in one or adds a
 * kind (docs/integrity.md).
 */
#include "gdnctl/compat.h"
#include <math.h>
#include <strings.h>
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/xalloc.h"

static const struct gdn_peak builtin[] = {
    /* Google Cloud TPU system architecture pages, "Key chip specifications" */
    {"tpu-v4", 275e12, 1200e9,
     "https://cloud.google.com/tpu/docs/v4: 275 TFLOPs bf16/int8 per chip, HBM2 1200 GBps"},
    {"tpu-v5e", 393e12, 819e9,
     "https://cloud.google.com/tpu/docs/v5e: 197 TFLOPs bf16, 393 TOPs int8 per chip, HBM2 819 "
     "GBps"},
    {"tpu-v5p", 918e12, 2765e9,
     "https://cloud.google.com/tpu/docs/v5p: 459 TFLOPs bf16, 918 TOPs int8 per chip, HBM2e "
     "2765 GBps"},
    {"tpu-v6e", 1836e12, 1640e9,
     "https://cloud.google.com/tpu/docs/v6e: 918 TFLOPs bf16, 1836 TOPs int8 per chip, HBM "
     "1640 GBps"},
    /* NVIDIA datasheets: the SXM form factor; "with sparsity" figures halved */
    {"h100", 1979e12, 3.35e12,
     "https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM datasheet): FP8 3,958 TFLOPS "
     "with sparsity, 3.35 TB/s HBM3"},
    {"h200", 1979e12, 4.8e12,
     "https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM datasheet): FP8 3,958 TFLOPS "
     "with sparsity, 4.8 TB/s HBM3e"},
    {"b200", 9e15, 8e12,
     "https://www.nvidia.com/en-us/data-center/hgx/ (HGX B200 datasheet): FP4 18 PFLOPS per GPU "
     "with sparsity, 8 TB/s HBM3e"},
    /* AMD Instinct MI300X data sheet */
    {"mi300x", 2614.9e12, 5.3e12,
     "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html (data sheet): "
     "FP8 2,614.9 TFLOPS dense, 5.3 TB/s HBM3"},
};

const struct gdn_peak *gdn_peaks_builtin(size_t *nr)
{
	*nr = ARRAY_SIZE(builtin);
	return builtin;
}

void gdn_peaks_release(struct gdn_peaks *p)
{
	for (size_t i = 0; i < p->nr; i++)
		free((char *)p->v[i].kind);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

/* "197T", "8e12", "1.5P": > 0 and finite. */
static int parse_rate(const char *s, double *out)
{
	static const struct {
		char c;
		double m;
	} suf[] = {{'k', 1e3}, {'M', 1e6}, {'G', 1e9}, {'T', 1e12}, {'P', 1e15}, {'E', 1e18}};
	char *end;
	double d;

	errno = 0;
	d = strtod(s, &end);
	if (end == s || errno)
		return -1;
	for (size_t i = 0; *end && i < ARRAY_SIZE(suf); i++)
		if (*end == suf[i].c) {
			d *= suf[i].m;
			end++;
			break;
		}
	if (*end || !isfinite(d) || d <= 0)
		return -1;
	*out = d;
	return 0;
}

int gdn_peaks_parse(struct gdn_peaks *p, const char *spec, struct gdn_err *err)
{
	struct gdn_peak row = {NULL, 0, 0, "configuration (integrity.peaks)"};
	char *copy = xstrdup(spec), *save = NULL, *w;
	int ret = 0;

	for (w = strtok_r(copy, " \t", &save); w && !ret; w = strtok_r(NULL, " \t", &save)) {
		double *dst = !strncmp(w, "flops=", 6)	 ? &row.flops
			      : !strncmp(w, "bytes=", 6) ? &row.bytes
							 : NULL;

		if (!row.kind && !strchr(w, '='))
			row.kind = xstrdup(w);
		else if (!row.kind || !dst || parse_rate(w + 6, dst))
			ret = gdn_err_set(err, GDN_ECONFIG,
					  "integrity.peaks: '%s': expected 'KIND flops=N bytes=N' "
					  "(N > 0, e.g. 197T or 8e12)",
					  spec);
	}
	if (!ret && (!row.kind || (!row.flops && !row.bytes)))
		ret = gdn_err_set(err, GDN_ECONFIG,
				  "integrity.peaks: '%s': expected 'KIND flops=N bytes=N'", spec);
	if (ret) {
		free((char *)row.kind);
	} else {
		ALLOC_GROW(p->v, p->nr + 1, p->alloc);
		p->v[p->nr++] = row;
	}
	free(copy);
	return ret;
}

const struct gdn_peak *gdn_peaks_find(const struct gdn_peaks *p, const char *kind)
{
	for (size_t i = p ? p->nr : 0; i-- > 0;)
		if (!strcasecmp(p->v[i].kind, kind))
			return &p->v[i];
	for (size_t i = 0; i < ARRAY_SIZE(builtin); i++)
		if (!strcasecmp(builtin[i].kind, kind))
			return &builtin[i];
	return NULL;
}
