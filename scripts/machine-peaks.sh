#!/usr/bin/env bash
# Measures the machine's peaks that docs/benchmarks.md reads gpuz's kernels
# against, with package hostmath's benchmarks, on THREADS kernel threads
# (default 2, as gpuz runs): the FP32 FMA peak (an AVX-512 FMA loop, 16
# independent chains a thread: BenchmarkFMAPeak) and the memory bandwidth
# (the STREAM triad over three 64 MiB arrays, 12 bytes an element:
# BenchmarkTriad), then the clip + Adam pass's own rates (BenchmarkAdamStep,
# 28 bytes a parameter; BenchmarkSumSquares, 4). Prints the median of COUNT
# runs (default 5) of each, per wall-clock second and per CPU second (the
# latter says more on a machine shared with other work).
#
#   scripts/machine-peaks.sh [COUNT]
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
count=${1:-5}
[[ $count =~ ^[1-9][0-9]*$ ]] || { echo "machine-peaks: COUNT must be a positive integer, not '$count'" >&2; exit 2; }
go=${GO:-go}
command -v "$go" >/dev/null || go=/usr/local/go/bin/go

"$go" test ./internal/hostmath/ -run '^$' -bench '^Benchmark(FMAPeak|Triad|AdamStep|SumSquares)$' -count "$count" |
	awk '/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
		for (i = 5; i < NF; i += 2) print name " " $(i + 1), $i
	}' | sort -k1,2 -k3,3g |
	awk '
	function flush() {
		if (n) printf "%-12s %-12s median %9.2f  (min %.2f, max %.2f, %d runs)\n", key1, key2, n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n], n
		n = 0
	}
	{ if ($1 != key1 || $2 != key2) { flush(); key1 = $1; key2 = $2 } v[++n] = $3 }
	END { flush() }'
