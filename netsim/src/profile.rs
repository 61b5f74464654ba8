//! Cluster profiles: the simulated topology and the cost of every hop, read from TOML.
//!
//! This module owns the profile file format (parsing, unit conversion, validation with
//! errors that name the file, the field and the problem) and the three builtin profiles
//! shipped in `netsim/profiles/` (`native`, `mu`, `novo-g`), embedded in the binary. It
//! must not charge or wait for anything (that is [`crate::timeline`]) and must not know
//! about PEs beyond the `pes_per_node` count of the topology it describes.
//!
//! # File format
//!
//! ```toml
//! name = "my-cluster"
//! description = "free text"
//! cpu_speed = 0.5         # optional: the modeled CPUs' speed relative to this host's
//!                         # (default 1); scales computation under the virtual clock
//! [topology]              # every field optional; defaults are the native profile's
//! nodes = 4
//! pes_per_node = 1
//! boards_per_node = 4
//! board_memory = "2G"     # an integer, or a string with a K/M/G/T suffix (powers of 1024)
//! dma_min_bytes = 32
//! dma_align = 32          # a power of two
//! [hops.net]              # hops: net, fpga_read, fpga_write; an absent hop costs nothing
//! model = "loggp"
//! latency_us = 3.76
//! overhead_us = 0.0       # optional, default 0
//! gap_us = 0.0            # optional, default 0
//! bandwidth_mbps = 850.0  # MB/s = 10^6 bytes per second
//! [hops.fpga_read]
//! model = "table"
//! points = [[32, 2.0e-4], ["1M", 1.2e-3]]   # [bytes, seconds]; bytes may be a size string
//! ```
//!
//! Length: about 560 lines of code and 400 of unit tests (every field's validation has
//! its test); parsing and validating a profile is one concern.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::cost::{validate_points, Cost};

/// The kind of a hop, i.e. which cost of the profile applies to it.
///
/// ```
/// use netsim::profile::HopKind;
/// assert_eq!(HopKind::FpgaRead.name(), "fpga_read");
/// assert_eq!(HopKind::Net.to_string(), "net");
/// assert_eq!("fpga_write".parse::<HopKind>(), Ok(HopKind::FpgaWrite));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HopKind {
    /// CPU <-> CPU between two nodes, over the network.
    Net,
    /// Board -> its host CPU (a DMA read from board memory).
    FpgaRead,
    /// Host CPU -> board (a DMA write into board memory).
    FpgaWrite,
}

impl HopKind {
    /// Every hop kind, in file order.
    pub const ALL: [HopKind; 3] = [HopKind::Net, HopKind::FpgaRead, HopKind::FpgaWrite];

    /// The name used in profile files (`[hops.NAME]`): `net`, `fpga_read`, `fpga_write`.
    pub fn name(self) -> &'static str {
        match self {
            HopKind::Net => "net",
            HopKind::FpgaRead => "fpga_read",
            HopKind::FpgaWrite => "fpga_write",
        }
    }
}

impl fmt::Display for HopKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing a [`HopKind`] from an unknown name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hop {0:?} (expected net, fpga_read or fpga_write)")]
pub struct UnknownHop(pub String);

impl FromStr for HopKind {
    type Err = UnknownHop;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HopKind::ALL
            .into_iter()
            .find(|h| h.name() == s)
            .ok_or_else(|| UnknownHop(s.to_string()))
    }
}

/// The shape of the simulated cluster.
///
/// The default is the `native` profile's topology: 2 nodes, 1 PE per node, 1 board per
/// node of 2 GiB, DMA minimum 32 bytes and alignment 32.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologySpec {
    /// Simulated nodes (at least 1).
    pub nodes: u32,
    /// PEs on each node (at least 1).
    pub pes_per_node: u32,
    /// FPGA boards on each node (may be 0).
    pub boards_per_node: u32,
    /// Memory of each board in bytes.
    pub board_memory: u64,
    /// Smallest DMA transfer a board accepts, in bytes.
    pub dma_min_bytes: u64,
    /// Required alignment of DMA offsets and sizes, in bytes (a power of two).
    pub dma_align: u64,
}

impl Default for TopologySpec {
    fn default() -> Self {
        TopologySpec {
            nodes: 2,
            pes_per_node: 1,
            boards_per_node: 1,
            board_memory: 2 << 30,
            dma_min_bytes: 32,
            dma_align: 32,
        }
    }
}

/// A simulated cluster: its topology and the cost of every hop.
///
/// ```
/// use netsim::profile::{HopKind, Profile};
/// let p = Profile::load("novo-g")?;
/// assert_eq!(p.topology.nodes, 24);
/// let net = p.cost(HopKind::Net).expect("novo-g models the network");
/// assert!(net.time(32) > 7e-6);
/// assert!(Profile::builtin("native").expect("shipped").is_free());
/// # Ok::<(), netsim::profile::ProfileError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile's name (`name = ...` in the file).
    pub name: String,
    /// Free text describing the cluster.
    pub description: String,
    /// Where it came from: `builtin:NAME` or the file path.
    pub source: String,
    /// Nodes, PEs and boards.
    pub topology: TopologySpec,
    /// The network hop (CPU <-> CPU between nodes); `None`: no cost.
    pub net: Option<Cost>,
    /// The DMA read hop (board -> CPU); `None`: no cost.
    pub fpga_read: Option<Cost>,
    /// The DMA write hop (CPU -> board); `None`: no cost.
    pub fpga_write: Option<Cost>,
    /// The modeled CPUs' speed relative to this host's (finite, > 0; default 1): under
    /// the virtual clock, computation between library calls advances a PE's clock by
    /// its CPU time divided by this.
    pub cpu_speed: f64,
}

/// Why a profile could not be loaded. Displays as `{file}: {field}: {problem}`.
///
/// `field` is the path of the offending value (e.g. `hops.fpga_read.points[2]`,
/// `topology.nodes`), `line N` for a TOML syntax error, or `file` when the file could
/// not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {field}: {problem}")]
pub struct ProfileError {
    /// The profile file (or `builtin:NAME`, or the string given to [`Profile::load`]).
    pub file: String,
    /// The offending field.
    pub field: String,
    /// What is wrong and, where it helps, what to write instead.
    pub problem: String,
}

const BUILTINS: [(&str, &str); 3] = [
    ("native", include_str!("../profiles/native.toml")),
    ("mu", include_str!("../profiles/mu.toml")),
    ("novo-g", include_str!("../profiles/novo-g.toml")),
];

const BUILTIN_NAMES: [&str; 3] = [BUILTINS[0].0, BUILTINS[1].0, BUILTINS[2].0];

impl Profile {
    /// The names of the builtin profiles: `["native", "mu", "novo-g"]`.
    ///
    /// ```
    /// assert!(netsim::profile::Profile::builtin_names().contains(&"mu"));
    /// ```
    pub fn builtin_names() -> &'static [&'static str] {
        &BUILTIN_NAMES
    }

    /// A builtin profile by name (embedded: works without the files on disk), with
    /// `source` = `builtin:NAME`; `None` for an unknown name.
    ///
    /// ```
    /// let mu = netsim::profile::Profile::builtin("mu").expect("shipped");
    /// assert_eq!(mu.source, "builtin:mu");
    /// assert!(netsim::profile::Profile::builtin("nope").is_none());
    /// ```
    pub fn builtin(name: &str) -> Option<Profile> {
        let (_, text) = BUILTINS.iter().find(|(n, _)| *n == name)?;
        // The builtins are checked by the unit tests; a parse failure cannot happen in
        // a tested build, and `None` is the honest answer if it did.
        Profile::from_toml_str(text, &format!("builtin:{name}")).ok()
    }

    /// A builtin profile if `name_or_path` names one, else the TOML file at that path.
    ///
    /// A builtin name wins over a file of the same name in the working directory:
    /// write `./mu` to load such a file.
    ///
    /// ```
    /// use netsim::profile::Profile;
    /// assert_eq!(Profile::load("mu")?.topology.nodes, 4);
    /// let err = Profile::load("/nonexistent/cluster.toml").unwrap_err();
    /// assert_eq!(err.field, "file");
    /// # Ok::<(), netsim::profile::ProfileError>(())
    /// ```
    pub fn load(name_or_path: &str) -> Result<Profile, ProfileError> {
        if let Some(p) = Profile::builtin(name_or_path) {
            return Ok(p);
        }
        match std::fs::read_to_string(name_or_path) {
            Ok(text) => Profile::from_toml_str(&text, name_or_path),
            Err(e) => Err(ProfileError {
                file: name_or_path.to_string(),
                field: "file".into(),
                problem: format!(
                    "not a builtin profile ({}) and cannot read it as a file: {e}",
                    BUILTIN_NAMES.join(", ")
                ),
            }),
        }
    }

    /// Parses and validates a profile from TOML text; `source` names it in errors and
    /// becomes [`Profile::source`].
    ///
    /// ```
    /// use netsim::profile::{HopKind, Profile};
    /// let text = r#"
    ///     name = "tiny"
    ///     [topology]
    ///     nodes = 3
    ///     [hops.net]
    ///     model = "loggp"
    ///     latency_us = 1.0
    ///     bandwidth_mbps = 1000.0
    /// "#;
    /// let p = Profile::from_toml_str(text, "tiny.toml")?;
    /// assert_eq!(p.topology.nodes, 3);
    /// assert!(p.cost(HopKind::FpgaRead).is_none());
    ///
    /// let err = Profile::from_toml_str("name = \"x\"\n[topology]\nnodes = 0\n", "x.toml")
    ///     .unwrap_err();
    /// assert_eq!(err.to_string(), "x.toml: topology.nodes: must be at least 1");
    /// # Ok::<(), netsim::profile::ProfileError>(())
    /// ```
    pub fn from_toml_str(text: &str, source: &str) -> Result<Profile, ProfileError> {
        let fail = |field: String, problem: String| ProfileError {
            file: source.to_string(),
            field,
            problem,
        };
        let de = toml::Deserializer::parse(text).map_err(|e| {
            let field = match e.span() {
                Some(span) => line_col(text, span.start),
                None => "syntax".to_string(),
            };
            fail(field, format!("TOML syntax error: {}", e.message().trim()))
        })?;
        let raw: RawProfile = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." {
                "(top level)".to_string()
            } else {
                path
            };
            let mut problem = e.inner().message().trim().to_string();
            if let Some(span) = e.inner().span() {
                problem.push_str(&format!(" ({})", line_col(text, span.start)));
            }
            fail(field, problem)
        })?;
        raw.into_profile(source)
    }

    /// The cost of a hop; `None` when the hop adds no cost.
    pub fn cost(&self, hop: HopKind) -> Option<&Cost> {
        match hop {
            HopKind::Net => self.net.as_ref(),
            HopKind::FpgaRead => self.fpga_read.as_ref(),
            HopKind::FpgaWrite => self.fpga_write.as_ref(),
        }
    }

    /// True when no hop has a cost (the `native` profile): nothing to emulate.
    pub fn is_free(&self) -> bool {
        HopKind::ALL.iter().all(|h| self.cost(*h).is_none())
    }
}

/// Parses a size: an integer of bytes, optionally followed by `K`, `M`, `G` or `T`
/// (powers of 1024, case-insensitive, optionally followed by `B` or `iB`).
///
/// ```
/// use netsim::profile::parse_size;
/// assert_eq!(parse_size("2G"), Ok(2 << 30));
/// assert_eq!(parse_size("512KiB"), Ok(512 << 10));
/// assert_eq!(parse_size("4096"), Ok(4096));
/// assert!(parse_size("2X").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    let bad = || format!("{text:?} is not a size (write e.g. 4096, \"512K\", \"2G\")");
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?} does not fit in 64 bits"))
}

/// "line L, column C" (1-based) of a byte offset.
fn line_col(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("line {line}, column {col}")
}

/// A size in bytes in a profile: an integer or a size string (see [`parse_size`]).
#[derive(Debug, Clone, Copy)]
struct Size(u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct SizeVisitor;
        impl Visitor<'_> for SizeVisitor {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size in bytes: a non-negative integer or a string like \"2G\"")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .map(Size)
                    .map_err(|_| E::custom(format!("size must not be negative, got {v}")))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(SizeVisitor)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    cpu_speed: Option<f64>,
    #[serde(default)]
    topology: RawTopology,
    #[serde(default)]
    hops: RawHops,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawTopology {
    nodes: u32,
    pes_per_node: u32,
    boards_per_node: u32,
    board_memory: Size,
    dma_min_bytes: Size,
    dma_align: Size,
}

impl Default for RawTopology {
    fn default() -> Self {
        let t = TopologySpec::default();
        RawTopology {
            nodes: t.nodes,
            pes_per_node: t.pes_per_node,
            boards_per_node: t.boards_per_node,
            board_memory: Size(t.board_memory),
            dma_min_bytes: Size(t.dma_min_bytes),
            dma_align: Size(t.dma_align),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawHops {
    net: Option<RawHop>,
    fpga_read: Option<RawHop>,
    fpga_write: Option<RawHop>,
}

/// One `[hops.X]` table; which fields are required depends on `model`, checked in
/// [`RawHop::into_cost`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHop {
    model: String,
    latency_us: Option<f64>,
    overhead_us: Option<f64>,
    gap_us: Option<f64>,
    bandwidth_mbps: Option<f64>,
    points: Option<Vec<(Size, f64)>>,
}

const LOGGP_FIELDS: &str = "latency_us, overhead_us, gap_us, bandwidth_mbps";

impl RawProfile {
    fn into_profile(self, source: &str) -> Result<Profile, ProfileError> {
        let fail = |field: &str, problem: String| ProfileError {
            file: source.to_string(),
            field: field.to_string(),
            problem,
        };
        if self.name.trim().is_empty() {
            return Err(fail("name", "must not be empty".into()));
        }
        let t = self.topology;
        if t.nodes == 0 {
            return Err(fail("topology.nodes", "must be at least 1".into()));
        }
        if t.pes_per_node == 0 {
            return Err(fail("topology.pes_per_node", "must be at least 1".into()));
        }
        if t.board_memory.0 == 0 {
            return Err(fail("topology.board_memory", "must be positive".into()));
        }
        if !t.dma_align.0.is_power_of_two() {
            return Err(fail(
                "topology.dma_align",
                format!("must be a power of two, got {}", t.dma_align.0),
            ));
        }
        let hop = |kind: HopKind, raw: Option<RawHop>| -> Result<Option<Cost>, ProfileError> {
            raw.map(|r| r.into_cost(&format!("hops.{kind}")))
                .transpose()
                .map_err(|(field, problem)| fail(&field, problem))
        };
        let cpu_speed = match self.cpu_speed {
            None => 1.0,
            Some(v) if v.is_finite() && v > 0.0 && v <= 1e6 => v,
            Some(v) => {
                return Err(fail(
                    "cpu_speed",
                    format!("{v} is not a speed relative to this host (finite, > 0, e.g. 0.5)"),
                ))
            }
        };
        Ok(Profile {
            cpu_speed,
            name: self.name,
            description: self.description,
            source: source.to_string(),
            topology: TopologySpec {
                nodes: t.nodes,
                pes_per_node: t.pes_per_node,
                boards_per_node: t.boards_per_node,
                board_memory: t.board_memory.0,
                dma_min_bytes: t.dma_min_bytes.0,
                dma_align: t.dma_align.0,
            },
            net: hop(HopKind::Net, self.hops.net)?,
            fpga_read: hop(HopKind::FpgaRead, self.hops.fpga_read)?,
            fpga_write: hop(HopKind::FpgaWrite, self.hops.fpga_write)?,
        })
    }
}

impl RawHop {
    /// Converts to a [`Cost`] in SI units; on error returns (field path, problem).
    fn into_cost(self, prefix: &str) -> Result<Cost, (String, String)> {
        let at = |field: &str| format!("{prefix}.{field}");
        match self.model.as_str() {
            "loggp" => {
                if self.points.is_some() {
                    return Err((
                        at("points"),
                        format!("not a field of model \"loggp\" (it takes {LOGGP_FIELDS})"),
                    ));
                }
                let latency = required(self.latency_us, &at("latency_us"), "loggp")?;
                let bandwidth = required(self.bandwidth_mbps, &at("bandwidth_mbps"), "loggp")?;
                let overhead = self.overhead_us.unwrap_or(0.0);
                let gap = self.gap_us.unwrap_or(0.0);
                for (name, v) in [
                    ("latency_us", latency),
                    ("overhead_us", overhead),
                    ("gap_us", gap),
                ] {
                    if !v.is_finite() {
                        return Err((at(name), format!("must be a finite number, got {v}")));
                    }
                    if v < 0.0 {
                        return Err((at(name), format!("must not be negative, got {v}")));
                    }
                }
                if !bandwidth.is_finite() || bandwidth <= 0.0 {
                    return Err((
                        at("bandwidth_mbps"),
                        format!("must be positive (MB/s), got {bandwidth}"),
                    ));
                }
                Ok(Cost::LogGp {
                    latency: latency * 1e-6,
                    overhead: overhead * 1e-6,
                    gap: gap * 1e-6,
                    bandwidth: bandwidth * 1e6,
                })
            }
            "table" => {
                for (name, present) in [
                    ("latency_us", self.latency_us.is_some()),
                    ("overhead_us", self.overhead_us.is_some()),
                    ("gap_us", self.gap_us.is_some()),
                    ("bandwidth_mbps", self.bandwidth_mbps.is_some()),
                ] {
                    if present {
                        return Err((
                            at(name),
                            "not a field of model \"table\" (it takes points)".into(),
                        ));
                    }
                }
                let points: Vec<(u64, f64)> = required(self.points, &at("points"), "table")?
                    .into_iter()
                    .map(|(b, t)| (b.0, t))
                    .collect();
                validate_points(&points).map_err(|e| {
                    let field = match e.index {
                        Some(i) => format!("{}[{i}]", at("points")),
                        None => at("points"),
                    };
                    (field, e.problem)
                })?;
                Ok(Cost::Table { points })
            }
            other => Err((
                at("model"),
                format!("unknown model {other:?} (expected \"loggp\" or \"table\")"),
            )),
        }
    }
}

fn required<T>(v: Option<T>, field: &str, model: &str) -> Result<T, (String, String)> {
    v.ok_or_else(|| {
        (
            field.to_string(),
            format!("missing field (required by model \"{model}\")"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Profile, ProfileError> {
        Profile::from_toml_str(text, "test.toml")
    }

    fn err(text: &str) -> ProfileError {
        match parse(text) {
            Ok(p) => panic!("expected an error, parsed {p:?}"),
            Err(e) => {
                assert_eq!(e.file, "test.toml");
                e
            }
        }
    }

    const NET_OK: &str = "name = \"t\"\n[hops.net]\nmodel = \"loggp\"\n";

    #[test]
    fn builtins_parse() {
        assert_eq!(Profile::builtin_names(), ["native", "mu", "novo-g"]);
        for name in Profile::builtin_names() {
            let text = BUILTINS
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| *t)
                .unwrap_or_default();
            let p = Profile::from_toml_str(text, name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(&p.name, name);
            assert!(!p.description.is_empty());
            assert_eq!(
                Profile::builtin(name).map(|p| p.source),
                Some(format!("builtin:{name}"))
            );
        }
    }

    #[test]
    fn native_is_free() {
        let p = Profile::builtin("native").expect("builtin");
        assert!(p.is_free());
        assert_eq!(p.topology, TopologySpec::default());
        assert_eq!(p.topology.nodes, 2);
        assert_eq!(p.topology.board_memory, 2 << 30);
    }

    #[test]
    fn mu_profile() {
        let p = Profile::builtin("mu").expect("builtin");
        assert!(!p.is_free());
        assert_eq!(
            p.topology,
            TopologySpec {
                nodes: 4,
                pes_per_node: 1,
                boards_per_node: 4,
                board_memory: 2 << 30,
                dma_min_bytes: 32,
                dma_align: 32
            }
        );
        let want = |lat: f64, bw: f64| Cost::LogGp {
            latency: lat,
            overhead: 0.0,
            gap: 0.0,
            bandwidth: bw,
        };
        // Compare with a tolerance: the file is in us and MB/s.
        let same = |a: Option<&Cost>, b: Cost| {
            let a = a.expect("hop present");
            for l in [0u64, 32, 1 << 20] {
                assert!((a.time(l) - b.time(l)).abs() < 1e-12, "{a} vs {b} at {l}");
            }
        };
        same(p.cost(HopKind::Net), want(3.76e-6, 850e6));
        same(p.cost(HopKind::FpgaRead), want(213.60e-6, 1000e6));
        same(p.cost(HopKind::FpgaWrite), want(213.60e-6, 275e6));
    }

    #[test]
    fn novo_g_profile() {
        let p = Profile::builtin("novo-g").expect("builtin");
        assert_eq!(p.topology.nodes, 24);
        assert_eq!(p.topology.boards_per_node, 4);
        let read = p.cost(HopKind::FpgaRead).expect("fpga_read");
        let write = p.cost(HopKind::FpgaWrite).expect("fpga_write");
        // Thesis points are reproduced exactly.
        for (l, t) in [
            (32u64, 644.92e-6),
            (512 << 10, 1.17e-3),
            (1 << 20, 2.00e-3),
            (2 << 20, 3.00e-3),
            (4 << 20, 4.93e-3),
            (8 << 20, 8.14e-3),
        ] {
            assert!((read.time(l) - t).abs() < 1e-12, "fpga_read at {l}");
        }
        for (l, t) in [
            (32u64, 644.92e-6),
            (512 << 10, 3.01e-3),
            (1 << 20, 4.99e-3),
            (2 << 20, 8.00e-3),
        ] {
            assert!((write.time(l) - t).abs() < 1e-12, "fpga_write at {l}");
        }
        // Beyond 2 MiB the write extrapolates with the last slope (3.01 ms per MiB).
        assert!((write.time(4 << 20) - 14.02e-3).abs() < 1e-9);
    }

    /// docs/model.md §7.3: the LogGP fit of the Novo-G network against the thesis points.
    #[test]
    fn novo_g_net_fit_within_3_percent() {
        let p = Profile::builtin("novo-g").expect("builtin");
        let net = p.cost(HopKind::Net).expect("net");
        for (l, t) in [
            (32u64, 7.96e-6),
            (512 << 10, 0.37e-3),
            (1 << 20, 0.73e-3),
            (2 << 20, 1.45e-3),
            (4 << 20, 2.88e-3),
            (8 << 20, 5.72e-3),
        ] {
            let rel = (net.time(l) - t) / t;
            assert!(
                rel.abs() < 0.03,
                "net at {l} B: model {} s, thesis {t} s",
                net.time(l)
            );
        }
    }

    #[test]
    fn topology_defaults_and_sizes() {
        let p =
            parse("name = \"t\"\n[topology]\nnodes = 8\nboard_memory = \"512M\"\ndma_align = 64\n")
                .expect("valid");
        assert_eq!(p.topology.nodes, 8);
        assert_eq!(p.topology.pes_per_node, 1);
        assert_eq!(p.topology.board_memory, 512 << 20);
        assert_eq!(p.topology.dma_align, 64);
        assert!(p.is_free());
        let p = parse("name = \"t\"\n[topology]\nboard_memory = 1048576\n").expect("valid");
        assert_eq!(p.topology.board_memory, 1 << 20);
    }

    #[test]
    fn size_strings_in_table_points() {
        let p = parse(
            "name = \"t\"\n[hops.fpga_read]\nmodel = \"table\"\npoints = [[32, 1e-4], [\"1M\", 2e-3]]\n",
        )
        .expect("valid");
        assert_eq!(
            p.fpga_read,
            Some(Cost::Table {
                points: vec![(32, 1e-4), (1 << 20, 2e-3)]
            })
        );
    }

    #[test]
    fn parse_size_cases() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("3k"), Ok(3072));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size(" 2 GiB "), Ok(2 << 30));
        assert!(parse_size("G").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("1.5G").is_err());
        assert!(parse_size("99999999999T").unwrap_err().contains("64 bits"));
    }

    #[test]
    fn error_unknown_model() {
        let e = err("name = \"t\"\n[hops.net]\nmodel = \"linear\"\n");
        assert_eq!(e.field, "hops.net.model");
        assert!(e.problem.contains("unknown model \"linear\""), "{e}");
    }

    #[test]
    fn error_missing_field() {
        let e = err(&format!("{NET_OK}latency_us = 1.0\n"));
        assert_eq!(e.field, "hops.net.bandwidth_mbps");
        assert!(e.problem.contains("missing field"), "{e}");
        let e = err("name = \"t\"\n[hops.fpga_write]\nmodel = \"table\"\n");
        assert_eq!(e.field, "hops.fpga_write.points");
        assert!(e.problem.contains("missing field"), "{e}");
        // `model` itself and `name` are required by the schema.
        let e = err("name = \"t\"\n[hops.net]\nlatency_us = 1.0\n");
        assert_eq!(e.field, "hops.net");
        assert!(e.problem.contains("missing field `model`"), "{e}");
        let e = err("[topology]\nnodes = 1\n");
        assert!(e.problem.contains("missing field `name`"), "{e}");
    }

    #[test]
    fn error_bad_bandwidth() {
        for bw in ["0.0", "-5.0"] {
            let e = err(&format!(
                "{NET_OK}latency_us = 1.0\nbandwidth_mbps = {bw}\n"
            ));
            assert_eq!(e.field, "hops.net.bandwidth_mbps");
            assert!(e.problem.starts_with("must be positive"), "{e}");
        }
    }

    #[test]
    fn error_negative_latency() {
        let e = err(&format!(
            "{NET_OK}latency_us = -1.0\nbandwidth_mbps = 10.0\n"
        ));
        assert_eq!(e.field, "hops.net.latency_us");
        assert!(e.problem.contains("must not be negative"), "{e}");
        let e = err(&format!(
            "{NET_OK}latency_us = 1.0\ngap_us = -0.5\nbandwidth_mbps = 10.0\n"
        ));
        assert_eq!(e.field, "hops.net.gap_us");
    }

    #[test]
    fn error_table_not_increasing() {
        let e = err("name = \"t\"\n[hops.fpga_read]\nmodel = \"table\"\n\
             points = [[32, 1e-4], [64, 2e-4], [64, 3e-4]]\n");
        assert_eq!(e.field, "hops.fpga_read.points[2]");
        assert!(e.problem.contains("points not increasing"), "{e}");
        assert!(
            e.problem.contains("bytes must be strictly increasing"),
            "{e}"
        );
        let e = err("name = \"t\"\n[hops.fpga_read]\nmodel = \"table\"\n\
             points = [[32, 1e-4], [64, 0.5e-4]]\n");
        assert_eq!(e.field, "hops.fpga_read.points[1]");
        assert!(e.problem.contains("time must not decrease"), "{e}");
        let e = err("name = \"t\"\n[hops.fpga_read]\nmodel = \"table\"\npoints = [[0, 1e-4]]\n");
        assert_eq!(e.field, "hops.fpga_read.points[0]");
    }

    #[test]
    fn error_empty_table() {
        let e = err("name = \"t\"\n[hops.fpga_write]\nmodel = \"table\"\npoints = []\n");
        assert_eq!(e.field, "hops.fpga_write.points");
        assert!(e.problem.contains("empty table"), "{e}");
    }

    #[test]
    fn error_malformed_point() {
        let e = err(
            "name = \"t\"\n[hops.fpga_write]\nmodel = \"table\"\npoints = [[32, 1e-4], [64]]\n",
        );
        assert_eq!(e.field, "hops.fpga_write.points[1]");
    }

    #[test]
    fn error_zero_nodes_and_pes() {
        let e = err("name = \"t\"\n[topology]\nnodes = 0\n");
        assert_eq!(
            (e.field.as_str(), e.problem.as_str()),
            ("topology.nodes", "must be at least 1")
        );
        let e = err("name = \"t\"\n[topology]\npes_per_node = 0\n");
        assert_eq!(e.field, "topology.pes_per_node");
        assert_eq!(e.problem, "must be at least 1");
        let e = err("name = \"t\"\n[topology]\nnodes = -3\n");
        assert_eq!(e.field, "topology.nodes");
    }

    #[test]
    fn error_dma_align_not_power_of_two() {
        let e = err("name = \"t\"\n[topology]\ndma_align = 48\n");
        assert_eq!(e.field, "topology.dma_align");
        assert_eq!(e.problem, "must be a power of two, got 48");
        let e = err("name = \"t\"\n[topology]\ndma_align = 0\n");
        assert_eq!(e.field, "topology.dma_align");
    }

    #[test]
    fn error_bad_size_string() {
        let e = err("name = \"t\"\n[topology]\nboard_memory = \"2X\"\n");
        assert_eq!(e.field, "topology.board_memory");
        assert!(e.problem.contains("is not a size"), "{e}");
        assert!(e.problem.contains("line 3"), "{e}");
    }

    #[test]
    fn error_unknown_fields() {
        let e = err("name = \"t\"\n[topology]\nnode = 4\n");
        assert_eq!(e.field, "topology.node");
        assert!(e.problem.contains("unknown field `node`"), "{e}");
        assert!(e.problem.contains("line 3"), "{e}");
        let e = err(&format!(
            "{NET_OK}latency_us = 1.0\nbandwidth_mbps = 1.0\nbandwith_mbps = 2.0\n"
        ));
        assert_eq!(e.field, "hops.net.bandwith_mbps");
        assert!(e.problem.contains("unknown field `bandwith_mbps`"), "{e}");
        let e = err("name = \"t\"\n[hops.local]\nmodel = \"table\"\n");
        assert_eq!(e.field, "hops.local");
        assert!(e.problem.contains("unknown field `local`"), "{e}");
        let e = err("name = \"t\"\ncolour = \"red\"\n");
        assert_eq!(e.field, "colour");
        assert!(e.problem.contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn error_fields_of_the_other_model() {
        let e = err(&format!(
            "{NET_OK}latency_us = 1.0\nbandwidth_mbps = 1.0\npoints = [[1, 1.0]]\n"
        ));
        assert_eq!(e.field, "hops.net.points");
        assert!(e.problem.contains("not a field of model \"loggp\""), "{e}");
        let e = err("name = \"t\"\n[hops.net]\nmodel = \"table\"\nlatency_us = 1.0\n");
        assert_eq!(e.field, "hops.net.latency_us");
    }

    #[test]
    fn error_toml_syntax_has_line() {
        let e = err("name = \"t\"\n[topology]\nnodes = = 3\n");
        assert!(e.field.starts_with("line 3"), "{e}");
        assert!(e.problem.starts_with("TOML syntax error"), "{e}");
    }

    #[test]
    fn error_display_and_load() {
        let e = err("name = \"t\"\n[topology]\nnodes = 0\n");
        assert_eq!(
            e.to_string(),
            "test.toml: topology.nodes: must be at least 1"
        );
        let e = Profile::load("no-such-profile").unwrap_err();
        assert_eq!(e.file, "no-such-profile");
        assert_eq!(e.field, "file");
        assert!(e.problem.contains("native, mu, novo-g"), "{e}");
    }

    #[test]
    fn load_reads_a_file() {
        let dir = std::env::temp_dir().join(format!("netsim-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("custom.toml");
        std::fs::write(&path, "name = \"custom\"\n[topology]\nnodes = 0\n").expect("write");
        let path_str = path.to_string_lossy().to_string();
        let e = Profile::load(&path_str).unwrap_err();
        assert_eq!(e.file, path_str);
        assert_eq!(e.field, "topology.nodes");
        std::fs::write(&path, "name = \"custom\"\n[topology]\nnodes = 5\n").expect("write");
        let p = Profile::load(&path_str).expect("valid");
        assert_eq!(p.source, path_str);
        assert_eq!(p.topology.nodes, 5);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn hop_kind_names() {
        for h in HopKind::ALL {
            assert_eq!(h.name().parse::<HopKind>(), Ok(h));
            assert_eq!(h.to_string(), h.name());
        }
        assert!("local".parse::<HopKind>().is_err());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn shipped_tables() -> Vec<(String, Cost)> {
            let mut out = Vec::new();
            for name in Profile::builtin_names() {
                let p = Profile::builtin(name).expect("builtin");
                for h in HopKind::ALL {
                    if let Some(c @ Cost::Table { .. }) = p.cost(h) {
                        out.push((format!("{name}.{h}"), c.clone()));
                    }
                }
            }
            out
        }

        #[test]
        fn there_are_shipped_tables() {
            assert_eq!(shipped_tables().len(), 2);
        }

        proptest! {
            #[test]
            fn shipped_tables_are_monotonic(a in 0u64..(64 << 20), b in 0u64..(64 << 20)) {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                for (name, c) in shipped_tables() {
                    prop_assert!(c.time(lo) <= c.time(hi), "{} at {} vs {}", name, lo, hi);
                }
            }

            #[test]
            fn tables_through_thesis_range_are_monotonic(l in 1u64..(16 << 20), d in 0u64..4096) {
                for (name, c) in shipped_tables() {
                    prop_assert!(c.time(l) <= c.time(l + d), "{} at {}", name, l);
                }
            }
        }
    }
}
