/*
 * C = A * B, row-major, n x n floats: the textbook i-j-k triple loop.
 * The innermost loop walks B down a column (stride n), which misses the
 * cache on almost every step once a column no longer fits in L1.
 */
#include <stddef.h>
#include "matmul.h"

void matmul(int n, const float *a, const float *b, float *c)
{
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			float sum = 0.0f;

			for (int k = 0; k < n; k++)
				sum += a[(size_t)i * n + k] * b[(size_t)k * n + j];
			c[(size_t)i * n + j] = sum;
		}
	}
}
