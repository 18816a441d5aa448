/*
 * The kernel of the gdnctl demo project: C = A * B for n x n row-major
 * single-precision matrices. matmul.c is what the hill-climb changes.
 */
#ifndef DEMO_MATMUL_H
#define DEMO_MATMUL_H

void matmul(int n, const float *a, const float *b, float *c);
/* The starting kernel (reference.c), the benchmark's yardstick: never changed. */
void matmul_reference(int n, const float *a, const float *b, float *c);

#endif
