/*
 * dtype.h - map MPI's predefined datatype and op handles to the kernel enums.
 *
 * Only predefined handles are recognised; anything else (derived types,
 * user ops) answers "unknown" and the call goes to PMPI_Allreduce.  The
 * datatype's MPI class (C integer, Fortran integer, floating point, logical,
 * complex, byte, pair) decides which ops MPI defines on it: a combination MPI
 * does not define also goes to PMPI_Allreduce, so the user sees Open MPI's own
 * error for it.
 */
#ifndef SAMPI_DTYPE_H
#define SAMPI_DTYPE_H

#include "kernels.h"
#include <mpi.h>

enum sampi_tclass {
    SAMPI_TCLASS_C_INTEGER = 1 << 0,
    SAMPI_TCLASS_F_INTEGER = 1 << 1,
    SAMPI_TCLASS_FLOATING = 1 << 2,
    SAMPI_TCLASS_LOGICAL = 1 << 3,
    SAMPI_TCLASS_COMPLEX = 1 << 4,
    SAMPI_TCLASS_BYTE = 1 << 5,
    SAMPI_TCLASS_PAIR = 1 << 6,
};

struct sampi_dtype_info {
    enum sampi_elem elem;
    enum sampi_tclass tclass;
    size_t extent; /* bytes between consecutive elements in a buffer */
};

/* 0 and *out filled when `dt` is a predefined type SAMPI reduces; -1 otherwise. */
int sampi_dtype_lookup(MPI_Datatype dt, struct sampi_dtype_info *out);
/* The kernel op for a predefined MPI_Op; -1 for anything else. */
int sampi_op_lookup(MPI_Op op);
/* Non-zero when MPI defines `op` on datatypes of class `tclass`. */
int sampi_op_defined_on(enum sampi_op op, enum sampi_tclass tclass);

#endif
