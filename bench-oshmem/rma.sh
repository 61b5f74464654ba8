#!/usr/bin/env bash
# Put/get against Open MPI's OSHMEM: runs osh_rma.c built with oshcc (OSHMEM), its
# shmemplus twin benches/src/bin/rma_bw.rs (the Rust API) and, when shmemcc is built,
# the SAME osh_rma.c built with shmemcc (shmemplus's C interface), in turn, ROUNDS
# times each (A B C A B C ...), so that a noisy machine slows every side alike. Prints
# per size the median bandwidth of each and the medians of the round-by-round ratios
# Rust/OSHMEM, C/OSHMEM and C/Rust (for the 8-byte latencies the inverse, OSHMEM/Rust
# and so on, so above 1 always means the first-named is faster).
#
# Usage:  ./rma.sh [ROUNDS]        (default 3; run from anywhere)
# Env:    OSH_RMA_REPS, OSH_RMA_ITERS, OSH_RMA_MIN, OSH_RMA_MAX -> both programs
#         OUT  file for the raw JSON lines (default: a temporary file, removed)
#         TWIN the shmemplus program (default target/release/rma_bw; e.g. an older build)
#         NO_C=1 skip the C-interface build
#         MPI=1  run the shmemplus programs under `mpirun -np 2` with every rank its own
#                host (SHMEMPLUS_RANKS_PER_HOST=1), so every transfer takes the MPI
#                conduit; needs the build with `--features shmemplus/mpi`
#         TRANSPORT=tcp  both sides over TCP on loopback only: OSHMEM with UCX's tcp
#                transport, shmemplus's MPI conduit with Open MPI's tcp BTL (with MPI=1)
# Needs:  oshcc/oshrun (apt-get install openmpi-bin libopenmpi-dev), python3, and
#         `cargo build --release -p shmemplus-cli -p shmemplus-benches` done first.
set -u

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
rounds="${1:-3}"
bin="${TMPDIR:-/tmp}/osh_rma.$$"
cbin="${TMPDIR:-/tmp}/osh_rma_c.$$"
out="${OUT:-${TMPDIR:-/tmp}/rma.$$.jsonl}"
[ -z "${OUT:-}" ] && trap 'rm -f "$bin" "$cbin" "$out"' EXIT || trap 'rm -f "$bin" "$cbin"' EXIT

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
shmemcc="$root/target/release/shmemcc"
with_c=0
if [ -z "${NO_C:-}" ] && [ -x "$shmemcc" ]; then
    "$shmemcc" -O2 -DOSH_RMA_IMPL='"shmemplus-c"' -o "$cbin" "$here/osh_rma.c" ||
        { echo "rma.sh: shmemcc failed"; exit 1; }
    with_c=1
fi

fwd=()
for v in OSH_RMA_REPS OSH_RMA_ITERS OSH_RMA_MIN OSH_RMA_MAX; do
    [ -n "${!v:-}" ] && fwd+=(-x "$v")
done
osh_extra=()
ours=("$launcher" -n 2)
if [ -n "${MPI:-}" ]; then
    # --bind-to none: Open MPI would bind each rank to one core, which the progress
    # thread would share with the program (the library warns about that).
    ours=(mpirun --allow-run-as-root --bind-to none -np 2 -x SHMEMPLUS_RANKS_PER_HOST=1 "${fwd[@]}")
    [ "${TRANSPORT:-}" = tcp ] && ours+=(--mca btl self,tcp --mca btl_tcp_if_include lo)
fi
[ "${TRANSPORT:-}" = tcp ] && osh_extra=(-x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo)
echo "# OSHMEM: oshrun ${osh_extra[*]}; shmemplus: ${ours[*]}" >&2
for r in $(seq 1 "$rounds"); do
    echo "# round $r/$rounds: oshmem" >&2
    timeout 300 oshrun --allow-run-as-root --oversubscribe --mca spml ucx --mca osc ^rdma \
        "${osh_extra[@]}" "${fwd[@]}" -np 2 "$bin" | sed "s/^{/{\"round\":$r,/" >>"$out" || exit 1
    echo "# round $r/$rounds: shmemplus" >&2
    timeout 300 "${ours[@]}" "$twin" | sed "s/^{/{\"round\":$r,/" >>"$out" || exit 1
    if [ "$with_c" = 1 ]; then
        echo "# round $r/$rounds: shmemplus C interface" >&2
        timeout 300 "${ours[@]}" "$cbin" | sed "s/^{/{\"round\":$r,/" >>"$out" || exit 1
    fi
done

python3 - "$out" <<'PY'
import json, statistics, sys
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in recs:
    by.setdefault((r["op"], r["bytes"]), {}).setdefault(r["impl"], {})[r["round"]] = r
def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
with_c = any("shmemplus-c" in imp for imp in by.values())
cols = [("OSHMEM", "oshmem"), ("Rust", "shmemplus")] + ([("C", "shmemplus-c")] if with_c else [])
pairs = [("Rust", "OSHMEM")] + ([("C", "OSHMEM"), ("C", "Rust")] if with_c else [])
name = dict(cols)
head = f"{'op':8} {'size':>7} " + " ".join(f"{c:>11}" for c, _ in cols)
head += " " + " ".join(f"{a + '/' + b + ' (min-max)':>15}" for a, b in pairs)
print(head)
for (op, b), imp in sorted(by.items(), key=lambda kv: (kv[0][0] not in ("put_lat", "get_lat"), kv[0][0], kv[0][1])):
    runs = {c: imp.get(i, {}) for c, i in cols}
    rounds = sorted(set.intersection(*(set(r) for r in runs.values())))
    if not rounds:
        continue
    lat = op.endswith("_lat")
    key = "latency_us" if lat else "bandwidth_mbps"
    scale, unit = (1e3, "ns") if lat else (1e-3, "GB/s")
    line = f"{op:8} {size(b):>7} "
    line += " ".join(f"{statistics.median(runs[c][r][key] for r in rounds) * scale:>6.1f} {unit:4}" for c, _ in cols)
    for a, c in pairs:
        # faster is above 1: bandwidth a/c, latency c/a
        ratios = [(runs[c][r][key] / runs[a][r][key]) if lat else (runs[a][r][key] / runs[c][r][key]) for r in rounds]
        line += f" {statistics.median(ratios):>5.2f} {min(ratios):.2f}-{max(ratios):.2f}"
    print(line)
print(f"# {len(rounds)} alternated rounds; each ratio is the median of the round-by-round ratios "
      "(min-max in brackets); above 1 means the first-named is faster")
PY
