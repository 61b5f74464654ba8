//! `add-one`: the SHMEM+ multi-FPGA example. PE 0 puts input data into board 0 of every
//! node, local and remote, with the same call; the first PE of each node starts the
//! add-one kernel on its board; PE 0 gets the results back and verifies them.
//!
//! ```text
//! shmemrun -n 4 --fpgas 1 target/release/add-one [ELEMENTS]
//! shmemrun --profile novo-g -n 4 target/release/add-one
//! ```

use shmemplus::fpga_mock::kernels::standard_bitfile;
use shmemplus::{Error, Place};

fn main() {
    if let Err(e) = run() {
        shmemplus::stderr_line(format_args!("add-one: {e}"));
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let err = |e: Error| e.to_string();
    let elements: usize = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|_| format!("'{a}' is not a number of elements"))?,
        None => 4096,
    };
    let shmem = shmemplus::init().map_err(err)?;
    let me = shmem.my_pe();
    let topo = shmem.topology();
    if shmem.fpgas() == 0 {
        return Err(err(Error::NoBoards));
    }
    let leaders: Vec<u32> = (0..topo.nodes).map(|k| k * topo.pes_per_node).collect();
    let data = shmem.alloc::<u32>(elements, Place::Fpga(0)).map_err(err)?;
    let is_leader = leaders.contains(&me);
    if is_leader {
        shmem.fpga_configure(0, standard_bitfile()).map_err(err)?;
    }
    shmem.barrier_all().map_err(err)?;

    let input =
        |node: u32| -> Vec<u32> { (0..elements as u32).map(|i| node * 1_000_000 + i).collect() };
    if me == 0 {
        for (node, &pe) in leaders.iter().enumerate() {
            // The same call whether the board is local (node 0) or remote.
            shmem.put(&data, 0, &input(node as u32), pe).map_err(err)?;
            println!("PE 0 put {elements} values into board 0 of node {node} (PE {pe})");
        }
    }
    shmem.barrier_all().map_err(err)?;

    if is_leader {
        let args = [data.heap_offset() as u64, elements as u64];
        let run = shmem.fpga_start(0, "add-one", &args).map_err(err)?;
        let done = run
            .wait()
            .map_err(|source| Error::Board { board: 0, source })
            .map_err(err)?;
        println!(
            "PE {me} ran add-one on board 0 of node {}: {} elements, modeled {:.1} us, DONE after {:.1} us",
            shmem.node(),
            done.elements,
            done.modeled_s * 1e6,
            done.elapsed_s * 1e6
        );
    }
    shmem.barrier_all().map_err(err)?;

    if me == 0 {
        let mut out = vec![0u32; elements];
        let mut bad = 0;
        for (node, &pe) in leaders.iter().enumerate() {
            shmem.get(&data, 0, &mut out, pe).map_err(err)?;
            let want = input(node as u32);
            bad += out
                .iter()
                .zip(&want)
                .filter(|(o, w)| **o != w.wrapping_add(1))
                .count();
        }
        println!("PE 0 got the results back from {} boards", leaders.len());
        if bad != 0 {
            return Err(format!("{bad} results are wrong"));
        }
        println!("verified");
    }
    shmem.free(data).map_err(err)?;
    shmem.finalize().map_err(err)
}
