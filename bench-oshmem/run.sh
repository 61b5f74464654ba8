#!/usr/bin/env bash
# Build and run the OSHMEM (Open MPI OpenSHMEM) comparison benchmark.
#
# Usage:  ./run.sh [N ...]          (default PE counts: 2 4 8 16)
# Env:    OSH_BENCH_REPS, OSH_BENCH_AMO_ITERS, OSH_BENCH_BAR_ITERS,
#         OSH_BENCH_MAX_BYTES  -> passed to osh_bench (see osh_bench.c)
#         OSH_EXTRA_ARGS       -> extra oshrun arguments (e.g. "-x UCX_TLS=self,sm")
#         OUT                  -> file to append JSON lines to (default: stdout only)
set -u

here="$(cd "$(dirname "$0")" && pwd)"
bin="${TMPDIR:-/tmp}/osh_bench.$$"

for tool in oshcc oshrun; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "OSHMEM not available: '$tool' not found in PATH (install openmpi-bin libopenmpi-dev)"
        exit 0
    fi
done

if ! oshcc -O2 -o "$bin" "$here/osh_bench.c"; then
    echo "OSHMEM not available: oshcc failed to compile osh_bench.c"
    exit 0
fi
trap 'rm -f "$bin"' EXIT

pes=("$@")
[ ${#pes[@]} -eq 0 ] && pes=(2 4 8 16)

# MCA settings needed on this single-host, no-InfiniBand Debian 12 box
# (Open MPI 4.1.4 + UCX 1.13.1):
#   spml ucx    - the only SPML built into Debian's OSHMEM; UCX picks its
#                 shared-memory transports (posix/sysv/cma) for local peers.
#   osc ^rdma   - without this every run segfaults inside shmem_finalize()
#                 (ompi_osc_base_finalize -> mca_osc_rdma -> free()), even for
#                 a hello world; see RESULTS.md.
# Pass extra env through with -x; OSH_BENCH_* knobs are forwarded if set.
fwd=()
for v in OSH_BENCH_REPS OSH_BENCH_AMO_ITERS OSH_BENCH_BAR_ITERS OSH_BENCH_MAX_BYTES UCX_TLS SHMEM_SYMMETRIC_SIZE; do
    [ -n "${!v:-}" ] && fwd+=(-x "$v")
done

status=0
for n in "${pes[@]}"; do
    echo "# ---- n_pes=$n ----" >&2
    cmd=(timeout 300 oshrun --allow-run-as-root --oversubscribe
         --mca spml ucx --mca osc ^rdma "${fwd[@]}" ${OSH_EXTRA_ARGS:-}
         -np "$n" "$bin")
    echo "# ${cmd[*]}" >&2
    if [ -n "${OUT:-}" ]; then
        "${cmd[@]}" | tee -a "$OUT"
    else
        "${cmd[@]}"
    fi
    rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "# n_pes=$n FAILED rc=$rc (124 = timeout 300 s hit)" >&2
        status=1
    fi
done
exit $status
