//! The model's view of a route (`modeled_seconds`, `route_packet_bytes`), the packet
//! size a transfer is split into on an emulated cluster, and the self-tuning pass
//! that measures the hops and caches what it chose (docs/model.md, self-tuning).
//!
//! This module owns the packet policy and the tuning state. It must not define costs
//! (`netsim` profiles, `emulate`) or the tuning cache's format (`tune`), nor decide
//! which hops a route crosses (`route`).

use super::route::Route;
use super::{Place, Shmem, SymVec};
use crate::config::PacketPolicy;
use crate::diag;
use crate::emulate::{Hop, RmaOp};
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;

/// One probe transfer of the tuning pass, given a scratch buffer.
pub(super) type Probe<'a> = dyn Fn(&mut [u8]) -> Result<()> + 'a;

/// Where the tuning in force came from (see [`Shmem::retune`]).
#[derive(Debug, Clone, PartialEq)]
pub enum TuneSource {
    /// Measured by this job (and cached when the cache directory was writable).
    Measured,
    /// Read from the tuning cache.
    Cached,
    /// No tuning: the reason (profile without costs, fewer than two nodes, no boards,
    /// `SHMEMPLUS_TUNE=off`).
    Skipped(String),
}

/// A route and size bucket for the packet cache: (put?, local place, remote place,
/// crosses nodes?, size rounded up to a power of two).
pub(super) type PacketKey = (bool, Option<Place>, Place, bool, usize);

impl Shmem {
    /// The modeled time, in seconds, of one `op` of `bytes` between this PE and PE
    /// `pe` on an idle emulated network: `None` when the profile's network is free
    /// (nothing is modeled), `Some(0.0)` between PEs of one node.
    ///
    /// ```
    /// let shmem = shmemplus::init()?; // native profile: nothing is modeled
    /// assert_eq!(shmem.modeled_seconds(shmemplus::RmaOp::Put, 0, 1024)?, None);
    /// # Ok::<(), shmemplus::Error>(())
    /// ```
    pub fn modeled_seconds(&self, op: RmaOp, pe: u32, bytes: usize) -> Result<Option<f64>> {
        self.modeled_route_seconds(op, None, Place::Cpu, pe, bytes)
    }

    /// As [`Shmem::modeled_seconds`] for any pair of places: `local` is this PE's side
    /// (`None` for a private host buffer, else a place of this PE), `remote` the place
    /// on PE `pe`. A put goes local -> remote, a get remote -> local (at offset 0). The
    /// model is the one the transfer itself is charged by, packetized under the
    /// current packet policy. A library call: on the virtual clock the host time the
    /// emulator spends pricing the route (a packet search, for a large transfer) is
    /// not charged to the program.
    pub fn modeled_route_seconds(
        &self,
        op: RmaOp,
        local: Option<Place>,
        remote: Place,
        pe: u32,
        bytes: usize,
    ) -> Result<Option<f64>> {
        let _call = self.live()?.clock.enter();
        let target = self.check_pe(pe)?;
        let Some(emu) = &self.inner.emulation else {
            return Ok(None);
        };
        let route = self.inner.route(local, target, remote);
        self.check_route_bytes(&route, bytes)?;
        route.hops(&self.inner, op, (0, 0), bytes)?;
        let mut hops_of = |at: usize, len: usize| {
            route
                .hops(&self.inner, op, (at, at), len)
                .unwrap_or_default()
        };
        let packet = self.packet_size(op, &route, bytes, &mut hops_of);
        Ok(Some(emu.modeled_packets(bytes, packet, &mut hops_of)))
    }

    /// The packet size this PE uses for a transfer of `bytes` on a route under the
    /// current policy (`bytes` means no packetization), as `modeled_route_seconds`.
    pub fn route_packet_bytes(
        &self,
        op: RmaOp,
        local: Option<Place>,
        remote: Place,
        pe: u32,
        bytes: usize,
    ) -> Result<usize> {
        let target = self.check_pe(pe)?;
        let route = self.inner.route(local, target, remote);
        if self.inner.emulation.is_some() {
            // The model will be consulted: the route must be one a transfer can take.
            self.check_route_bytes(&route, bytes)?;
            route.hops(&self.inner, op, (0, 0), bytes)?;
        }
        let mut hops_of = |at: usize, len: usize| {
            route
                .hops(&self.inner, op, (at, at), len)
                .unwrap_or_default()
        };
        Ok(self.packet_size(op, &route, bytes, &mut hops_of))
    }

    /// Refuses a modeled transfer that no object could take part in: one larger than
    /// the CPU symmetric heap at a CPU end (a board end is checked by the board's DMA
    /// span rule in `hops`). This bounds the model's work and keeps its sizes far from
    /// overflow.
    fn check_route_bytes(&self, route: &Route, bytes: usize) -> Result<()> {
        // The heap and, with symmetric data, the static area after it.
        let heap = self.inner.segs.mine().cpu_bytes();
        if bytes > heap && (route.local == Some(Place::Cpu) || route.place == Place::Cpu) {
            return Err(Error::InvalidArgument(format!(
                "a transfer of {bytes} bytes to or from the CPU heap: the heap has {heap} bytes \
                 (SHMEM_SYMMETRIC_SIZE), so no object can take part in it"
            )));
        }
        Ok(())
    }

    /// The packet size for a transfer of `bytes` on a route (`bytes` = one packet).
    pub(super) fn packet_size(
        &self,
        op: RmaOp,
        route: &Route,
        bytes: usize,
        hops_of: &mut dyn FnMut(usize, usize) -> Vec<Hop>,
    ) -> usize {
        let Some(emu) = &self.inner.emulation else {
            return bytes;
        };
        match self.packet_policy() {
            PacketPolicy::Off => bytes,
            PacketPolicy::Bytes(p) => p.clamp(1, bytes.max(1)),
            PacketPolicy::Auto => {
                let remote_node = route.crosses_nodes(&self.inner);
                let key = (
                    op == RmaOp::Put,
                    route.local,
                    route.place,
                    remote_node,
                    // A size past 2^63 has no power of two: it is its own bucket.
                    bytes.checked_next_power_of_two().unwrap_or(bytes),
                );
                let mut cache = self
                    .inner
                    .packet_cache
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let tuned = self
                    .inner
                    .tuning
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .as_ref()
                    .and_then(|t| {
                        // The tuning pass measured the three-stage board-to-board route.
                        (route.board_to_board() && remote_node)
                            .then(|| t.packet_for(bytes))
                            .flatten()
                    });
                if let Some(p) = tuned {
                    return p.min(bytes.max(1));
                }
                let packet = *cache.entry(key).or_insert_with(|| {
                    // Chosen for the size bucket's top; applied to every size in it.
                    emu.best_packet(key.4, hops_of)
                });
                packet.min(bytes.max(1))
            }
        }
    }

    /// Runs the self-tuning pass (docs/model.md, self-tuning; collective: every PE calls it):
    /// PE 0 measures each hop (`net` to a PE of another node, `fpga_read` and
    /// `fpga_write` on its board 0) at a few sizes, fits their costs, and chooses the
    /// board-to-board packet size per size bucket with the k-stage model; the result
    /// is cached (`SHMEMPLUS_CACHE_DIR`, else the XDG cache directory) under a key of
    /// profile, topology and library version, and shared with every PE. With
    /// `TuneMode::Auto` a valid cached result is used instead of measuring; a corrupt
    /// or stale cache is rebuilt with a warning. `init` calls this per
    /// `SHMEMPLUS_TUNE`.
    pub fn retune(&self, mode: crate::TuneMode) -> Result<TuneSource> {
        use crate::tune;
        let inner = self.live()?;
        let me = inner.me;
        let t = inner.topology;
        let skip = if mode == crate::TuneMode::Off {
            Some("SHMEMPLUS_TUNE=off")
        } else if inner.emulation.is_none() {
            Some("the profile adds no cost")
        } else if t.nodes < 2 {
            Some("the job has one node")
        } else if self.fpgas() == 0 {
            Some("the nodes have no boards")
        } else {
            None
        };
        if let Some(why) = skip {
            return Ok(TuneSource::Skipped(why.into()));
        }
        let key = format!(
            "profile {} ({}), {} nodes x {} PEs, {} boards, shmemplus {}",
            inner.profile.name,
            inner.profile.source,
            t.nodes,
            t.pes_per_node,
            self.fpgas(),
            env!("CARGO_PKG_VERSION")
        );
        let probe_max = *tune::PROBE_SIZES.last().unwrap_or(&(8 << 20)) as usize;
        let board = self.alloc::<u8>(probe_max, Place::Fpga(0))?;
        let cpu = self.alloc::<u8>(probe_max, Place::Cpu)?;
        let wire = self.alloc::<u8>(64 << 10, Place::Cpu)?;
        let mut source = TuneSource::Measured;
        let outcome = (|| -> Result<()> {
            if self.my_pe() == 0 {
                let dir = tune::cache_dir();
                let cached = match (&dir, mode) {
                    (Some(d), crate::TuneMode::Auto) => match tune::load(d, &key) {
                        Ok(t) => Some(t),
                        Err(tune::CacheMiss::Missing) => None,
                        Err(miss) => {
                            diag::warn(
                                me,
                                format_args!("tuning cache not usable ({miss:?}); tuning again"),
                            );
                            None
                        }
                    },
                    _ => None,
                };
                let result = match cached {
                    Some(t) => {
                        source = TuneSource::Cached;
                        t
                    }
                    None => {
                        let t = self.measure_hops(key.clone(), &board, &cpu)?;
                        match dir.as_deref().map(|d| tune::store(d, &t)) {
                            Some(Ok(path)) => {
                                diag::debug(me, format_args!("tuning cached in {}", path.display()))
                            }
                            Some(Err(e)) => diag::warn(me, format_args!("tuning not cached: {e}")),
                            None => diag::warn(
                                me,
                                "tuning not cached: no cache directory (set SHMEMPLUS_CACHE_DIR)",
                            ),
                        }
                        t
                    }
                };
                let bytes = serde_json::to_vec(&result)
                    .map_err(|e| Error::InvalidArgument(e.to_string()))?;
                if bytes.len() + 16 > wire.len() {
                    return Err(Error::InvalidArgument(
                        "tuning result too large to share".into(),
                    ));
                }
                // Wire: length (8 bytes), cached flag (8 bytes), the JSON result.
                let mut head = (bytes.len() as u64).to_le_bytes().to_vec();
                head.extend_from_slice(&u64::from(source == TuneSource::Cached).to_le_bytes());
                for pe in 0..self.n_pes() {
                    self.put(&wire, 0, &head, pe)?;
                    self.put(&wire, 16, &bytes, pe)?;
                }
            }
            Ok(())
        })();
        // Every PE reaches this barrier, whatever PE 0's outcome, so none is stranded.
        self.barrier_all()?;
        let mut head = [0u8; 16];
        self.local_read(&wire, 0, &mut head)?;
        let len = u64::from_le_bytes(head[..8].try_into().unwrap_or([0; 8])) as usize;
        let cached = head[8] == 1;
        let fits = len.checked_add(16).is_some_and(|end| end <= wire.len());
        let shared = if outcome.is_ok() && len > 0 && fits {
            let mut bytes = vec![0u8; len];
            self.local_read(&wire, 16, &mut bytes)?;
            serde_json::from_slice::<tune::Tuning>(&bytes).ok()
        } else {
            None
        };
        self.free(wire)?;
        self.free(cpu)?;
        self.free(board)?;
        outcome?;
        let Some(result) = shared else {
            return Err(Error::InvalidArgument(
                "PE 0 shared no tuning result".into(),
            ));
        };
        *inner.tuning.lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
        inner
            .packet_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        Ok(if cached {
            TuneSource::Cached
        } else {
            TuneSource::Measured
        })
    }

    /// PE 0's measurements of the tuning pass: the median of 3 transfers of each probe
    /// size on each hop, through the library's own put/get paths (so on an emulated
    /// profile they include everything a transfer pays).
    pub(super) fn measure_hops(
        &self,
        key: String,
        board: &SymVec<u8>,
        cpu: &SymVec<u8>,
    ) -> Result<crate::tune::Tuning> {
        let started = std::time::Instant::now();
        let t = self.inner.topology;
        let peer = t.pes_per_node; // the first PE of node 1
        let before = self.packet_policy();
        self.set_packet_policy(PacketPolicy::Off);
        let mut buf = vec![0u8; board.len()];
        let mut median = |f: &mut dyn FnMut(&mut [u8]) -> Result<()>| -> Result<f64> {
            let mut samples = [0.0f64; 3];
            for s in &mut samples {
                let t0 = std::time::Instant::now();
                f(&mut buf)?;
                *s = t0.elapsed().as_secs_f64();
            }
            samples.sort_by(f64::total_cmp);
            Ok(samples[1])
        };
        let names = ["net", "fpga_read", "fpga_write"];
        let mut hops: Vec<(String, Vec<(u64, f64)>)> = names
            .iter()
            .flat_map(|n| [n.to_string(), format!("{n}/occupancy")])
            .map(|n| (n, Vec::new()))
            .collect();
        let me = self.my_pe();
        // Back-to-back transfers per occupancy probe.
        const WINDOW: usize = 4;
        for &size in &crate::tune::PROBE_SIZES {
            let n = size as usize;
            // One transfer alone, then WINDOW back to back: the extra time per
            // transfer is what holds the hop (its latency overlaps the next one).
            let ops: [&Probe<'_>; 3] = [
                &|b| self.put(cpu, 0, &b[..n], peer),
                // A board read that returns when the read is done: to this PE's CPU.
                &|_| self.put_from(cpu, 0, board, 0, n, me),
                &|b| self.put(board, 0, &b[..n], me),
            ];
            for (i, op) in ops.iter().enumerate() {
                let single = median(&mut |b| {
                    op(b)?;
                    self.quiet()
                })?;
                let window = median(&mut |b| {
                    for _ in 0..WINDOW {
                        op(b)?;
                    }
                    self.quiet()
                })?;
                let occupancy = ((window - single) / (WINDOW - 1) as f64).clamp(0.0, single);
                hops[2 * i].1.push((size, single));
                hops[2 * i + 1].1.push((size, occupancy));
            }
        }
        self.set_packet_policy(before);
        Ok(crate::tune::Tuning::from_measurements(
            key,
            hops,
            started.elapsed().as_secs_f64(),
        ))
    }

    /// The tuning in force (from the last [`Shmem::retune`]), if any.
    pub fn tuning(&self) -> Option<crate::tune::Tuning> {
        self.inner
            .tuning
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How multi-hop transfers are split into pipelined packets.
    pub fn packet_policy(&self) -> PacketPolicy {
        PacketPolicy::decode(self.inner.packet_policy.load(Ordering::Relaxed))
    }

    /// Sets the packet policy of this PE (as `SHMEMPLUS_PACKET` does at `init`).
    pub fn set_packet_policy(&self, policy: PacketPolicy) {
        self.inner
            .packet_policy
            .store(policy.encode(), Ordering::Relaxed);
    }
}
