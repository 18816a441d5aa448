#ifndef KERNEL_H
#define KERNEL_H
/* C = A * B for n x n row-major float matrices. */
void matmul(int n, const float *a, const float *b, float *c);
#endif
