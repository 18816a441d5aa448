#!/usr/bin/env bash
# Benchmark `gdnctl download-trace` on loopback against the test hub
# server (tests/e2e/hubserver.py). Prints figures; never fails on time.
#
#   bash tests/bench/download.sh [GDNCTL_BIN]
#
# 1. One 200 MB LFS file (redirected to the server's CDN port, served with
#    sendfile): `curl -L -o` vs gdnctl (which also hashes, fsyncs and
#    renames), each RUNS times, alternating, MB/s side by side. The
#    baseline is `curl -o` as the issue names it; `curl+sync` (curl, then
#    sync(1) until its bytes are on disk) is shown too, because gdnctl's
#    figure includes making the file durable and curl's does not.
# 2. 50 small files from a server that answers every request after 50 ms:
#    --jobs 1 vs --jobs 8.
# Environment: RUNS (default 3), SIZE_MB (default 200), BENCH_DIR (default
# a fresh directory under /tmp, removed at exit).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
bin=${1:-${GDNCTL_BIN:-$src/build/gdnctl}}
runs=${RUNS:-3}
size_mb=${SIZE_MB:-200}
command -v curl >/dev/null || { echo "bench: curl is not installed (bash .ci/setup test)" >&2; exit 2; }
[ -x "$bin" ] || { echo "bench: no gdnctl binary at '$bin'" >&2; exit 2; }

dir=${BENCH_DIR:-$(mktemp -d /tmp/gdnctl-bench-download.XXXXXX)}
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "${BENCH_DIR:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY

start_server() { # name, extra args...
	local name=$1
	shift
	python3 "$src/tests/e2e/hubserver.py" serve --root "$dir/root" --ports "$dir/$name.ports" \
		--log /dev/null "$@" >"$dir/$name.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do [ -f "$dir/$name.ports" ] && return 0; sleep 0.05; done
	echo "bench: the server did not start" >&2
	exit 1
}

now_ns() { date +%s%N; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", 100 * a / b }'; }
mbps() { awk -v b="$1" -v ns="$2" 'BEGIN { printf "%.1f", b / 1e6 / (ns / 1e9) }'; }

echo "# gdnctl download benchmark ($(nproc) cores, $(uname -r)); runs=$runs"
mkdir -p "$dir/root/datasets/bench/big/main"
big=$dir/root/datasets/bench/big/main/big.trace.json.gz
head -c $((size_mb * 1000 * 1000)) /dev/urandom >"$big"
bytes=$(stat -c %s "$big")
start_server big --lfs-min-size 1
# shellcheck disable=SC1091
. "$dir/big.ports"
export HF_ENDPOINT=http://127.0.0.1:$HUB_PORT
url=$HF_ENDPOINT/datasets/bench/big/resolve/main/big.trace.json.gz
# Warm the server's sha256 cache and the page cache.
"$bin" download-trace --repo-id bench/big --dry-run >/dev/null
cat "$big" >/dev/null

echo
echo "## one ${size_mb} MB file (MB/s; gdnctl includes listing, sha256, fsync, rename)"
printf '%-6s %12s %12s %12s %8s %10s\n' run "curl -o" "curl+sync" gdnctl ratio "vs durable"
cs=() ds=() gs=()
for i in $(seq "$runs"); do
	rm -rf "$dir/c" "$dir/g" && mkdir -p "$dir/c" && sync
	t0=$(now_ns)
	curl -sS -L -o "$dir/c/big" "$url"
	t1=$(now_ns)
	sync
	t2=$(now_ns)
	"$bin" download-trace --repo-id bench/big --output-dir "$dir/g" >/dev/null
	t3=$(now_ns)
	cmp -s "$big" "$dir/g/big.trace.json.gz" || { echo "bench: gdnctl's copy differs" >&2; exit 1; }
	c=$(mbps "$bytes" $((t1 - t0)))
	d=$(mbps "$bytes" $((t2 - t0)))
	g=$(mbps "$bytes" $((t3 - t2)))
	cs+=("$c") ds+=("$d") gs+=("$g")
	printf '%-6s %12s %12s %12s %7s%% %9s%%\n' "$i" "$c" "$d" "$g" "$(pct "$g" "$c")" "$(pct "$g" "$d")"
done
stat_line() { # name, awk program over the sorted values
	local c d g
	c=$(printf '%s\n' "${cs[@]}" | sort -g | awk "$2")
	d=$(printf '%s\n' "${ds[@]}" | sort -g | awk "$2")
	g=$(printf '%s\n' "${gs[@]}" | sort -g | awk "$2")
	printf '%-6s %12.1f %12.1f %12.1f %7s%% %9s%%\n' "$1" "$c" "$d" "$g" "$(pct "$g" "$c")" "$(pct "$g" "$d")"
}
stat_line mean '{ s += $1 } END { print s / NR }'
stat_line median '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
# The runs alternate, so one run's two figures saw the same machine: the
# median of the per-run ratios is the least noisy single figure.
median_ratio() { # baseline array name
	local -n base=$1
	for k in "${!gs[@]}"; do pct "${gs[$k]}" "${base[$k]}"; echo; done | sort -g |
		awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
printf 'median of per-run ratios: %s%% of curl -o, %s%% of curl+sync\n' "$(median_ratio cs)" "$(median_ratio ds)"
rm -rf "$dir/c" "$dir/g" "$big"

echo
echo "## 50 small files, every request answered after 50 ms (seconds)"
mkdir -p "$dir/root/datasets/bench/small/main"
for i in $(seq -w 1 50); do
	head -c 2000 /dev/urandom >"$dir/root/datasets/bench/small/main/f$i.trace.json.gz"
done
start_server small --lfs-min-size 1000000 --delay-ms 50 --page-size 1000
# shellcheck disable=SC1091
. "$dir/small.ports"
export HF_ENDPOINT=http://127.0.0.1:$HUB_PORT
printf '%-6s %10s %10s %8s\n' run "--jobs 1" "--jobs 8" speedup
for i in $(seq "$runs"); do
	rm -rf "$dir/s1" "$dir/s8"
	t0=$(now_ns)
	"$bin" download-trace --repo-id bench/small --output-dir "$dir/s1" --jobs 1 >/dev/null
	t1=$(now_ns)
	"$bin" download-trace --repo-id bench/small --output-dir "$dir/s8" --jobs 8 >/dev/null
	t2=$(now_ns)
	[ "$(find "$dir/s8" -type f | wc -l)" = 50 ] || { echo "bench: files missing" >&2; exit 1; }
	printf '%-6s %10.2f %10.2f %7.1fx\n' "$i" "$(awk -v n=$((t1 - t0)) 'BEGIN { print n / 1e9 }')" \
		"$(awk -v n=$((t2 - t1)) 'BEGIN { print n / 1e9 }')" \
		"$(awk -v a=$((t1 - t0)) -v b=$((t2 - t1)) 'BEGIN { print a / b }')"
done

echo
echo "## a 200,000-object GCS listing: stopping the queue (ms)"
# The issue's figures before the batched queue: still alive 20 s after
# SIGTERM, and --deadline 5s ran 390 s.
start_server gcs --gcs-root "$dir/gcs" --gcs-synthetic big/p:200000
# shellcheck disable=SC1091
. "$dir/gcs.ports"
export STORAGE_EMULATOR_HOST=127.0.0.1:$HUB_PORT GOOGLE_OAUTH_ACCESS_TOKEN=bench
printf '%-6s %18s %22s\n' run "SIGTERM -> exit" "--deadline D: exit - D"
for i in $(seq "$runs"); do
	rm -rf "$dir/q"
	"$bin" download-trace gs://big/p --output-dir "$dir/q" --jobs 8 >/dev/null 2>&1 &
	p=$!
	for _ in $(seq 1200); do
		[ -d "$dir/q/p" ] && [ "$(find "$dir/q/p" -type f | wc -l)" -ge 50 ] && break
		sleep 0.05
	done
	t0=$(now_ns)
	kill -TERM $p
	wait $p || true
	t1=$(now_ns)
	rm -rf "$dir/q"
	# The listing takes a few seconds: a deadline past it stops the downloads.
	t2=$(now_ns)
	"$bin" download-trace gs://big/p --output-dir "$dir/q" --jobs 8 --deadline 15s >/dev/null 2>&1 || true
	t3=$(now_ns)
	printf '%-6s %18d %22d\n' "$i" $(((t1 - t0) / 1000000)) $(((t3 - t2) / 1000000 - 15000))
done
