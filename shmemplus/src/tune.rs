//! The self-tuning pass (`docs/model.md`, self-tuning): measure each hop on the running
//! job's profile and topology, fit its cost as a table of measured points, choose the
//! packet size of the board-to-board route for each size bucket from the fitted costs
//! with the k-stage model and the model's one packet search (`model::choose_packet`),
//! and keep the result in a cache file so later runs start at once.
//!
//! This module owns the tuning result, its cache file and the choice of packets from
//! measured costs. It must not charge time or move data itself: `shmem::Shmem::retune`
//! runs the measurements through the public put/get paths and calls in here.

use crate::model;
use netsim::Cost;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::path::{Path, PathBuf};

/// Transfer sizes at which each hop is measured. The smallest is the model's smallest
/// packet ([`model::MIN_PACKET`]), so a packet is never chosen from costs extrapolated
/// below the first measured point.
pub const PROBE_SIZES: [u64; 5] = [model::MIN_PACKET, 64 << 10, 512 << 10, 2 << 20, 8 << 20];
/// Size buckets (powers of two) for which a packet size is chosen.
pub const BUCKETS: [u64; 7] = [
    512 << 10,
    1 << 20,
    2 << 20,
    4 << 20,
    8 << 20,
    16 << 20,
    32 << 20,
];
/// Version of the cache file format (bumped on any change of `Tuning`).
const FORMAT: u32 = 2;
/// The hops of the board-to-board route, in order.
pub const HOPS: [&str; 3] = ["fpga_read", "net", "fpga_write"];

/// The result of a tuning pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// Cache file format.
    pub format: u32,
    /// What the result is valid for: profile, topology and library version.
    pub key: String,
    /// Measured (bytes, seconds) on each hop: `net`, `fpga_read`, `fpga_write` for
    /// one transfer alone, and `<hop>/occupancy` for the time each transfer holds the
    /// hop when several go back to back (the part that cannot overlap the next one).
    pub hops: Vec<(String, Vec<(u64, f64)>)>,
    /// (size bucket, packet bytes) for the remote board-to-board route; a packet equal
    /// to the bucket means no packetization.
    pub packets: Vec<(u64, u64)>,
    /// Seconds the measurements took.
    pub seconds: f64,
}

impl Tuning {
    /// Builds the result from measured points: fits each hop and picks the packets.
    pub fn from_measurements(
        key: String,
        hops: Vec<(String, Vec<(u64, f64)>)>,
        seconds: f64,
    ) -> Tuning {
        let mut t = Tuning {
            format: FORMAT,
            key,
            hops,
            packets: Vec::new(),
            seconds,
        };
        t.packets = BUCKETS
            .iter()
            .map(|&d| {
                // The model's one packet search; its "no packetization" (0) is stored as
                // a packet of the whole bucket.
                let Ok((best, _)) = model::choose_packet(d, |p| {
                    Ok::<f64, Infallible>(t.predict(d, if p == 0 { d } else { p }))
                });
                (d, if best == 0 { d } else { best })
            })
            .collect();
        t
    }

    /// The predicted time of a board-to-board transfer of `d` bytes in packets of `p`
    /// through the three hops, from the measured costs: the first packet pays every
    /// hop in full, each further one the slowest hop's occupancy (the k-stage form of
    /// `docs/model.md`, packetized pipelined transfers, with occupancy in place of time for the steady state, so a
    /// latency that overlaps between packets is not counted N times), but no less than
    /// the window of packets in flight allows.
    pub fn predict(&self, d: u64, p: u64) -> f64 {
        let p = p.clamp(1, d.max(1));
        let n = d.div_ceil(p);
        let time = |h: &str| self.cost(h).map_or(0.0, |c| c.time(p));
        let occupancy = |h: &str| {
            self.cost(&format!("{h}/occupancy"))
                .map_or_else(|| time(h), |c| c.time(p).min(time(h)))
        };
        let fill: f64 = HOPS.iter().map(|h| time(h)).sum();
        // At most WINDOW packets are in flight: a packet cannot start before the one
        // WINDOW places earlier is delivered, which bounds the rate by fill / WINDOW.
        let steady = HOPS
            .iter()
            .map(|h| occupancy(h))
            .fold(fill / crate::emulate::WINDOW as f64, f64::max);
        fill + (n.saturating_sub(1)) as f64 * steady
    }

    /// The fitted cost of hop `name`: a table of the measured points, made
    /// non-decreasing in time (a noisy probe never makes a larger transfer cheaper).
    pub fn cost(&self, name: &str) -> Option<Cost> {
        let (_, points) = self.hops.iter().find(|(n, _)| n == name)?;
        let mut fitted: Vec<(u64, f64)> = Vec::with_capacity(points.len());
        for &(b, t) in points {
            let floor = fitted.last().map_or(0.0, |&(_, f)| f);
            if fitted.last().is_none_or(|&(pb, _)| b > pb) && t.is_finite() {
                fitted.push((b, t.max(floor)));
            }
        }
        let cost = Cost::Table { points: fitted };
        cost.validate().ok().map(|_| cost)
    }

    /// The packet size for a transfer of `bytes` on the board-to-board route: the
    /// choice of the smallest bucket that holds it (the largest bucket beyond).
    pub fn packet_for(&self, bytes: usize) -> Option<usize> {
        let b = bytes as u64;
        self.packets
            .iter()
            .find(|&&(d, _)| d >= b)
            .or(self.packets.last())
            .map(|&(_, p)| p as usize)
    }
}

/// Where tuning results are cached: `SHMEMPLUS_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/shmemplus`, else `$HOME/.cache/shmemplus`.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    var("SHMEMPLUS_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| var("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("shmemplus")))
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".cache").join("shmemplus")))
}

/// The cache file of `key` in `dir`.
pub fn cache_file(dir: &Path, key: &str) -> PathBuf {
    // A short stable name: FNV-1a of the key (the key itself is inside the file).
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    dir.join(format!("tune-{hash:016x}.json"))
}

/// Why a cached result was not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CacheMiss {
    /// No cache file.
    Missing,
    /// The file is not a tuning result (it will be rebuilt).
    Corrupt(String),
    /// The file is for another profile, topology, version or format.
    Stale,
}

/// Loads the cached result of `key` from `dir`.
pub fn load(dir: &Path, key: &str) -> Result<Tuning, CacheMiss> {
    let path = cache_file(dir, key);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(CacheMiss::Missing),
        Err(e) => return Err(CacheMiss::Corrupt(format!("{}: {e}", path.display()))),
    };
    let t: Tuning = serde_json::from_str(&text)
        .map_err(|e| CacheMiss::Corrupt(format!("{}: {e}", path.display())))?;
    if t.format != FORMAT || t.key != key {
        return Err(CacheMiss::Stale);
    }
    Ok(t)
}

/// Stores `t` in `dir` (created if needed), atomically: a temporary file renamed into
/// place, so concurrent jobs never read half a file.
///
/// The temporary file gets a fresh random name and is created with `O_EXCL` (mode
/// 0600, by `tempfile`): a file or symlink planted in the directory is never opened or
/// followed, and the final rename replaces a symlink at the cache name instead of
/// writing through it.
pub fn store(dir: &Path, t: &Tuning) -> Result<PathBuf, String> {
    use std::io::Write;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let path = cache_file(dir, &t.key);
    let text = serde_json::to_string_pretty(t).map_err(|e| e.to_string())?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".tune-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| format!("{}: creating a temporary file: {e}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_data())
        .map_err(|e| format!("{}: {e}", tmp.path().display()))?;
    // On failure `persist` hands the file back; dropping it removes the temporary.
    tmp.persist(&path)
        .map_err(|e| format!("{}: {}", path.display(), e.error))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(key: &str) -> Tuning {
        // Hop costs like novo-g's at the probe sizes (seconds).
        let hops = vec![
            (
                "net".to_string(),
                vec![
                    (4096, 10.7e-6),
                    (65536, 52.6e-6),
                    (524288, 365e-6),
                    (2 << 20, 1.44e-3),
                    (8 << 20, 5.73e-3),
                ],
            ),
            (
                "fpga_read".to_string(),
                vec![
                    (4096, 0.9e-3),
                    (65536, 1.03e-3),
                    (524288, 1.17e-3),
                    (2 << 20, 3.0e-3),
                    (8 << 20, 8.14e-3),
                ],
            ),
            (
                "fpga_write".to_string(),
                vec![
                    (4096, 1.5e-3),
                    (65536, 2.16e-3),
                    (524288, 3.01e-3),
                    (2 << 20, 8.0e-3),
                    (8 << 20, 26.06e-3),
                ],
            ),
        ];
        Tuning::from_measurements(key.to_string(), hops, 0.1)
    }

    fn temp_dir(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("shmemplus-tune-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn packets_come_from_the_fitted_costs() {
        let t = sample("k");
        // The write hop dominates and its per-byte cost falls with size: packetizing
        // 32 MiB pays, a 512 KiB transfer does not split below the probes' resolution.
        let p32 = t.packet_for(32 << 20).unwrap();
        assert!(p32 < 32 << 20 && p32.is_power_of_two(), "{p32}");
        assert_eq!(t.packet_for(100 << 20), t.packet_for(32 << 20));
        assert!(t.cost("net").is_some() && t.cost("nothing").is_none());
    }

    #[test]
    fn packets_are_the_model_search_over_the_prediction() {
        let t = sample("k");
        for &(d, p) in &t.packets {
            let whole = |q: u64| if q == 0 { d } else { q };
            let (best, all) =
                model::choose_packet(d, |q| Ok::<f64, Infallible>(t.predict(d, whole(q)))).unwrap();
            let none = t.predict(d, d);
            assert!(all.iter().all(|&(q, _)| q == 0 || q >= model::MIN_PACKET));
            assert_eq!(p, whole(best), "bucket {d}");
            assert!(
                t.predict(d, p) <= none,
                "bucket {d}: the choice is no slower than none"
            );
        }
    }

    #[test]
    fn overlapping_latency_favours_smaller_packets() {
        // The same single-transfer times; in the second tuning most of each write is
        // latency that overlaps between packets (small occupancy): it must choose
        // packets no larger than the first, and predict a faster transfer.
        let plain = sample("k");
        let mut hops = plain.hops.clone();
        hops.push((
            "fpga_write/occupancy".to_string(),
            vec![
                (4096, 0.02e-3),
                (65536, 0.3e-3),
                (524288, 2.0e-3),
                (2 << 20, 7.6e-3),
                (8 << 20, 30e-3),
            ],
        ));
        let overlapped = Tuning::from_measurements("k".into(), hops, 0.0);
        let d: u64 = 32 << 20;
        let pp = plain.packet_for(d as usize).unwrap() as u64;
        let po = overlapped.packet_for(d as usize).unwrap() as u64;
        assert!(po <= pp, "{po} > {pp}");
        assert!(overlapped.predict(d, po) <= plain.predict(d, pp));
        // One packet: the sum of the hops' times.
        let one = plain.predict(d, d);
        let sum: f64 = HOPS.iter().map(|h| plain.cost(h).unwrap().time(d)).sum();
        assert!((one - sum).abs() < 1e-12);
    }

    #[test]
    fn noisy_points_are_made_monotonic() {
        let hops = vec![(
            "net".to_string(),
            vec![(1000, 2e-6), (2000, 1e-6), (2000, 5e-6), (4000, 3e-6)],
        )];
        let t = Tuning::from_measurements("k".into(), hops, 0.0);
        let c = t.cost("net").unwrap();
        assert!(c.time(2000) >= c.time(1000) && c.time(4000) >= c.time(2000));
    }

    #[test]
    fn cache_round_trip_and_misses() {
        let dir = temp_dir("roundtrip");
        assert_eq!(load(&dir, "k"), Err(CacheMiss::Missing));
        let t = sample("k");
        let path = store(&dir, &t).unwrap();
        assert_eq!(load(&dir, "k"), Ok(t.clone()));
        // Another key does not see it.
        assert_eq!(load(&dir, "other"), Err(CacheMiss::Missing));
        // A file for another key at this key's name (hash collision, edited file): stale.
        let mut other = t.clone();
        other.key = "different".into();
        std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
        assert_eq!(load(&dir, "k"), Err(CacheMiss::Stale));
        // An older format: stale.
        let mut old = t.clone();
        old.format = 0;
        std::fs::write(&path, serde_json::to_string(&old).unwrap()).unwrap();
        assert_eq!(load(&dir, "k"), Err(CacheMiss::Stale));
        // Garbage: corrupt, and a new store replaces it.
        std::fs::write(&path, "{ not json").unwrap();
        assert!(matches!(load(&dir, "k"), Err(CacheMiss::Corrupt(_))));
        store(&dir, &t).unwrap();
        assert_eq!(load(&dir, "k"), Ok(t));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn store_follows_no_planted_symlink() {
        use std::os::unix::fs::symlink;
        let dir = temp_dir("symlink");
        std::fs::create_dir_all(&dir).unwrap();
        let t = sample("k");
        let path = cache_file(&dir, &t.key);
        // Another user's bait: a symlink at the temporary name earlier versions used
        // (`<cache file>.tmp<pid>`), pointing at a file the victim can write.
        let victim = dir.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let bait = path.with_extension(format!("tmp{}", std::process::id()));
        symlink(&victim, &bait).unwrap();
        // And one at the cache name itself: the store replaces the link, not its target.
        let victim2 = dir.join("victim2");
        std::fs::write(&victim2, b"also precious").unwrap();
        symlink(&victim2, &path).unwrap();
        store(&dir, &t).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(&victim2).unwrap(), "also precious");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(load(&dir, "k"), Ok(t));
        // Nothing but the cache file, the bait and the victims: no temporary is left.
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 4, "{names:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unwritable_cache_directory_is_an_error_not_a_crash() {
        // A regular file where the directory should be: no directory can be created
        // there, whoever runs the test (root ignores permission bits, not this).
        let blocker = temp_dir("blocked");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let err = store(&blocker.join("cache"), &sample("k")).unwrap_err();
        assert!(err.contains("blocked"), "{err}");
        assert!(matches!(
            load(&blocker.join("cache"), "k"),
            Err(CacheMiss::Missing | CacheMiss::Corrupt(_))
        ));
        let _ = std::fs::remove_file(&blocker);
    }
}
