//! The RMA route measurements of `shmemplus bench`: per route and size, put + quiet
//! and get latency, put/get/memcpy bandwidth windows and their ratios, printed as one
//! table per route (PE 0 measuring against the route's far side).
//!
//! Owns the symmetric objects and private buffers the routes move data between, the
//! size list and the route table's header and rows. It must not launch jobs, parse
//! `--routes` (see [`super::route`]) or write the JSON file (see [`super::report`]).

use super::report::{deviation, Record, RecordFn};
use super::route::Route;
use super::stats::{counting_cpu, median, time_per_op, Stopwatch};
use super::BenchOptions;
use shmemplus::{Place, RmaOp};
use std::hint::black_box;

/// Measures `routes` (PE 0 only; the other PEs wait in the closing barrier) and frees
/// the objects it allocated. Every PE calls this.
pub(super) fn measure_routes(
    shmem: &shmemplus::Shmem,
    routes: &[Route],
    opts: &BenchOptions,
    reps: usize,
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let me = shmem.my_pe();
    let mut records = Vec::new();
    let max = opts.max_size;
    let needs_boards = routes.iter().any(|r| r.needs_boards());
    if needs_boards && shmem.fpgas() == 0 {
        return Err(err(shmemplus::Error::NoBoards));
    }
    let objs = Objects {
        cpu: shmem.alloc::<u8>(max, Place::Cpu).map_err(err)?,
        fpga: if needs_boards {
            let second = shmem.fpgas().min(2) - 1;
            vec![
                shmem.alloc::<u8>(max, Place::Fpga(0)).map_err(err)?,
                shmem.alloc::<u8>(max, Place::Fpga(second)).map_err(err)?,
            ]
        } else {
            Vec::new()
        },
    };
    // The largest transfer from `misalign` bytes into a page-aligned buffer, with a
    // page to spare.
    let private = max
        .checked_add(usize::from(opts.misalign) + 4096)
        .ok_or_else(|| format!("--max-size {max} leaves no room for a private buffer"))?;
    let mut bufs = (AlignedBuf::new(private)?, AlignedBuf::new(private)?);
    if me == 0 {
        for &route in routes {
            records.extend(measure_route(
                shmem, route, &objs, opts, reps, &mut bufs, record,
            )?);
        }
    }
    shmem.barrier_all().map_err(err)?;
    for o in objs.fpga {
        shmem.free(o).map_err(err)?;
    }
    shmem.free(objs.cpu).map_err(err)?;
    Ok(records)
}

/// A page-aligned private buffer (so put and memcpy see the same alignment the user
/// asked for with `--misalign`).
pub(super) struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    pub(super) fn new(bytes: usize) -> Result<AlignedBuf, String> {
        let layout = std::alloc::Layout::from_size_align(bytes.max(1), 4096)
            .map_err(|e| format!("a private buffer of {bytes} bytes: {e}"))?;
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Ok(AlignedBuf { ptr, layout })
    }

    pub(super) fn slice(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off
            .checked_add(len)
            .is_some_and(|end| end <= self.layout.size()));
        // SAFETY: in bounds (asserted), initialised (alloc_zeroed), exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(off), len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

pub(super) fn sizes(o: &BenchOptions) -> Vec<usize> {
    let mut v = Vec::new();
    let mut s = o.min_size.max(1);
    while s <= o.max_size {
        v.push(s);
        // Past usize::MAX there is no next size: the list ends (never wraps to 0).
        match s.checked_mul(if o.quick { 8 } else { 2 }) {
            Some(next) => s = next,
            None => break,
        }
    }
    v
}

/// Calls per timed batch for a transfer of `bytes`: enough to last well above the
/// clock's resolution, few enough to keep the run short.
pub(super) fn batch_for(bytes: usize, quick: bool) -> usize {
    let target = if quick { 256 << 10 } else { 4 << 20 };
    (target / bytes.max(1)).clamp(1, if quick { 200 } else { 2000 })
}

/// The symmetric objects the routes move data between.
pub(super) struct Objects {
    cpu: shmemplus::SymVec<u8>,
    /// Objects on board 0 and board 1 (board 0 twice on one-board nodes).
    fpga: Vec<shmemplus::SymVec<u8>>,
}

impl Objects {
    pub(super) fn of(&self, place: Place) -> &shmemplus::SymVec<u8> {
        match place {
            Place::Cpu => &self.cpu,
            Place::Fpga(b) => &self.fpga[(b as usize).min(self.fpga.len() - 1)],
        }
    }
}

/// Measures one route at every size (PE 0 only) and prints its table.
#[allow(clippy::too_many_arguments)]
pub(super) fn measure_route(
    shmem: &shmemplus::Shmem,
    route: Route,
    objs: &Objects,
    opts: &BenchOptions,
    reps: usize,
    (src_buf, get_buf): &mut (AlignedBuf, AlignedBuf),
    record: &RecordFn<'_>,
) -> Result<Vec<Record>, String> {
    let err = |e: shmemplus::Error| e.to_string();
    let me = shmem.my_pe();
    let (put_local, get_local, remote, pe) = route.shape(me);
    let remote_obj = objs.of(remote);
    let model = |op, local: Option<Place>, bytes| {
        shmem
            .modeled_route_seconds(op, local, remote, pe, bytes)
            .ok()
            .flatten()
    };
    // One put and one get of `bytes` on this route.
    let put = |src: &[u8]| -> shmemplus::Result<()> {
        match put_local {
            None => shmem.put(remote_obj, 0, src, pe),
            Some(l) => shmem.put_from(remote_obj, 0, objs.of(l), 0, src.len(), pe),
        }
    };
    let get = |dst: &mut [u8]| -> shmemplus::Result<()> {
        match get_local {
            None => shmem.get(remote_obj, 0, dst, pe),
            Some(l) => shmem.get_into(objs.of(l), 0, remote_obj, 0, dst.len(), pe),
        }
    };
    let has_model = model(RmaOp::Put, put_local, 8).is_some();
    print_header(route, shmem, opts, has_model);
    let sizes = sizes(opts);
    let bar = progress_bar(sizes.len());
    let mut out = Vec::new();
    // SAFETY: nothing else touches PE 0's copy of the CPU object during the run (the
    // other PEs wait in a barrier, and no route writes PE 0's CPU copy).
    let local = unsafe { shmem.local_slice_mut(&objs.cpu) }.map_err(err)?;
    for &bytes in &sizes {
        let src = src_buf.slice(usize::from(opts.misalign), bytes);
        src.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
        let src: &[u8] = src;
        let dst = get_buf.slice(usize::from(opts.misalign), bytes);
        let batch = batch_for(bytes, opts.quick);
        let window = batch.clamp(1, 64);
        let put_lat = time_per_op(shmem, reps, batch, || {
            put(src)?;
            shmem.quiet()
        })
        .map_err(err)?;
        let get_lat = time_per_op(shmem, reps, batch, || get(dst)).map_err(err)?;
        // Bandwidth: put, get and memcpy windows interleaved within each repetition,
        // so that the ratios compare figures taken moments apart on a noisy machine.
        // Each window runs twice, untimed then timed, so every operation is measured
        // in its own steady state, not in the state the previous one left behind.
        let twice = |f: &mut dyn FnMut() -> shmemplus::Result<()>| -> shmemplus::Result<f64> {
            f()?;
            let t = Stopwatch::start(shmem);
            f()?;
            Ok(t.secs())
        };
        let (mut put_s, mut get_s, mut mc_s) = (Vec::new(), Vec::new(), Vec::new());
        let (mut put_r, mut get_r) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            let put_t = twice(&mut || {
                for _ in 0..window {
                    put(src)?;
                }
                shmem.quiet()
            })
            .map_err(err)?;
            let get_t = twice(&mut || {
                for _ in 0..window {
                    get(dst)?;
                }
                Ok(())
            })
            .map_err(err)?;
            // The memcpy reference is computation: on the virtual clock, its CPU time
            // scaled by the profile's CPU speed.
            let mc_t = counting_cpu(shmem, || {
                twice(&mut || {
                    for _ in 0..window {
                        local[..bytes].copy_from_slice(black_box(src));
                        black_box(&mut local[..bytes]);
                    }
                    Ok(())
                })
            })
            .map_err(err)?;
            put_s.push(put_t);
            get_s.push(get_t);
            mc_s.push(mc_t);
            put_r.push(mc_t / put_t);
            get_r.push(mc_t / get_t);
        }
        let bw = |secs: f64| (window * bytes) as f64 / secs;
        let (put_bw, get_bw, mem_bw) = (
            bw(median(&mut put_s)),
            bw(median(&mut get_s)),
            bw(median(&mut mc_s)),
        );
        let (put_ratio, get_ratio) = (median(&mut put_r), median(&mut get_r));
        let (put_model, get_model) = (
            model(RmaOp::Put, put_local, bytes),
            model(RmaOp::Get, get_local, bytes),
        );
        let name = route.name();
        out.push(record(
            name,
            "put",
            bytes,
            put_lat,
            put_bw,
            Some(put_ratio),
            put_model,
        ));
        out.push(record(
            name,
            "get",
            bytes,
            get_lat,
            get_bw,
            Some(get_ratio),
            get_model,
        ));
        out.push(record(
            name,
            "memcpy",
            bytes,
            (window * bytes) as f64 / mem_bw / window as f64,
            mem_bw,
            Some(1.0),
            None,
        ));
        let mut line = format!(
            "{:>10} {:>11.3} {:>11.3} {:>11.0} {:>11.0} {:>11.0} {:>7.2} {:>7.2}",
            crate::info::human_bytes(bytes as u64),
            put_lat * 1e6,
            get_lat * 1e6,
            put_bw / 1e6,
            get_bw / 1e6,
            mem_bw / 1e6,
            put_ratio,
            get_ratio
        );
        if let (Some(pm), Some(gm)) = (put_model, get_model) {
            line += &format!(
                " {:>11.3} {:>+7.1} {:>11.3} {:>+7.1}",
                pm * 1e6,
                deviation(put_lat, pm),
                gm * 1e6,
                deviation(get_lat, gm)
            );
        }
        bar.suspend(|| println!("{line}"));
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(out)
}

pub(super) fn print_header(route: Route, shmem: &shmemplus::Shmem, o: &BenchOptions, model: bool) {
    let (put_local, _, remote, pe) = route.shape(shmem.my_pe());
    let from = put_local.map_or("host buffer".to_string(), |p| p.to_string());
    println!(
        "shmemplus bench: route {} (PE 0 {from} -> PE {pe} {remote}), {} PEs, conduit {}, profile {}, {} clock, source misaligned by {} B; medians",
        route.name(),
        shmem.n_pes(),
        shmem.config().conduit.name(),
        shmem.profile().name,
        shmem.clock().name(),
        o.misalign
    );
    let mut head = format!(
        "{:>10} {:>11} {:>11} {:>11} {:>11} {:>11} {:>7} {:>7}",
        "bytes", "put+q us", "get us", "put MB/s", "get MB/s", "memcpy MB/s", "put/mc", "get/mc"
    );
    if model {
        head += &format!(
            " {:>11} {:>7} {:>11} {:>7}",
            "put model", "put %", "get model", "get %"
        );
    }
    println!("{head}");
}

pub(super) fn progress_bar(len: usize) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(len as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} sizes {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_cover_the_range() {
        let mut o = BenchOptions {
            n_pes: 2,
            nodes: None,
            conduit: "shm".into(),
            ops: vec![],
            min_size: 8,
            max_size: 32 << 20,
            misalign: 0,
            reps: 3,
            quick: false,
            json: None,
            routes: vec!["cpu-cpu".into()],
            profile: None,
            plot: None,
            clock: None,
        };
        let s = sizes(&o);
        assert_eq!((s[0], *s.last().unwrap(), s.len()), (8, 32 << 20, 23));
        o.quick = true;
        assert!(sizes(&o).len() < 10);
        // The largest size the syntax allows: the list ends at the last power of two
        // (no wrap to 0 and no endless loop); the launcher refuses the heap it would
        // need (tested in job.rs).
        o.quick = false;
        o.max_size = usize::MAX;
        let s = sizes(&o);
        assert_eq!((s.len(), *s.last().unwrap()), (61, 1 << 63));
    }
}
