#!/usr/bin/env bash
# Put/get against Open MPI's OSHMEM: runs osh_rma.c (OSHMEM) and its shmemplus twin
# benches/src/bin/rma_bw.rs in turn, ROUNDS times each (A B A B ...), so that a noisy
# machine slows both sides alike, then prints per size the median bandwidth of each
# and the median of the pair-by-pair ratios shmemplus / OSHMEM (for the 8-byte
# latencies: OSHMEM / shmemplus, so above 1 means shmemplus is faster there too).
#
# Usage:  ./rma.sh [ROUNDS]        (default 3; run from anywhere)
# Env:    OSH_RMA_REPS, OSH_RMA_ITERS, OSH_RMA_MIN, OSH_RMA_MAX -> both programs
#         OUT  file for the raw JSON lines (default: a temporary file, removed)
#         TWIN the shmemplus program (default target/release/rma_bw; e.g. an older build)
# Needs:  oshcc/oshrun (apt-get install openmpi-bin libopenmpi-dev), python3, and
#         `cargo build --release -p shmemplus-cli -p shmemplus-benches` done first.
set -u

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
rounds="${1:-3}"
bin="${TMPDIR:-/tmp}/osh_rma.$$"
out="${OUT:-${TMPDIR:-/tmp}/rma.$$.jsonl}"
[ -z "${OUT:-}" ] && trap 'rm -f "$bin" "$out"' EXIT || trap 'rm -f "$bin"' EXIT

for tool in oshcc oshrun python3; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "rma.sh: '$tool' not found in PATH"
        exit 0
    fi
done
twin="${TWIN:-$root/target/release/rma_bw}"
launcher="$root/target/release/shmemrun"
for f in "$twin" "$launcher"; do
    [ -x "$f" ] || { echo "rma.sh: $f missing: cargo build --release -p shmemplus-cli -p shmemplus-benches"; exit 1; }
done
oshcc -O2 -o "$bin" "$here/osh_rma.c" || { echo "rma.sh: oshcc failed"; exit 1; }

fwd=()
for v in OSH_RMA_REPS OSH_RMA_ITERS OSH_RMA_MIN OSH_RMA_MAX; do
    [ -n "${!v:-}" ] && fwd+=(-x "$v")
done
for r in $(seq 1 "$rounds"); do
    echo "# round $r/$rounds: oshmem" >&2
    timeout 300 oshrun --allow-run-as-root --oversubscribe --mca spml ucx --mca osc ^rdma \
        "${fwd[@]}" -np 2 "$bin" | sed "s/^{/{\"round\":$r,/" >>"$out" || exit 1
    echo "# round $r/$rounds: shmemplus" >&2
    timeout 300 "$launcher" -n 2 "$twin" | sed "s/^{/{\"round\":$r,/" >>"$out" || exit 1
done

python3 - "$out" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in recs:
    by.setdefault((r["op"], r["bytes"]), {}).setdefault(r["impl"], {})[r["round"]] = r
def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
print(f"{'op':8} {'size':>7} {'OSHMEM':>12} {'shmemplus':>12} {'ratio':>6} {'min':>6} {'max':>6}")
for (op, b), imp in sorted(by.items(), key=lambda kv: (kv[0][0] not in ("put_lat", "get_lat"), kv[0][0], kv[0][1])):
    o, s = imp.get("oshmem", {}), imp.get("shmemplus", {})
    rounds = sorted(set(o) & set(s))
    if not rounds:
        continue
    lat = op.endswith("_lat")
    key = "latency_us" if lat else "bandwidth_mbps"
    med = lambda x: statistics.median(x[r][key] for r in rounds)
    if lat:  # lower is better: OSHMEM / shmemplus; figures in ns
        ratios = [o[r][key] / s[r][key] for r in rounds]
        fo, fs, unit = med(o) * 1e3, med(s) * 1e3, " ns"
    else:  # higher is better: shmemplus / OSHMEM; figures in GB/s
        ratios = [s[r][key] / o[r][key] for r in rounds]
        fo, fs, unit = med(o) / 1e3, med(s) / 1e3, " GB/s"
    print(f"{op:8} {size(b):>7} {fo:>7.1f}{unit:5} {fs:>7.1f}{unit:5} {statistics.median(ratios):>6.2f} {min(ratios):>6.2f} {max(ratios):>6.2f}")
print(f"# {len(rounds)} alternated rounds; ratio = median of the pair-by-pair ratios "
      "(bandwidth: shmemplus/OSHMEM; latency: OSHMEM/shmemplus), min and max over the pairs")
PY
