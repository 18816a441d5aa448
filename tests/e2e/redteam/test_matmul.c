/* The correctness test: n from 1 to 63 against a double-precision reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "dev.h"
#include "kernel.h"

void dev_op_begin(const char *name, double flops, double bytes)
{
	(void)name, (void)flops, (void)bytes;
}
void dev_op_end(void)
{
}

int main(void)
{
	unsigned seed = 12345;

	static const int sizes[] = {1, 2, 3, 5, 8, 13, 16, 17, 21, 31, 32, 47, 63};

	for (size_t t = 0; t < sizeof(sizes) / sizeof(sizes[0]); t++) {
		int n = sizes[t];
		float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n);
		float *c = malloc(sizeof(float) * n * n);

		for (int i = 0; i < n * n; i++) {
			seed = seed * 1103515245 + 12345;
			a[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
			seed = seed * 1103515245 + 12345;
			b[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
		}
		matmul(n, a, b, c);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < n; j++) {
				double s = 0;

				for (int k = 0; k < n; k++)
					s += (double)a[i * n + k] * b[k * n + j];
				if (fabs(s - c[i * n + j]) > 1e-4 * (1 + fabs(s))) {
					printf("test: n=%d C[%d][%d]=%g, expected %g\n", n, i, j,
					       c[i * n + j], s);
					return 1;
				}
			}
		free(a), free(b), free(c);
	}
	puts("test: ok");
	return 0;
}
