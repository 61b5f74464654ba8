//! Property test: random DMA writes and reads on a small board against a plain
//! `Vec<u8>` reference model (exact bytes, neighbours untouched, spans that cover the
//! request), including out-of-range requests that must change nothing.

use fpga_mock::{Board, BoardConfig, BoardError};
use proptest::prelude::*;

const MEMORY: u64 = 64 * 1024;

#[derive(Debug, Clone)]
enum Op {
    Write { offset: u64, data: Vec<u8> },
    Read { offset: u64, len: usize },
}

/// Offsets cluster near block edges and the memory end, where mistakes live.
fn offset() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..MEMORY,
        (0..MEMORY / 32, 0u64..3).prop_map(|(b, d)| (b * 32 + 31 + d).min(MEMORY)),
        (0u64..80).prop_map(|back| MEMORY - back.min(MEMORY)),
        Just(u64::MAX - 3),
    ]
}

fn len() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..40, 0usize..300, 1000usize..5000]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (offset(), len(), any::<u8>()).prop_map(|(offset, len, seed)| Op::Write {
            offset,
            data: (0..len)
                .map(|i| seed.wrapping_add(i as u8).wrapping_mul(31) | 1)
                .collect(),
        }),
        (offset(), len()).prop_map(|(offset, len)| Op::Read { offset, len }),
    ]
}

fn fits(offset: u64, len: usize) -> bool {
    offset
        .checked_add(len as u64)
        .is_some_and(|end| end <= MEMORY)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn dma_matches_a_reference_model(ops in proptest::collection::vec(op(), 1..60)) {
        let board = Board::new(BoardConfig { memory_bytes: MEMORY, ..BoardConfig::default() })
            .expect("board");
        let mut model = vec![0u8; MEMORY as usize];
        for op in ops {
            match op {
                Op::Write { offset, data } => match board.write(offset, &data) {
                    Ok(span) => {
                        prop_assert!(fits(offset, data.len()));
                        prop_assert_eq!(span.offset % 32, 0);
                        prop_assert_eq!(span.len % 32, 0);
                        prop_assert!(span.end() <= MEMORY);
                        if data.is_empty() {
                            prop_assert_eq!(span.len, 0, "an empty request moves nothing");
                        } else {
                            prop_assert!(span.offset <= offset);
                            prop_assert!(span.end() >= offset + data.len() as u64);
                            prop_assert!(span.len >= 32);
                        }
                        let at = offset as usize;
                        model[at..at + data.len()].copy_from_slice(&data);
                    }
                    Err(e) => {
                        prop_assert!(!fits(offset, data.len()));
                        prop_assert_eq!(e, BoardError::OutOfRange {
                            offset, len: data.len() as u64, memory: MEMORY,
                        });
                    }
                },
                Op::Read { offset, len } => {
                    let mut out = vec![0x5Au8; len];
                    match board.read(offset, &mut out) {
                        Ok(_) => {
                            prop_assert!(fits(offset, len));
                            let at = offset as usize;
                            prop_assert_eq!(&out[..], &model[at..at + len]);
                        }
                        Err(_) => {
                            prop_assert!(!fits(offset, len));
                            prop_assert!(out.iter().all(|&b| b == 0x5A));
                        }
                    }
                }
            }
        }
        // The whole board equals the model: nothing outside the written bytes changed.
        let mut all = vec![0u8; MEMORY as usize];
        board.read(0, &mut all).expect("read all");
        prop_assert!(all == model, "board differs from the model");
    }
}
