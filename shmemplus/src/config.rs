//! Configuration read from the environment at `init`: the OpenSHMEM variables
//! (`SHMEM_SYMMETRIC_SIZE`, `SHMEM_DEBUG`, `SHMEM_INFO`, `SHMEM_VERSION`) and the
//! library's own `SHMEMPLUS_*` settings. Owns parsing and validation only; it must not
//! act on the values (loading the profile file is `init`'s job).

use crate::error::Error;

/// Default size of each PE's CPU symmetric heap (`SHMEM_SYMMETRIC_SIZE`): 128 MiB.
/// Shared memory is backed lazily, so an untouched heap costs no RAM.
pub const DEFAULT_SYMMETRIC_SIZE: usize = 128 << 20;
/// Default size of one active-message ring (one per ordered PE pair and direction).
pub const DEFAULT_AM_RING_BYTES: usize = 256 << 10;

/// Which transport carries put/get between CPU heaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conduit {
    /// Same-host shared mapping: a put or get is a plain copy (the default).
    Shm,
    /// Every put/get is an active message served by the target's progress thread
    /// (the path FPGA and cross-host transfers take). `SHMEMPLUS_CONDUIT=am`.
    Am,
}

impl Conduit {
    /// The name used in `SHMEMPLUS_CONDUIT` and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Conduit::Shm => "shm",
            Conduit::Am => "am",
        }
    }
}

/// How transfers over several hops (a board read, the network, a board write) are
/// split into packets that flow through the hops as a pipeline (docs/model.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketPolicy {
    /// The packet size the model predicts fastest for the route and size (default).
    Auto,
    /// No packetization: each hop moves the whole transfer before the next starts.
    Off,
    /// Packets of this many bytes.
    Bytes(usize),
}

impl PacketPolicy {
    /// Parses `off`, `auto` or a size (`SHMEMPLUS_PACKET`).
    ///
    /// ```
    /// use shmemplus::PacketPolicy;
    /// assert_eq!(PacketPolicy::parse("2M"), Ok(PacketPolicy::Bytes(2 << 20)));
    /// assert_eq!(PacketPolicy::parse("off"), Ok(PacketPolicy::Off));
    /// assert!(PacketPolicy::parse("0").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<PacketPolicy, String> {
        match text.trim() {
            "" | "auto" => Ok(PacketPolicy::Auto),
            "off" => Ok(PacketPolicy::Off),
            t => match parse_size(t)? {
                0 => Err("a packet must be at least 1 byte (or use off/auto)".into()),
                b => Ok(PacketPolicy::Bytes(b)),
            },
        }
    }

    pub(crate) fn encode(self) -> u64 {
        match self {
            PacketPolicy::Auto => 0,
            PacketPolicy::Off => u64::MAX,
            PacketPolicy::Bytes(b) => (b as u64).clamp(1, u64::MAX - 1),
        }
    }

    pub(crate) fn decode(v: u64) -> PacketPolicy {
        match v {
            0 => PacketPolicy::Auto,
            u64::MAX => PacketPolicy::Off,
            b => PacketPolicy::Bytes(b as usize),
        }
    }
}

/// When the self-tuning pass runs at `init` (`SHMEMPLUS_TUNE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuneMode {
    /// Use a valid cached result, else measure and cache (default).
    Auto,
    /// Never tune at init (`auto` packets then come from the profile's costs).
    Off,
    /// Measure even if a cached result exists, and replace it.
    Force,
}

/// Which clock a job's modeled time runs on (`SHMEMPLUS_CLOCK`, set by `shmemrun --clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// Wall-clock emulation (default): a modeled hop makes the initiating thread wait
    /// until the modeled instant on the host's monotonic clock.
    #[default]
    Wall,
    /// Virtual time: every PE has its own clock, starting at 0, that communication,
    /// board kernels and computation advance; nothing sleeps (`docs/architecture.md` §12).
    Virtual,
}

impl ClockKind {
    /// Parses `wall` or `virtual` (the spellings of `SHMEMPLUS_CLOCK` and `--clock`).
    ///
    /// ```
    /// use shmemplus::config::ClockKind;
    /// assert_eq!(ClockKind::parse("virtual"), Ok(ClockKind::Virtual));
    /// assert_eq!(ClockKind::parse(" wall "), Ok(ClockKind::Wall));
    /// assert!(ClockKind::parse("sundial").unwrap_err().contains("wall or virtual"));
    /// ```
    pub fn parse(text: &str) -> Result<ClockKind, String> {
        match text.trim() {
            "wall" => Ok(ClockKind::Wall),
            "virtual" => Ok(ClockKind::Virtual),
            other => Err(format!("'{other}' is not a clock; use wall or virtual")),
        }
    }

    /// The name `parse` accepts.
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::Wall => "wall",
            ClockKind::Virtual => "virtual",
        }
    }
}

/// Settings of one PE, read from the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Bytes of CPU symmetric heap per PE.
    pub symmetric_size: usize,
    /// The RMA conduit.
    pub conduit: Conduit,
    /// Bytes of each active-message ring (a power of two).
    pub am_ring_bytes: usize,
    /// `SHMEM_DEBUG` is set: debug logging.
    pub debug: bool,
    /// `SHMEM_INFO` is set: print the configuration at init.
    pub info: bool,
    /// `SHMEM_VERSION` is set: print the library version at init.
    pub version: bool,
    /// `SHMEMPLUS_PROFILE`: the cluster profile, a built-in name (`native`, `mu`,
    /// `novo-g`) or a TOML file path. Default `native` (no emulated cost).
    pub profile: String,
    /// `SHMEMPLUS_FPGAS`: boards per node (set by `shmemrun --fpgas`); `None` means the
    /// profile's.
    pub fpgas: Option<u32>,
    /// `SHMEMPLUS_PACKET`: `off`, `auto` (default) or a packet size.
    pub packet: PacketPolicy,
    /// `SHMEMPLUS_TUNE`: `auto` (default), `off` or `force`.
    pub tune: TuneMode,
    /// `SHMEMPLUS_WAIT_SPIN_US`: how long a waiting thread busy-polls before it yields;
    /// `None` means the default for the job's PEs per core.
    pub wait_spin: Option<std::time::Duration>,
    /// `SHMEMPLUS_WAIT_YIELD_US`: how long it then polls with `sched_yield` before it
    /// sleeps on the futex; `None` means the default. 0 and 0 sleep at once (fewest
    /// cycles stolen from other PEs, highest wake-up latency).
    pub wait_yield: Option<std::time::Duration>,
    /// `SHMEMPLUS_CLOCK`: `wall` (default) or `virtual`.
    pub clock: ClockKind,
}

impl Config {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Config, Error> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the configuration through `get` (a testable stand-in for the environment).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let flag = |k: &str| get(k).is_some_and(|v| !v.is_empty() && v != "0");
        let symmetric_size = match get("SHMEM_SYMMETRIC_SIZE") {
            Some(v) => parse_size(&v).map_err(|why| Error::BadConfig {
                var: "SHMEM_SYMMETRIC_SIZE",
                why,
            })?,
            None => DEFAULT_SYMMETRIC_SIZE,
        };
        if symmetric_size == 0 {
            return Err(Error::BadConfig {
                var: "SHMEM_SYMMETRIC_SIZE",
                why: "must be more than 0 bytes".into(),
            });
        }
        let conduit = match get("SHMEMPLUS_CONDUIT").as_deref() {
            None | Some("") | Some("shm") => Conduit::Shm,
            Some("am") => Conduit::Am,
            Some(other) => {
                return Err(Error::BadConfig {
                    var: "SHMEMPLUS_CONDUIT",
                    why: format!("'{other}' is not a conduit; use shm or am"),
                })
            }
        };
        let am_ring_bytes = match get("SHMEMPLUS_AM_RING") {
            Some(v) => {
                let b = parse_size(&v).map_err(|why| Error::BadConfig {
                    var: "SHMEMPLUS_AM_RING",
                    why,
                })?;
                if !b.is_power_of_two() || !(4096..=(64 << 20)).contains(&b) {
                    return Err(Error::BadConfig {
                        var: "SHMEMPLUS_AM_RING",
                        why: format!("{b} is not a power of two between 4K and 64M"),
                    });
                }
                b
            }
            None => DEFAULT_AM_RING_BYTES,
        };
        let profile = match get("SHMEMPLUS_PROFILE") {
            Some(p) if !p.trim().is_empty() => p.trim().to_string(),
            _ => "native".to_string(),
        };
        let fpgas =
            match get("SHMEMPLUS_FPGAS") {
                Some(v) if !v.trim().is_empty() => {
                    Some(v.trim().parse::<u32>().ok().filter(|&f| f <= 16).ok_or(
                        Error::BadConfig {
                            var: "SHMEMPLUS_FPGAS",
                            why: format!("'{v}' is not a board count from 0 to 16"),
                        },
                    )?)
                }
                _ => None,
            };
        let packet = match get("SHMEMPLUS_PACKET") {
            Some(v) => PacketPolicy::parse(&v).map_err(|why| Error::BadConfig {
                var: "SHMEMPLUS_PACKET",
                why,
            })?,
            None => PacketPolicy::Auto,
        };
        let tune = match get("SHMEMPLUS_TUNE").as_deref().map(str::trim) {
            None | Some("") | Some("auto") => TuneMode::Auto,
            Some("off") => TuneMode::Off,
            Some("force") => TuneMode::Force,
            Some(other) => {
                return Err(Error::BadConfig {
                    var: "SHMEMPLUS_TUNE",
                    why: format!("'{other}' is not auto, off or force"),
                })
            }
        };
        let micros = |var: &'static str| -> Result<Option<std::time::Duration>, Error> {
            match get(var) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(us) if us <= 10_000_000 => Ok(Some(std::time::Duration::from_micros(us))),
                    _ => Err(Error::BadConfig {
                        var,
                        why: format!("'{v}' is not a number of microseconds from 0 to 10000000"),
                    }),
                },
            }
        };
        let wait_spin = micros("SHMEMPLUS_WAIT_SPIN_US")?;
        let wait_yield = micros("SHMEMPLUS_WAIT_YIELD_US")?;
        let clock = match get("SHMEMPLUS_CLOCK") {
            Some(v) if !v.trim().is_empty() => {
                ClockKind::parse(&v).map_err(|why| Error::BadConfig {
                    var: "SHMEMPLUS_CLOCK",
                    why,
                })?
            }
            _ => ClockKind::Wall,
        };
        Ok(Config {
            clock,
            wait_spin,
            wait_yield,
            tune,
            packet,
            fpgas,
            profile,
            symmetric_size,
            conduit,
            am_ring_bytes,
            debug: flag("SHMEM_DEBUG"),
            info: flag("SHMEM_INFO"),
            version: flag("SHMEM_VERSION"),
        })
    }
}

/// Parses a byte count as OpenSHMEM implementations do: a number with an optional
/// suffix K, M, G or T (powers of 1024; `KiB`/`KB`/`k` spellings accepted too).
///
/// ```
/// use shmemplus::config::parse_size;
/// assert_eq!(parse_size("64M"), Ok(64 << 20));
/// assert_eq!(parse_size("1GiB"), Ok(1 << 30));
/// assert_eq!(parse_size("4096"), Ok(4096));
/// assert!(parse_size("lots").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<usize, String> {
    // One size syntax for the whole project: the profile parser's.
    let n = netsim::profile::parse_size(text)?;
    usize::try_from(n).map_err(|_| format!("'{text}' is too large for this machine"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, Error> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.symmetric_size, DEFAULT_SYMMETRIC_SIZE);
        assert_eq!(c.conduit, Conduit::Shm);
        assert!(!c.debug && !c.info);
    }

    #[test]
    fn reads_variables() {
        let c = cfg(&[
            ("SHMEM_SYMMETRIC_SIZE", "2m"),
            ("SHMEMPLUS_CONDUIT", "am"),
            ("SHMEM_DEBUG", "1"),
            ("SHMEM_INFO", "0"),
        ])
        .unwrap();
        assert_eq!(c.symmetric_size, 2 << 20);
        assert_eq!(c.conduit, Conduit::Am);
        assert!(c.debug && !c.info);
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = cfg(&[("SHMEM_SYMMETRIC_SIZE", "12Q")]).unwrap_err();
        assert!(e.to_string().contains("SHMEM_SYMMETRIC_SIZE"), "{e}");
        let e = cfg(&[("SHMEMPLUS_CONDUIT", "tcp")]).unwrap_err();
        assert!(e.to_string().contains("SHMEMPLUS_CONDUIT"), "{e}");
        let e = cfg(&[("SHMEMPLUS_AM_RING", "5000")]).unwrap_err();
        assert!(e.to_string().contains("power of two"), "{e}");
    }

    #[test]
    fn sizes_past_64_bits_are_refused_not_wrapped() {
        // Suffix multiplication and digit parsing are checked: each of these is an
        // error naming the variable, never a wrapped size.
        for v in [
            "16777216T",
            "18446744073709551616",
            "99999999999999999999K",
            "16E",
        ] {
            for var in [
                "SHMEM_SYMMETRIC_SIZE",
                "SHMEMPLUS_AM_RING",
                "SHMEMPLUS_PACKET",
            ] {
                let e = cfg(&[(var, v)]).unwrap_err();
                assert!(e.to_string().contains(var), "{var}={v}: {e}");
            }
        }
        // The largest 64-bit sizes parse exactly; whether a segment can hold them is
        // the layout's question (see `segment`), a ring's is answered here.
        let c = cfg(&[("SHMEM_SYMMETRIC_SIZE", "18446744073709551615")]).unwrap();
        assert_eq!(c.symmetric_size, usize::MAX);
        let e = cfg(&[("SHMEMPLUS_AM_RING", "16777215T")]).unwrap_err();
        assert!(e.to_string().contains("between 4K and 64M"), "{e}");
    }
}
