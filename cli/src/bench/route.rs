//! The routes and route groups `shmemplus bench` can measure, and the parsing of
//! `--routes` and the default `--ops` that follows from it, and the collectives it
//! measures (their names in reports and the bytes each call delivers).
//!
//! Owns route names (as they appear in reports and JSON) and each route's shape (which
//! places a put and a get move between); it must not measure anything.

use shmemplus::Place;

/// The ops `--ops` may name, in the order the PE side runs them.
pub const OPS: [&str; 6] = [
    "rma",
    "barrier",
    "am",
    "packet-sweep",
    "scf-pingpong",
    "contention",
];

/// A route `shmemplus bench` measures: where a put goes from and to, and a get back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Host buffer of PE 0 <-> CPU heap of PE 1.
    CpuCpu,
    /// Host buffer of PE 0 <-> board 0 of PE 0's node (an explicit local transfer).
    CpuFpgaLocal,
    /// Host buffer of PE 0 <-> board 0 of PE 1's node.
    CpuFpgaRemote,
    /// Board 0 <-> board 1 of PE 0's node (the same board when the node has one).
    FpgaFpgaLocal,
    /// Board 0 of PE 0's node <-> board 0 of PE 1's node.
    FpgaFpgaRemote,
}

impl Route {
    /// Every route, in report order.
    pub const ALL: [Route; 5] = [
        Route::CpuCpu,
        Route::CpuFpgaLocal,
        Route::CpuFpgaRemote,
        Route::FpgaFpgaLocal,
        Route::FpgaFpgaRemote,
    ];

    /// The route's name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Route::CpuCpu => "cpu-cpu",
            Route::CpuFpgaLocal => "cpu-fpga-local",
            Route::CpuFpgaRemote => "cpu-fpga-remote",
            Route::FpgaFpgaLocal => "fpga-fpga-local",
            Route::FpgaFpgaRemote => "fpga-fpga-remote",
        }
    }

    /// Parses a route name.
    pub fn parse(name: &str) -> Result<Route, String> {
        Route::ALL
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or_else(|| {
                let all: Vec<&str> = Route::ALL.iter().map(|r| r.name()).collect();
                format!("unknown route '{name}'; routes are {}", all.join(", "))
            })
    }

    pub(super) fn needs_boards(self) -> bool {
        self != Route::CpuCpu
    }

    /// What a put and a get do on this route: (put: local source place, get: local
    /// destination place, remote place, PE on the far side, board-to-board).
    pub(super) fn shape(self, me: u32) -> (Option<Place>, Option<Place>, Place, u32) {
        let (f0, f1) = (Place::Fpga(0), Place::Fpga(1));
        match self {
            Route::CpuCpu => (None, None, Place::Cpu, 1),
            Route::CpuFpgaLocal => (None, None, f0, me),
            Route::CpuFpgaRemote => (None, None, f0, 1),
            Route::FpgaFpgaLocal => (Some(f0), Some(f1), f1, me),
            Route::FpgaFpgaRemote => (Some(f0), Some(f1), f0, 1),
        }
    }
}

/// What `--routes` selects: RMA routes, and the route groups `atomics` and
/// `collectives` (which do not move data between places, so they run whatever
/// `--ops` says). `all` selects every route and both groups.
///
/// `--ops` defaults to rma,barrier,am, unless the routes are only groups: then to none,
/// so that `--routes atomics,collectives` measures just those.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteSelection {
    /// RMA routes, in the order given, each once.
    pub rma: Vec<Route>,
    /// The `atomics` group.
    pub atomics: bool,
    /// The `collectives` group.
    pub collectives: bool,
}

impl RouteSelection {
    /// Parses the `--routes` names.
    pub fn parse(names: &[String]) -> Result<RouteSelection, String> {
        let mut s = RouteSelection::default();
        let add = |s: &mut RouteSelection, r: Route| {
            if !s.rma.contains(&r) {
                s.rma.push(r);
            }
        };
        for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
            match name {
                "all" => {
                    Route::ALL.into_iter().for_each(|r| add(&mut s, r));
                    s.atomics = true;
                    s.collectives = true;
                }
                "atomics" => s.atomics = true,
                "collectives" => s.collectives = true,
                _ => add(
                    &mut s,
                    Route::parse(name)
                        .map_err(|e| format!("{e}; route groups are atomics, collectives, all"))?,
                ),
            }
        }
        Ok(s)
    }

    /// The `--ops` to run: `given`, or when none were given the default for this
    /// selection. An op that is not one of [`OPS`] is an error naming it (a typo must
    /// not silently measure nothing).
    pub fn ops(&self, given: &[String]) -> Result<Vec<String>, String> {
        let given: Vec<String> = given
            .iter()
            .map(|o| o.trim().to_string())
            .filter(|o| !o.is_empty())
            .collect();
        if let Some(bad) = given.iter().find(|o| !OPS.contains(&o.as_str())) {
            return Err(format!(
                "unknown op '{bad}' in --ops; the ops are {}",
                OPS.join(", ")
            ));
        }
        Ok(if !given.is_empty() {
            given
        } else if self.rma.is_empty() && (self.atomics || self.collectives) {
            Vec::new()
        } else {
            ["rma", "barrier", "am"].map(String::from).to_vec()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split(',').map(String::from).collect()
    }

    #[test]
    fn route_groups_parse_next_to_routes() {
        let s = RouteSelection::parse(&names("atomics,collectives")).unwrap();
        assert_eq!((s.rma.len(), s.atomics, s.collectives), (0, true, true));
        let s = RouteSelection::parse(&names("cpu-cpu,collectives,cpu-cpu")).unwrap();
        assert_eq!(s.rma, [Route::CpuCpu]);
        assert_eq!((s.atomics, s.collectives), (false, true));
        let s = RouteSelection::parse(&names("cpu-cpu")).unwrap();
        assert_eq!((s.rma.len(), s.atomics, s.collectives), (1, false, false));
        let s = RouteSelection::parse(&names("all")).unwrap();
        assert_eq!(s.rma, Route::ALL);
        assert!(s.atomics && s.collectives);
        let e = RouteSelection::parse(&names("atomics,nope")).unwrap_err();
        assert!(
            e.contains("'nope'") && e.contains("atomics, collectives"),
            "{e}"
        );
    }

    #[test]
    fn default_ops_follow_the_routes() {
        let groups = RouteSelection::parse(&names("atomics,collectives")).unwrap();
        assert!(groups.ops(&[]).unwrap().is_empty());
        assert_eq!(groups.ops(&names("barrier")).unwrap(), ["barrier"]);
        let rma = RouteSelection::parse(&names("cpu-cpu,atomics")).unwrap();
        assert_eq!(rma.ops(&[]).unwrap(), ["rma", "barrier", "am"]);
        assert_eq!(rma.ops(&names("am")).unwrap(), ["am"]);
        let e = rma.ops(&names("rma,bariier")).unwrap_err();
        assert!(e.contains("'bariier'") && e.contains("scf-pingpong"), "{e}");
    }
}

/// A collective `shmemplus bench` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Collective {
    Broadcast,
    Fcollect,
    Alltoall,
}

impl Collective {
    pub(super) const ALL: [Collective; 3] = [
        Collective::Broadcast,
        Collective::Fcollect,
        Collective::Alltoall,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Collective::Broadcast => "broadcast",
            Collective::Fcollect => "fcollect",
            Collective::Alltoall => "alltoall",
        }
    }

    /// Bytes counted for the bandwidth of one call with blocks of `block` bytes: what
    /// lands in each PE's destination (the OSHMEM comparison's definition).
    pub(super) fn delivered(self, block: usize, n_pes: usize) -> usize {
        match self {
            Collective::Broadcast => block,
            Collective::Fcollect | Collective::Alltoall => n_pes * block,
        }
    }
}
