//! One-PE criterion benches (see the crate doc).

use criterion::{criterion_main, BenchmarkId, Criterion, Throughput};
use shmemplus::Place;
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    let shmem = shmemplus::init().expect("one-PE init");
    let me = shmem.my_pe();
    let obj = shmem.alloc::<u8>(1 << 20, Place::Cpu).expect("alloc");

    let mut g = c.benchmark_group("put_quiet");
    for bytes in [8usize, 4096, 1 << 20] {
        let src = vec![1u8; bytes];
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_with_input(BenchmarkId::from_parameter(bytes), &src, |b, src| {
            b.iter(|| {
                shmem.put(&obj, 0, black_box(src), me).unwrap();
                shmem.quiet().unwrap();
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("get");
    for bytes in [8usize, 4096, 1 << 20] {
        let mut dst = vec![0u8; bytes];
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(BenchmarkId::from_parameter(bytes), |b| {
            b.iter(|| shmem.get(&obj, 0, black_box(&mut dst), me).unwrap())
        });
    }
    g.finish();

    c.bench_function("am_echo_8B_self", |b| {
        b.iter(|| black_box(shmem.am_echo(me, &[0u8; 8]).unwrap()))
    });

    c.bench_function("alloc_free_4KiB", |b| {
        b.iter(|| {
            let o = shmem.alloc::<u8>(4096, Place::Cpu).unwrap();
            shmem.free(o).unwrap();
        })
    });

    c.bench_function("barrier_all_1pe", |b| {
        b.iter(|| shmem.barrier_all().unwrap())
    });
}

/// The group `criterion_main!` runs, in a private module: `criterion_group!` defines a
/// public function it cannot document, which `missing_docs` would flag at the crate root.
mod group {
    criterion::criterion_group!(one_pe, super::benches);
}
criterion_main!(group::one_pe);
