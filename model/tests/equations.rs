//! Unit tests of the model's equations and of the one packet search, against values
//! worked by hand (the worked example of `docs/model.md` among them).

use netsim::Cost;
use shmemplus_model::*;

const MIB: u64 = 1 << 20;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-9)
}

#[test]
fn packets_rounds_up_and_handles_no_packetization() {
    assert_eq!(packets(16 * MIB, 2 * MIB), 8);
    assert_eq!(packets(16 * MIB + 1, 2 * MIB), 9);
    assert_eq!(packets(1, 1), 1);
    assert_eq!(packets(5 * MIB, 0), 1);
    assert_eq!(packets(5 * MIB, 5 * MIB), 1);
    assert_eq!(packets(5 * MIB, 64 * MIB), 1);
    assert_eq!(packets(0, 4096), 0);
    assert_eq!(packets(0, 0), 0);
}

#[test]
fn worked_example_two_stage() {
    // docs/model.md: 4.45 + 7 * 8 + 8 = 68.45 ms, 16 MiB / 68.45 ms = 245.1 MB/s.
    let e = pipeline(16 * MIB, 2 * MIB, &[3e-3, 1.45e-3, 8e-3], Stages::Two).unwrap();
    assert_eq!(e.packets, 8);
    assert!(close(e.time_s, 68.45e-3), "{}", e.time_s);
    assert!(close(e.bandwidth_bps, 16_777_216.0 / 68.45e-3));
    assert_eq!(format!("{:.1}", e.bandwidth_bps / 1e6), "245.1");
}

#[test]
fn worked_example_three_stage() {
    // sum = 3 + 1.45 + 8 = 12.45 ms; max = 8 ms; 12.45 + 7 * 8 = 68.45 ms. The same
    // as 4-15 here because t3 dominates both t1 + t2 and every single step.
    let e = pipeline(16 * MIB, 2 * MIB, &[3e-3, 1.45e-3, 8e-3], Stages::Three).unwrap();
    assert_eq!(e.packets, 8);
    assert!(close(e.time_s, 68.45e-3), "{}", e.time_s);
}

#[test]
fn two_and_three_stage_differ_when_the_source_dominates() {
    // t1 + t2 = 6 > t3 = 4, max single step 5: two-stage 6 + 3 * 6 + 4 = 28;
    // three-stage 10 + 3 * 5 = 25.
    let steps = [5.0, 1.0, 4.0];
    let two = pipeline(4, 1, &steps, Stages::Two).unwrap();
    let three = pipeline(4, 1, &steps, Stages::Three).unwrap();
    assert!(close(two.time_s, 28.0));
    assert!(close(three.time_s, 25.0));
    assert!(close(two.bandwidth_bps, 4.0 / 28.0));
}

#[test]
fn one_packet_is_the_sum_of_the_steps() {
    for p in [0, 16 * MIB, 32 * MIB] {
        for stages in [Stages::Two, Stages::Three] {
            let e = pipeline(16 * MIB, p, &[3e-3, 1.45e-3, 8e-3], stages).unwrap();
            assert_eq!(e.packets, 1);
            assert!(close(e.time_s, 12.45e-3), "{p} {stages}: {}", e.time_s);
        }
    }
}

#[test]
fn k_stage_form_takes_any_number_of_steps() {
    let e = pipeline(10, 2, &[1.0, 3.0], Stages::Three).unwrap();
    assert!(close(e.time_s, 4.0 + 4.0 * 3.0)); // 5 packets
    let e = pipeline(10, 2, &[2.0], Stages::Three).unwrap();
    assert!(close(e.time_s, 10.0));
}

#[test]
fn pipeline_rejects_bad_steps() {
    assert_eq!(
        pipeline(10, 2, &[1.0, 2.0], Stages::Two),
        Err(ModelError::WrongStepCount(2))
    );
    assert_eq!(
        pipeline(10, 2, &[1.0; 4], Stages::Two),
        Err(ModelError::WrongStepCount(4))
    );
    assert_eq!(
        pipeline(10, 2, &[], Stages::Three),
        Err(ModelError::NoSteps)
    );
    let e = pipeline(10, 2, &[1.0, -1.0, 1.0], Stages::Two).unwrap_err();
    assert!(e.to_string().contains("non-negative"), "{e}");
    assert!(pipeline(10, 2, &[f64::NAN], Stages::Three).is_err());
}

#[test]
fn zero_bytes_take_no_time() {
    let e = pipeline(0, 4096, &[1.0, 1.0, 1.0], Stages::Two).unwrap();
    assert_eq!((e.packets, e.time_s, e.bandwidth_bps), (0, 0.0, 0.0));
}

#[test]
fn free_steps_give_infinite_bandwidth() {
    let e = pipeline(10, 0, &[0.0, 0.0, 0.0], Stages::Two).unwrap();
    assert_eq!(e.time_s, 0.0);
    assert!(e.bandwidth_bps.is_infinite());
}

#[test]
fn pipeline_from_costs_uses_min_of_packet_and_size() {
    let table = Cost::Table {
        points: vec![(MIB, 2e-3), (2 * MIB, 3e-3)],
    };
    let net = Cost::LogGp {
        latency: 0.0,
        overhead: 0.0,
        gap: 0.0,
        bandwidth: 2.0 * MIB as f64 / 1.45e-3,
    };
    let write = Cost::Table {
        points: vec![(MIB, 4.99e-3), (2 * MIB, 8e-3)],
    };
    // The worked example again, from costs.
    let e = pipeline_from_costs(16 * MIB, 2 * MIB, &[&table, &net, &write], Stages::Two).unwrap();
    assert_eq!(e.packets, 8);
    assert!(close(e.time_s, 68.45e-3), "{}", e.time_s);
    // P > D: every step costed at D = 1 MiB; one packet.
    let e = pipeline_from_costs(MIB, 4 * MIB, &[&table, &net, &write], Stages::Two).unwrap();
    assert_eq!(e.packets, 1);
    assert!(close(e.time_s, 2e-3 + 0.725e-3 + 4.99e-3), "{}", e.time_s);
    // P = 0: no packetization, same thing.
    let e0 = pipeline_from_costs(MIB, 0, &[&table, &net, &write], Stages::Three).unwrap();
    assert!(close(e0.time_s, e.time_s));
}

#[test]
fn candidates() {
    let c = candidate_packets(16 * MIB);
    assert_eq!(c.len(), 13); // 4K .. 8M, then 0
    assert_eq!(c[0], 4096);
    assert_eq!(c[11], 8 * MIB);
    assert_eq!(c[12], 0);
    assert_eq!(candidate_packets(0), vec![0]);
    assert_eq!(candidate_packets(4097), vec![4096, 0]);
    assert_eq!(*candidate_packets(u64::MAX).iter().max().unwrap(), 1 << 63);
}

fn linear(a: f64, b: f64) -> Cost {
    Cost::LogGp {
        latency: a,
        overhead: 0.0,
        gap: 0.0,
        bandwidth: 1.0 / b,
    }
}

#[test]
fn best_packet_middle_wins() {
    // Three equal steps a + b P: T = (D/P + 2)(a + b P) = D a / P + D b + 2 a + 2 b P,
    // least at P = sqrt(D a / (2 b)). D = 1 MiB, a / b = 2048 B: P = 32 KiB, where
    // D a / P + 2 b P = (65536 + 65536) ns against 163840 ns at 16 KiB and 64 KiB.
    let c = linear(2048e-9, 1e-9);
    let (best, all) = best_packet(MIB, &[&c, &c, &c], Stages::Three).unwrap();
    assert_eq!(best, 32 << 10);
    assert_eq!(all.len(), 9);
    let at = |p: u64| all.iter().find(|(q, _)| *q == p).unwrap().1;
    let want = (MIB as f64 + 4096.0 + 131_072.0) * 1e-9;
    assert!(
        (at(32 << 10).time_s - want).abs() < 1e-12,
        "{}",
        at(32 << 10).time_s
    );
    assert_eq!(at(32 << 10).packets, 32);
    let neighbour = (MIB as f64 + 4096.0 + 163_840.0) * 1e-9;
    assert!((at(16 << 10).time_s - neighbour).abs() < 1e-12);
    assert!((at(64 << 10).time_s - neighbour).abs() < 1e-12);
    // No packetization: 3 (a + b D).
    assert!((at(0).time_s - 3.0 * (2048.0 + MIB as f64) * 1e-9).abs() < 1e-12);
    assert_eq!(at(0).packets, 1);
}

#[test]
fn best_packet_no_packetization_wins() {
    // One second per message: any split pays at least one more latency.
    let c = linear(1.0, 1e-9);
    let (best, all) = best_packet(MIB, &[&c, &c, &c], Stages::Two).unwrap();
    assert_eq!(best, 0);
    let min = all
        .iter()
        .map(|(_, e)| e.time_s)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(all.last().unwrap().1.time_s, min);
}

#[test]
fn best_packet_ties_go_to_fewer_packets() {
    let (best, _) = best_packet_with(MIB, Stages::Three, |_| vec![0.0; 3]).unwrap();
    assert_eq!(best, 0);
}

#[test]
fn best_packet_propagates_errors() {
    let c = linear(1.0, 1e-9);
    assert_eq!(
        best_packet(MIB, &[&c, &c], Stages::Two),
        Err(ModelError::WrongStepCount(2))
    );
}

#[test]
fn choose_packet_needs_the_margin_to_take_more_packets() {
    // 16 KiB: candidates 4K, 8K, then 0. 8K is 0.05% faster than none (within the
    // margin): none stays; 4K is 1% faster than none: it wins.
    let times = |t4: f64| {
        move |p: u64| {
            Ok::<f64, ()>(match p {
                0 => 1.0,
                0x2000 => 0.9995,
                0x1000 => t4,
                _ => unreachable!("not a candidate: {p}"),
            })
        }
    };
    assert_eq!(choose_packet(16 << 10, times(0.99)).unwrap().0, 4 << 10);
    assert_eq!(choose_packet(16 << 10, times(0.9992)).unwrap().0, 0);
    let (_, all) = choose_packet(16 << 10, times(0.5)).unwrap();
    assert_eq!(all, vec![(4 << 10, 0.5), (8 << 10, 0.9995), (0, 1.0)]);
}

#[test]
fn choose_packet_never_picks_nan_and_stops_at_an_error() {
    let (best, _) = choose_packet(16 << 10, |p| {
        Ok::<f64, ()>(if p == 0 { f64::NAN } else { 1.0 })
    })
    .unwrap();
    assert_eq!(best, 8 << 10, "the fewest packets with a number");
    let (best, _) = choose_packet(16 << 10, |p| {
        Ok::<f64, ()>(if p == 0 { 1.0 } else { f64::NAN })
    })
    .unwrap();
    assert_eq!(best, 0);
    let mut calls = 0;
    let r = choose_packet(1 << 20, |p| {
        calls += 1;
        if p == 16 << 10 {
            Err("measurement failed")
        } else {
            Ok(1.0)
        }
    });
    assert_eq!(r, Err("measurement failed"));
    assert_eq!(calls, 3, "4K, 8K, then the failing 16K");
}

#[test]
fn no_candidate_below_the_minimum() {
    for d in [0, 1, MIN_PACKET, MIN_PACKET + 1, 64 * MIB, u64::MAX] {
        let c = candidate_packets(d);
        assert_eq!(c.last(), Some(&0));
        assert!(c[..c.len() - 1].iter().all(|&p| p >= MIN_PACKET && p < d));
    }
}

#[test]
fn route_time_sums() {
    assert!(close(route_time(&[1.0, 2.5, 0.5]), 4.0));
}

#[test]
fn gather_all_approaches_n16() {
    // n = 16, Tr = 2 ms, Tn = 0.5 ms, Tn' = 1.5 ms (made up), by hand:
    let (tr, tn, tn2) = (2e-3, 0.5e-3, Some(1.5e-3));
    let cases = [
        (GatherApproach::OneGetEach, 1, 39.5e-3),  // 15 * 2.5 + 2
        (GatherApproach::OneGetEach, 4, 158.0e-3), // 4 * 39.5
        (GatherApproach::PutFromEachBoard, 1, 9.5e-3), // 2 + 15 * 0.5
        (GatherApproach::PutFromEachBoard, 4, 38.0e-3), // 4 * 9.5
        (GatherApproach::CollectThenPut, 1, 9.5e-3), // 2 + 15 * 0.5
        (GatherApproach::CollectThenPut, 4, 30.5e-3), // 4 * 2 + 15 * 1.5
    ];
    for (a, boards, want) in cases {
        let t = gather(a, 16, boards, tr, tn, tn2).unwrap();
        assert!(close(t, want), "{a:?} x{boards}: {t} != {want}");
    }
    // Tn' is used only by approach 3 with four boards.
    let t = gather(GatherApproach::CollectThenPut, 16, 1, tr, tn, None).unwrap();
    assert!(close(t, 9.5e-3));
    // One node: only the reads.
    let t = gather(GatherApproach::OneGetEach, 1, 4, tr, tn, None).unwrap();
    assert!(close(t, 8e-3));
}

#[test]
fn gather_errors() {
    let g = |a, n, b, tn2| gather(a, n, b, 1e-3, 1e-3, tn2);
    assert_eq!(
        g(GatherApproach::OneGetEach, 16, 2, None),
        Err(ModelError::BoardsPerNode(2))
    );
    assert_eq!(
        g(GatherApproach::OneGetEach, 0, 1, None),
        Err(ModelError::NoNodes)
    );
    assert_eq!(
        g(GatherApproach::CollectThenPut, 16, 4, None),
        Err(ModelError::MissingCombinedNet)
    );
    assert!(gather(GatherApproach::OneGetEach, 2, 1, -1.0, 0.0, None).is_err());
    assert!(g(GatherApproach::CollectThenPut, 2, 4, Some(f64::NAN)).is_err());
    assert_eq!(GatherApproach::from_number(0), None);
    for n in 1..=3 {
        assert_eq!(GatherApproach::from_number(n).unwrap().number(), n);
    }
}

#[test]
fn kernel() {
    // 100 / 100 MHz = 1 us; 1e6 * 2 / (100 MHz * 4) = 5 ms.
    let t = kernel_time(100.0, 100e6, 1_000_000, 2.0, 4.0).unwrap();
    assert!(close(t, 5.001e-3), "{t}");
    // No elements: just the pipeline latency.
    assert!(close(kernel_time(250.0, 125e6, 0, 8.0, 1.0).unwrap(), 2e-6));
    assert!(kernel_time(1.0, 0.0, 1, 1.0, 1.0).is_err());
    assert!(kernel_time(1.0, 1e6, 1, 1.0, 0.0).is_err());
    assert!(kernel_time(-1.0, 1e6, 1, 1.0, 1.0).is_err());
}

#[test]
fn fastfit_chunk() {
    // a = 10 us, b = 1 ns/B (1 GB/s), rho = 0.9: 1e4 * 9 = 90 000 B, and such a
    // chunk indeed runs at 90 000 B / (10 us + 90 us) = 0.9 GB/s.
    let k = chunk_for_fraction(10e-6, 1e-9, 0.9).unwrap();
    assert!((k - 90_000.0).abs() < 1e-6);
    assert!(close(k / (10e-6 + k * 1e-9), 0.9e9));
    assert_eq!(chunk_for_fraction(10e-6, 1e-9, 0.0).unwrap(), 0.0);
    assert_eq!(
        chunk_for_fraction(10e-6, 1e-9, 1.0),
        Err(ModelError::BadFraction(1.0))
    );
    assert!(chunk_for_fraction(10e-6, 0.0, 0.5).is_err());
}

#[test]
fn error_messages() {
    assert_eq!(
        ModelError::WrongStepCount(2).to_string(),
        "the two-stage form (4-15) needs exactly 3 step times (t1, t2, t3), got 2"
    );
    assert!(ModelError::MissingCombinedNet.to_string().contains("Tn'"));
    assert_eq!(Stages::Two.to_string(), "2-stage (4-15)");
}
