#!/usr/bin/env bash
# MPI-3 one-sided put/get: builds mpi_rma.c (the figures of osh_rma.c, measured with
# MPI_Win_allocate + MPI_Win_lock_all + MPI_Put/MPI_Get + MPI_Win_flush) and runs it
# with 2 ranks under four Open MPI osc component / transport choices, in turn, ROUNDS
# times each (A B C D A B C D ...). Prints per op and size the median over the rounds
# of each variant (latencies in us, bandwidths in GB/s), then each variant's status:
# a run that fails, crashes (e.g. in MPI_Finalize) or hits the 120 s timeout is
# reported with its exit code and last error line, and the figures it printed before
# are kept.
#
#   ucx-shm    --mca osc ucx                         (UCX's default shared-memory transports)
#   rdma-shm   --mca osc rdma --mca btl self,vader
#   ucx-tcp    --mca osc ucx -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo
#   rdma-tcp   --mca osc rdma --mca btl self,tcp --mca btl_tcp_if_include lo
#
# Usage:  ./mpi_rma.sh [ROUNDS]      (default 3; run from anywhere)
# Env:    OSH_RMA_REPS, OSH_RMA_ITERS, OSH_RMA_MIN, OSH_RMA_MAX -> mpi_rma (see mpi_rma.c)
#         OUT  file for the raw JSON lines (default: a temporary file, removed)
# Needs:  mpicc/mpirun (apt-get install openmpi-bin libopenmpi-dev), python3.
set -u

here="$(cd "$(dirname "$0")" && pwd)"
rounds="${1:-3}"
bin="${TMPDIR:-/tmp}/mpi_rma.$$"
err="${TMPDIR:-/tmp}/mpi_rma.$$.err"
out="${OUT:-${TMPDIR:-/tmp}/mpi_rma.$$.jsonl}"
[ -z "${OUT:-}" ] && trap 'rm -f "$bin" "$err" "$out"' EXIT || trap 'rm -f "$bin" "$err"' EXIT

for tool in mpicc mpirun python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "mpi_rma.sh: '$tool' not found in PATH"; exit 1; }
done
mpicc -O2 -o "$bin" "$here/mpi_rma.c" || { echo "mpi_rma.sh: mpicc failed"; exit 1; }

fwd=()
for v in OSH_RMA_REPS OSH_RMA_ITERS OSH_RMA_MIN OSH_RMA_MAX; do
    [ -n "${!v:-}" ] && fwd+=(-x "$v")
done
names=(ucx-shm rdma-shm ucx-tcp rdma-tcp)
opts=("--mca osc ucx"
      "--mca osc rdma --mca btl self,vader"
      "--mca osc ucx -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo"
      "--mca osc rdma --mca btl self,tcp --mca btl_tcp_if_include lo")
for r in $(seq 1 "$rounds"); do
    for i in "${!names[@]}"; do
        echo "# round $r/$rounds: ${names[i]}: mpirun ${opts[i]}" >&2
        # shellcheck disable=SC2086  # opts[i] is a list of words
        timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "${fwd[@]}" ${opts[i]} "$bin" 2>"$err" |
            sed "s/^{/{\"round\":$r,\"variant\":\"${names[i]}\",/" >>"$out"
        rc=${PIPESTATUS[0]}
        grep '^# mpi_rma' "$err" >&2
        if [ "$rc" != 0 ]; then
            why="$( (grep -m 1 -E '^mpi_rma:|FAILED' "$err" ||
                grep -m 1 -E 'exited on signal|Segmentation|MPI_ERR_[A-Z]+:' "$err" || tail -n 1 "$err") |
                sed 's/^\[[^]]*\] *\** *//' | tr -d '"\\')"
            [ "$rc" = 124 ] && why="timeout after 120 s"
            echo "#   ${names[i]} exited $rc: $why" >&2
            echo "{\"round\":$r,\"variant\":\"${names[i]}\",\"rc\":$rc,\"why\":\"$why\"}" >>"$out"
        fi
    done
done

python3 - "$out" "${names[@]}" <<'PY'
import json, statistics, sys
names = sys.argv[2:]
recs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by, fails = {}, {}
for r in recs:
    if "rc" in r:
        fails.setdefault(r["variant"], []).append(r)
    else:
        by.setdefault((r["op"], r["bytes"]), {}).setdefault(r["variant"], []).append(r)
def size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB" if b >= 1024 else f"{b} B"
print(f"{'op':8} {'size':>7} " + " ".join(f"{n:>10}" for n in names) + "   (latency: us, bandwidth: GB/s)")
for (op, b), v in sorted(by.items(), key=lambda kv: (kv[0][0] not in ("put_lat", "get_lat"), kv[0][0], kv[0][1])):
    lat = op.endswith("_lat")
    key, scale = ("latency_us", 1) if lat else ("bandwidth_mbps", 1e-3)
    cells = [f"{statistics.median(x[key] for x in v[n]) * scale:>10.3f}" if n in v else f"{'-':>10}" for n in names]
    print(f"{op:8} {size(b):>7} " + " ".join(cells))
rounds = max([r["round"] for r in recs] or [0])
for n in names:
    f = fails.get(n, [])
    st = "ok" if not f else "crashed" if any(x["rc"] in (134, 135, 136, 139) or "signal" in x["why"] or "Segmentation" in x["why"] for x in f) else "failed"
    print(f"# {n:9} {st}" + (f" in {len(f)}/{rounds} rounds (exit {f[0]['rc']}: {f[0]['why']})" if f else ""))
print(f"# median over {rounds} rounds of each variant's per-round median")
PY
