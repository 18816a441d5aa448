/* The kernel: C = A * B in row blocks of 16, one device op each. */
#include "dev.h"
#include "kernel.h"

#define REPEAT 2048 /* passes over each block: the baseline repeats its work */

static void rows(int n, int i0, int i1, const float *a, const float *b, float *c)
{
	for (int r = 0; r < REPEAT; r++)
		for (int i = i0; i < i1; i++)
			for (int j = 0; j < n; j++) {
				float s = 0;

				for (int k = 0; k < n; k++)
					s += a[i * n + k] * b[k * n + j];
				c[i * n + j] = s;
			}
}

void matmul(int n, const float *a, const float *b, float *c)
{
	for (int i0 = 0; i0 < n; i0 += 16) {
		int i1 = i0 + 16 < n ? i0 + 16 : n;

		dev_op_begin("matmul_rows", 2.0 * (i1 - i0) * n * n,
			     4.0 * (2 * (i1 - i0) * n + n * n));
		rows(n, i0, i1, a, b, c);
		dev_op_end();
	}
}
