#!/bin/sh
# A fake Chrome trace of a TPU profile on stdout, for the loop's benchmarks:
#   sh "$GDNCTL_SOURCE_DIR/tests/e2e/fake-trace.sh" WHILE_US >out/trace.json
# Two 100 ms steps (the Steps track) and, on the XLA Ops track, in each step
# one `while` op of WHILE_US microseconds and one 20 ms `convolution`.
w=$1
ev() { printf '{"ph":"X","pid":3,"tid":3,"ts":%s,"dur":%s,"name":"%s","args":{"hlo_category":"%s"}}' "$@"; }
printf '{"traceEvents":[{"ph":"M","pid":3,"name":"process_name","args":{"name":"/device:TPU:0"}},'
printf '{"ph":"M","pid":3,"tid":1,"name":"thread_name","args":{"name":"Steps"}},'
printf '{"ph":"M","pid":3,"tid":3,"name":"thread_name","args":{"name":"XLA Ops"}},'
printf '{"ph":"X","pid":3,"tid":1,"ts":0,"dur":100000,"name":"0"},'
printf '{"ph":"X","pid":3,"tid":1,"ts":100000,"dur":100000,"name":"1"},'
ev 0 "$w" while.1 while
printf ,
ev 100000 "$w" while.1 while
printf ,
ev 50000 20000 fusion.1 convolution
printf ,
ev 150000 20000 fusion.1 convolution
printf ']}\n'
