//! Which images each node, CPU and board gets, as in SHMEM+: the database is split in
//! equal contiguous blocks over the nodes; inside a node, its block is split in
//! proportion to speed between the CPUs of its PEs (weight 1 each: one core per PE)
//! and its boards (weight `speedup` each). The node's first PE (its *leader*) drives
//! the boards.
//!
//! The plan is a pure function of the image count, the topology, the device choice and
//! the speedup, so every PE computes the same plan without communicating. It also
//! fixes where each share's results land in the root's arrays: board results in order
//! (node, board), CPU results in PE order, each block right after the previous one, so
//! that a node's boards occupy one contiguous stretch (approach 3 sends it in one put).
//!
//! This module owns that arithmetic. It must not move data.

use serde::Serialize;

/// Where the correlograms are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// On the CPUs only.
    Cpu,
    /// On the boards only.
    Fpga,
    /// On both, in proportion to their speed.
    Hybrid,
}

/// A contiguous range of image indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Share {
    /// The first image.
    pub first: u32,
    /// Number of images.
    pub count: u32,
}

/// The distribution of a database over a job.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    n_images: u32,
    nodes: u32,
    pes_per_node: u32,
    boards: u32,
    device: Device,
    speedup: f64,
    /// Per node: `pes_per_node` CPU shares, then `boards` board shares.
    splits: Vec<Vec<Share>>,
}

impl Plan {
    /// The plan for `n_images` images over `nodes` nodes of `pes_per_node` PEs and
    /// `boards` boards, boards being `speedup` times as fast as one CPU core. `Fpga`
    /// without boards is refused; `Hybrid` without boards runs on the CPUs.
    ///
    /// ```
    /// use shmemplus_apps::cbir::plan::{Device, Plan};
    /// // 2 nodes, 1 PE and 2 boards each, boards 4x a core: per node 1/9 on the CPU.
    /// let p = Plan::new(1000, 2, 1, 2, Device::Hybrid, 4.0)?;
    /// assert_eq!(p.cpu_share(0).count + p.board_share(0, 0).count + p.board_share(0, 1).count, 500);
    /// assert_eq!(p.cpu_share(1).first, 500);
    /// assert_eq!(p.cpu_share(0).count, 55);
    /// # Ok::<(), String>(())
    /// ```
    pub fn new(
        n_images: u32,
        nodes: u32,
        pes_per_node: u32,
        boards: u32,
        device: Device,
        speedup: f64,
    ) -> Result<Plan, String> {
        if nodes == 0 || pes_per_node == 0 {
            return Err("a job has at least one node and one PE per node".into());
        }
        if device == Device::Fpga && boards == 0 {
            return Err("--device fpga needs boards, and this job has none: \
                 use --device cpu, or start the job with shmemrun --fpgas N"
                .into());
        }
        if device != Device::Cpu && !(speedup.is_finite() && speedup > 0.0) {
            return Err(format!(
                "the board speedup must be finite and > 0, got {speedup}"
            ));
        }
        let cpu_w = if device == Device::Fpga { 0.0 } else { 1.0 };
        let board_w = if device == Device::Cpu || boards == 0 {
            0.0
        } else {
            speedup
        };
        let weights: Vec<f64> = (0..pes_per_node)
            .map(|_| cpu_w)
            .chain((0..boards).map(|_| board_w))
            .collect();
        let total_w: f64 = weights.iter().sum();
        let splits = (0..nodes)
            .map(|node| {
                let lo = (u64::from(node) * u64::from(n_images) / u64::from(nodes)) as u32;
                let hi = (u64::from(node + 1) * u64::from(n_images) / u64::from(nodes)) as u32;
                let len = hi - lo;
                let mut cum = 0.0;
                let mut at = lo;
                weights
                    .iter()
                    .enumerate()
                    .map(|(i, w)| {
                        cum += w;
                        let end = if i + 1 == weights.len() {
                            hi
                        } else {
                            lo + ((f64::from(len) * cum / total_w).floor() as u32).min(len)
                        };
                        let s = Share {
                            first: at,
                            count: end.saturating_sub(at),
                        };
                        at = at.max(end);
                        s
                    })
                    .collect()
            })
            .collect();
        Ok(Plan {
            n_images,
            nodes,
            pes_per_node,
            boards,
            device,
            speedup,
            splits,
        })
    }

    /// Images in the database.
    pub fn n_images(&self) -> u32 {
        self.n_images
    }

    /// Nodes.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// Boards per node.
    pub fn boards(&self) -> u32 {
        self.boards
    }

    /// The device choice.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether any image goes to a board.
    pub fn uses_boards(&self) -> bool {
        self.total_board() > 0
    }

    /// The PE that drives node `node`'s boards (its first PE).
    pub fn leader(&self, node: u32) -> u32 {
        node * self.pes_per_node
    }

    /// The CPU share of PE `pe`.
    pub fn cpu_share(&self, pe: u32) -> Share {
        let (node, local) = (pe / self.pes_per_node, pe % self.pes_per_node);
        self.splits
            .get(node as usize)
            .and_then(|s| s.get(local as usize))
            .copied()
            .unwrap_or_default()
    }

    /// The share of board `b` of node `node`.
    pub fn board_share(&self, node: u32, b: u32) -> Share {
        self.splits
            .get(node as usize)
            .and_then(|s| s.get((self.pes_per_node + b) as usize))
            .copied()
            .unwrap_or_default()
    }

    /// The largest board share (the size of each board's symmetric buffers).
    pub fn max_board_share(&self) -> u32 {
        (0..self.nodes)
            .flat_map(|n| (0..self.boards).map(move |b| (n, b)))
            .map(|(n, b)| self.board_share(n, b).count)
            .max()
            .unwrap_or(0)
    }

    /// The largest CPU share.
    pub fn max_cpu_share(&self) -> u32 {
        (0..self.nodes * self.pes_per_node)
            .map(|pe| self.cpu_share(pe).count)
            .max()
            .unwrap_or(0)
    }

    /// Images on the boards of node `node`.
    pub fn node_board_total(&self, node: u32) -> u32 {
        (0..self.boards)
            .map(|b| self.board_share(node, b).count)
            .sum()
    }

    /// The largest [`Plan::node_board_total`].
    pub fn max_node_board_total(&self) -> u32 {
        (0..self.nodes)
            .map(|n| self.node_board_total(n))
            .max()
            .unwrap_or(0)
    }

    /// Images on all boards.
    pub fn total_board(&self) -> u32 {
        (0..self.nodes).map(|n| self.node_board_total(n)).sum()
    }

    /// Images on all CPUs.
    pub fn total_cpu(&self) -> u32 {
        self.n_images - self.total_board()
    }

    /// Where board `b` of node `node` puts its results in the root's board array.
    pub fn board_offset(&self, node: u32, b: u32) -> u32 {
        (0..node).map(|n| self.node_board_total(n)).sum::<u32>()
            + (0..b)
                .map(|bb| self.board_share(node, bb).count)
                .sum::<u32>()
    }

    /// Where PE `pe` puts its CPU results in the root's CPU array.
    pub fn cpu_offset(&self, pe: u32) -> u32 {
        (0..pe).map(|p| self.cpu_share(p).count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every image in exactly one share, and the offsets tile the root's arrays.
    fn check(p: &Plan) {
        let mut seen = vec![0u8; p.n_images as usize];
        let mut shares = Vec::new();
        for node in 0..p.nodes {
            for l in 0..p.pes_per_node {
                shares.push(p.cpu_share(node * p.pes_per_node + l));
            }
            for b in 0..p.boards {
                shares.push(p.board_share(node, b));
            }
        }
        for s in shares {
            for i in s.first..s.first + s.count {
                seen[i as usize] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{p:?}");
        let mut at = 0;
        for node in 0..p.nodes {
            for b in 0..p.boards {
                assert_eq!(p.board_offset(node, b), at);
                at += p.board_share(node, b).count;
            }
        }
        assert_eq!(at, p.total_board());
        let mut at = 0;
        for pe in 0..p.nodes * p.pes_per_node {
            assert_eq!(p.cpu_offset(pe), at);
            at += p.cpu_share(pe).count;
        }
        assert_eq!(at, p.total_cpu());
    }

    #[test]
    fn every_image_once_in_every_shape() {
        for n in [0, 1, 7, 100, 22000] {
            for (nodes, ppn, boards) in [(1, 1, 0), (1, 1, 1), (3, 2, 4), (8, 1, 4), (4, 4, 1)] {
                for device in [Device::Cpu, Device::Fpga, Device::Hybrid] {
                    if device == Device::Fpga && boards == 0 {
                        assert!(Plan::new(n, nodes, ppn, boards, device, 20.0).is_err());
                        continue;
                    }
                    let p = Plan::new(n, nodes, ppn, boards, device, 20.0).unwrap();
                    check(&p);
                    match device {
                        Device::Cpu => assert_eq!(p.total_board(), 0),
                        Device::Fpga => assert_eq!(p.total_cpu(), 0),
                        Device::Hybrid => {}
                    }
                }
            }
        }
    }

    #[test]
    fn hybrid_splits_by_speed() {
        // 22000 images on 8 nodes x 4 boards, boards 20x a core: each node has 2750,
        // 2750 / 81 = 33.95 on the CPU, 679 on each board.
        let p = Plan::new(22000, 8, 1, 4, Device::Hybrid, 20.0).unwrap();
        assert_eq!(p.cpu_share(0).count, 33);
        assert!((679..=680).contains(&p.board_share(3, 2).count));
        assert_eq!(p.max_board_share(), 680);
        assert_eq!(p.leader(3), 3);
        let q = Plan::new(100, 2, 3, 1, Device::Hybrid, 1.0).unwrap();
        assert_eq!(q.leader(1), 3);
        assert!(Plan::new(10, 1, 1, 1, Device::Hybrid, 0.0).is_err());
    }
}
