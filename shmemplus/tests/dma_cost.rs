//! One source of truth for DMA time: the cluster profile's `fpga_read` / `fpga_write`
//! costs. The library's emulation charges a board DMA hop with that cost on the span
//! the board's DMA engine really moves, and the model predicts with the same cost; the
//! mock board holds no cost of its own. If a second DMA cost path ever appeared in the
//! emulation (or the emulation stopped charging the board's span), these figures would
//! part.
//!
//! The program runs as a one-PE job (no launcher) on the `novo-g` profile, whose DMA
//! hops are tables of measurements, so that a different size or a different cost gives
//! a different time.

use shmemplus::model::{pipeline_from_costs, Stages};
use shmemplus::{PacketPolicy, Place, RmaOp};

#[test]
fn emulated_dma_time_is_the_profile_cost_the_model_predicts_with() {
    // Set before init reads them; this file holds the only test of its process.
    std::env::set_var("SHMEMPLUS_PROFILE", "novo-g");
    std::env::set_var("SHMEM_SYMMETRIC_SIZE", (4 << 20).to_string());
    std::env::set_var("SHMEMPLUS_TUNE", "off");
    std::env::remove_var("SHMEMPLUS_FPGAS");
    let shmem = shmemplus::init().expect("a one-PE job starts");
    // One packet: the route's time is its one DMA hop, not a pipeline of packets.
    shmem.set_packet_policy(PacketPolicy::Off);
    let me = shmem.my_pe();
    let profile = shmem.profile().clone();
    let read = profile
        .fpga_read
        .as_ref()
        .expect("novo-g costs board reads");
    let write = profile
        .fpga_write
        .as_ref()
        .expect("novo-g costs board writes");
    let align = profile
        .topology
        .dma_align
        .max(profile.topology.dma_min_bytes);
    let ns = 1e-9; // the timelines count whole nanoseconds
    for bytes in [1usize, 1000, 4096, 100_000, 1 << 20, 3 << 20] {
        // The span the engine moves: whole aligned blocks, at least the minimum.
        let span = (bytes as u64).div_ceil(align) * align;
        // CPU -> this PE's own board is one DMA write, and a get from it one DMA
        // read: the network hops are free within a node.
        for (op, cost) in [(RmaOp::Put, write), (RmaOp::Get, read)] {
            let emulated = shmem
                .modeled_route_seconds(op, Some(Place::Cpu), Place::Fpga(0), me, bytes)
                .expect("a route")
                .expect("novo-g is emulated");
            let predicted = pipeline_from_costs(span, 0, &[cost], Stages::Three)
                .expect("the model evaluates")
                .time_s;
            assert!(
                (emulated - predicted).abs() <= 2.0 * ns,
                "{bytes} B {op:?}: emulation {emulated} s, model {predicted} s"
            );
        }
        // The span, not the request, is what is charged: 1000 B move as 1024, and
        // the table (interpolated between its measured points) costs them differently.
        if bytes == 1000 {
            assert_eq!(span, 1024);
            assert!(write.time(span) > write.time(1000));
        }
    }
}
