/*
 * kernels.h - element-wise reduction kernels for every predefined MPI op.
 *
 * Pure code: no MPI calls, so Check tests them directly.  The MPI-facing
 * lookup (MPI_Datatype / MPI_Op handle -> the enums below) lives in dtype.c.
 *
 * A kernel computes inout[i] = in[i] OP inout[i] for i in [0, count).
 * The buffers must not overlap (the pointers are restrict) and must be
 * aligned for the element type; with count 0 no memory is touched.
 * Every predefined op is commutative on ordinary values (MINLOC/MAXLOC ties
 * take the smaller index); argument order shows only with NaN, or -0.0
 * against +0.0, where the kernels follow Open MPI's base component.
 */
#ifndef SAMPI_KERNELS_H
#define SAMPI_KERNELS_H

#include <stddef.h>

/* Element representations the kernels operate on. */
enum sampi_elem {
    SAMPI_ELEM_I8,
    SAMPI_ELEM_U8,
    SAMPI_ELEM_I16,
    SAMPI_ELEM_U16,
    SAMPI_ELEM_I32,
    SAMPI_ELEM_U32,
    SAMPI_ELEM_I64,
    SAMPI_ELEM_U64,
    SAMPI_ELEM_BOOL, /* C _Bool */
    SAMPI_ELEM_F32,
    SAMPI_ELEM_F64,
    SAMPI_ELEM_LDBL,
    SAMPI_ELEM_C32,   /* float _Complex */
    SAMPI_ELEM_C64,   /* double _Complex */
    SAMPI_ELEM_CLDBL, /* long double _Complex */
    /* value/index pairs for MINLOC and MAXLOC, laid out as the C structs
     * { value; index; } with the platform's natural alignment */
    SAMPI_ELEM_PAIR_FLOAT_INT,
    SAMPI_ELEM_PAIR_DOUBLE_INT,
    SAMPI_ELEM_PAIR_LONG_INT,
    SAMPI_ELEM_PAIR_INT_INT,
    SAMPI_ELEM_PAIR_SHORT_INT,
    SAMPI_ELEM_PAIR_LDBL_INT,
    SAMPI_ELEM_PAIR_FLOAT_FLOAT,   /* MPI_2REAL */
    SAMPI_ELEM_PAIR_DOUBLE_DOUBLE, /* MPI_2DOUBLE_PRECISION */
    SAMPI_ELEM__COUNT
};

enum sampi_op {
    SAMPI_OP_SUM,
    SAMPI_OP_PROD,
    SAMPI_OP_MIN,
    SAMPI_OP_MAX,
    SAMPI_OP_LAND,
    SAMPI_OP_LOR,
    SAMPI_OP_LXOR,
    SAMPI_OP_BAND,
    SAMPI_OP_BOR,
    SAMPI_OP_BXOR,
    SAMPI_OP_MINLOC,
    SAMPI_OP_MAXLOC,
    SAMPI_OP__COUNT
};

typedef void (*sampi_reduce_fn)(void *restrict inout, const void *restrict in, size_t count);

/* The kernel for (op, elem), or NULL when the combination is not provided
 * (the caller then falls back to PMPI_Allreduce). */
sampi_reduce_fn sampi_reduce_fn_get(enum sampi_op op, enum sampi_elem elem);

/* Size in bytes of one element of `elem` (its C struct size for pairs). */
size_t sampi_elem_size(enum sampi_elem elem);

const char *sampi_op_name(enum sampi_op op);
const char *sampi_elem_name(enum sampi_elem elem);

#endif
