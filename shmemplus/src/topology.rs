//! Topology: how the PEs of a job map onto simulated nodes.
//!
//! Owns the arithmetic of PE -> node and the resolution of the launcher's
//! `--pes-per-node` / `--nodes` options. It must not know about memory or transport.

use crate::error::Error;

/// The shape of a job: how many PEs, and how they sit on simulated nodes.
///
/// PE `p` lives on node `p / pes_per_node`, with local rank `p % pes_per_node`
/// (docs/architecture.md §4, "Process model").
///
/// ```
/// use shmemplus::Topology;
/// let t = Topology::resolve(8, Some(2), None).unwrap();
/// assert_eq!((t.nodes, t.node_of(5), t.local_rank(5)), (4, 2, 1));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// Number of PEs in the job.
    pub n_pes: u32,
    /// PEs per simulated node (the last node may hold fewer).
    pub pes_per_node: u32,
    /// Number of simulated nodes.
    pub nodes: u32,
}

impl Topology {
    /// Resolves the launcher options into a topology. With neither option, every PE is
    /// its own node (as in SHMEM+). With `pes_per_node` only, nodes are
    /// `ceil(n / pes_per_node)`; with `nodes` only, `pes_per_node = ceil(n / nodes)`;
    /// with both, they must cover exactly the PEs (no empty node, none missing).
    pub fn resolve(
        n_pes: u32,
        pes_per_node: Option<u32>,
        nodes: Option<u32>,
    ) -> Result<Topology, Error> {
        let bad = |why: String| Err(Error::BadTopology(why));
        if n_pes == 0 {
            return bad("the job needs at least one PE (-n 1 or more)".into());
        }
        let (ppn, nodes) = match (pes_per_node, nodes) {
            (Some(0), _) => return bad("--pes-per-node must be at least 1".into()),
            (_, Some(0)) => return bad("--nodes must be at least 1".into()),
            (None, None) => (1, n_pes),
            (Some(m), None) => (m, n_pes.div_ceil(m)),
            (None, Some(k)) => {
                if k > n_pes {
                    return bad(format!("{k} nodes for {n_pes} PEs would leave nodes empty"));
                }
                let m = n_pes.div_ceil(k);
                (m, n_pes.div_ceil(m))
            }
            (Some(m), Some(k)) => (m, k),
        };
        if nodes.checked_mul(ppn).is_none_or(|cap| cap < n_pes) {
            return bad(format!(
                "{nodes} nodes x {ppn} PEs per node hold fewer than the {n_pes} PEs"
            ));
        }
        if (nodes - 1) * ppn >= n_pes {
            return bad(format!(
                "{nodes} nodes x {ppn} PEs per node would leave node {} empty with {n_pes} PEs",
                nodes - 1
            ));
        }
        Ok(Topology {
            n_pes,
            pes_per_node: ppn,
            nodes,
        })
    }

    /// The node of PE `pe`.
    pub fn node_of(&self, pe: u32) -> u32 {
        pe / self.pes_per_node
    }

    /// The rank of PE `pe` among the PEs of its node.
    pub fn local_rank(&self, pe: u32) -> u32 {
        pe % self.pes_per_node
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_to_one_pe_per_node() {
        let t = Topology::resolve(4, None, None).unwrap();
        assert_eq!((t.pes_per_node, t.nodes), (1, 4));
        assert_eq!(t.node_of(3), 3);
    }

    #[test]
    fn nodes_option_spreads_pes() {
        let t = Topology::resolve(5, None, Some(2)).unwrap();
        assert_eq!((t.pes_per_node, t.nodes), (3, 2));
        assert_eq!((t.node_of(2), t.node_of(3)), (0, 1));
    }

    #[test]
    fn inconsistent_options_are_rejected() {
        assert!(Topology::resolve(8, Some(2), Some(3)).is_err());
        assert!(Topology::resolve(4, Some(2), Some(3)).is_err());
        assert!(Topology::resolve(2, None, Some(3)).is_err());
        assert!(Topology::resolve(0, None, None).is_err());
        assert!(Topology::resolve(4, Some(0), None).is_err());
    }
}
