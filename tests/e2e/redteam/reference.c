/* The starting kernel, once: the benchmark's yardstick (never changed). */
void matmul_reference(int n, const float *a, const float *b, float *c)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float s = 0;

			for (int k = 0; k < n; k++)
				s += a[i * n + k] * b[k * n + j];
			c[i * n + j] = s;
		}
}
