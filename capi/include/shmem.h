/* shmem.h: the OpenSHMEM 1.5 C and C++ interface of shmemplus.
 *
 * Compile with `shmemcc` (C) or `shmemc++` (C++), which find this header and the
 * library; run with `shmemrun -n N ./program`. The routines live in libshmemplus; the
 * headers under shmemplus/ declare them family by family. shmemx.h adds the
 * multilevel address space (FPGA boards). */
#ifndef SHMEM_H
#define SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "shmemplus/constants.h"
#include "shmemplus/types.h"
#include "shmemplus/setup.h"
#include "shmemplus/rma.h"
#include "shmemplus/amo.h"
#include "shmemplus/sync.h"
#include "shmemplus/teams.h"
#include "shmemplus/coll.h"
#include "shmemplus/longdouble.h"

#endif /* SHMEM_H */
