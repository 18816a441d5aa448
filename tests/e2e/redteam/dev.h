/* The "device" of the red-team project: the kernel reports each op it runs. */
#ifndef DEV_H
#define DEV_H
void dev_op_begin(const char *name, double flops, double bytes);
void dev_op_end(void);
#endif
