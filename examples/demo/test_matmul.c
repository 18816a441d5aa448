/*
 * Correctness test of matmul(): every size from 1 to 70 and a few larger
 * ones (odd sizes catch unrolling without a remainder loop) against a
 * double-precision reference. Exit 0 when all pass, 1 otherwise.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "matmul.h"

static float rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static int check(int n, unsigned seed)
{
	size_t nn = (size_t)n * n;
	float *a = malloc(nn * sizeof(*a)), *b = malloc(nn * sizeof(*b));
	float *c = malloc(nn * sizeof(*c));
	int bad = 0;

	if (!a || !b || !c) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	for (size_t i = 0; i < nn; i++) {
		a[i] = rnd(&seed);
		b[i] = rnd(&seed);
		c[i] = 1e30f; /* the kernel must overwrite C */
	}
	matmul(n, a, b, c);
	for (int i = 0; i < n && !bad; i++) {
		for (int j = 0; j < n; j++) {
			double ref = 0.0, mag = 0.0;

			for (int k = 0; k < n; k++) {
				double p = (double)a[(size_t)i * n + k] * b[(size_t)k * n + j];

				ref += p;
				mag += fabs(p);
			}
			if (!(fabs(c[(size_t)i * n + j] - ref) <= 1e-5 * mag + 1e-6)) {
				fprintf(stderr, "matmul n=%d: C[%d][%d] = %g, expected %g\n", n, i,
					j, c[(size_t)i * n + j], ref);
				bad = 1;
				break;
			}
		}
	}
	free(a);
	free(b);
	free(c);
	return bad;
}

int main(void)
{
	static const int big[] = {97, 128, 131, 256};
	int failed = 0, total = 0;

	for (int n = 1; n <= 70; n++, total++)
		failed += check(n, (unsigned)n);
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++, total++)
		failed += check(big[i], 7u * (unsigned)big[i]);
	printf("tests: %d/%d sizes passed\n", total - failed, total);
	return failed ? 1 : 0;
}
