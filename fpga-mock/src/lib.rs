//! `fpga-mock`: mock FPGA boards for shmemplus (board memory, a timed DMA engine,
//! control registers, kernels with GO/DONE).
//!
//! **Status: empty.** The boards arrive with the FPGA issue; this crate exists now so
//! that the workspace has its final layout. It implements nothing yet and claims
//! nothing. When it does, it must stay ignorant of PEs and networks: the library
//! drives it.
