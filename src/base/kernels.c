/*
 * kernels.c - element-wise reduction kernels, one per (op, element kind) that
 * MPI defines, found through a static [op][elem] table.
 *
 * Semantics follow Open MPI 4.1's base op component
 * (ompi/mca/op/base/op_base_functions.c) so that an exact algorithm gives the
 * same bits as PMPI_Allreduce would:
 *   - integer SUM/PROD wrap modulo 2^n;
 *   - MIN/MAX are inout = (inout < in) ? inout : in (resp. >), so an unordered
 *     comparison (a NaN on either side) yields `in`, and MIN(-0.0, +0.0)
 *     yields `in` too;
 *   - LAND/LOR/LXOR yield 0 or 1;
 *   - complex PROD is C's `*`, Annex G recovery of infinities included;
 *   - MINLOC/MAXLOC keep the smaller index on equal values, and keep `inout`
 *     when the values are unordered.
 * Open MPI's op/avx component, picked by default on AVX2/AVX-512 machines,
 * departs from this (it saturates 8/16-bit SUM, and its vector loop returns
 * `inout` for a NaN in MIN/MAX while its scalar tail returns `in`); the base
 * component is the one that agrees with the MPI standard and with itself.
 *
 * Every loop is a plain indexed loop over restrict pointers so that GCC
 * vectorises it without -ffast-math (Makefile.am turns the vectoriser on with
 * its dynamic cost model: GCC 12's -O2 default vectorises no loop of unknown
 * trip count).
 */
#include "kernels.h"

#include <stdint.h>

/* The BOOL kernels work on the byte that holds a _Bool, so that a byte other
 * than 0 or 1 arriving from the network is read as "true" instead of being
 * undefined behaviour. */
_Static_assert(sizeof(_Bool) == sizeof(uint8_t), "_Bool must be one byte");

/* Pair layouts: the C structs Open MPI uses for MPI_FLOAT_INT etc. */
#define PAIR_TYPES(X)                                                                              \
    X(float_int, float, int)                                                                       \
    X(double_int, double, int)                                                                     \
    X(long_int, long, int)                                                                         \
    X(int_int, int, int)                                                                           \
    X(short_int, short, int)                                                                       \
    X(ldbl_int, long double, int)                                                                  \
    X(float_float, float, float)                                                                   \
    X(double_double, double, double)

#define PAIR_STRUCT(name, vtype, itype)                                                            \
    struct pair_##name {                                                                           \
        vtype v;                                                                                   \
        itype i;                                                                                   \
    };
PAIR_TYPES(PAIR_STRUCT)

/*
 * One kernel: `x` is in[i], `y` is inout[i], EXPR is the new inout[i].
 * Both buffers are read into locals first so the expression can use each
 * operand more than once without re-loading through the pointer.
 */
#define KERNEL(fname, T, EXPR)                                                                     \
    static void fname(void *restrict inout_, const void *restrict in_, size_t count)               \
    {                                                                                              \
        T *restrict out = inout_;                                                                  \
        const T *restrict in = in_;                                                                \
        for (size_t k = 0; k < count; k++) {                                                       \
            const T x = in[k];                                                                     \
            const T y = out[k];                                                                    \
            out[k] = (EXPR);                                                                       \
        }                                                                                          \
    }

/*
 * Integer kernels are generated once per unsigned width: SUM, PROD, the
 * bitwise and the logical ops give the same bits for the signed kind of the
 * same width (two's complement), and unsigned arithmetic wraps without
 * undefined behaviour.  W is at least `unsigned int` so that the usual
 * promotion of a narrow operand to (signed) int cannot overflow in PROD.
 */
#define UINT_KERNELS(sfx, U, W)                                                                    \
    KERNEL(sum_##sfx, U, (U)((W)x + (W)y))                                                         \
    KERNEL(prod_##sfx, U, (U)((W)x * (W)y))                                                        \
    KERNEL(band_##sfx, U, (U)(x & y))                                                              \
    KERNEL(bor_##sfx, U, (U)(x | y))                                                               \
    KERNEL(bxor_##sfx, U, (U)(x ^ y))                                                              \
    KERNEL(land_##sfx, U, (U)((x != 0) & (y != 0)))                                                \
    KERNEL(lor_##sfx, U, (U)((x != 0) | (y != 0)))                                                 \
    KERNEL(lxor_##sfx, U, (U)((x != 0) ^ (y != 0)))

UINT_KERNELS(u8, uint8_t, unsigned)
UINT_KERNELS(u16, uint16_t, unsigned)
UINT_KERNELS(u32, uint32_t, uint32_t)
UINT_KERNELS(u64, uint64_t, uint64_t)

/* Operand order matters only for floating point (NaN, signed zero); keeping
 * Open MPI's (inout OP in) order makes integer and float kernels uniform. */
#define MINMAX_KERNELS(sfx, T)                                                                     \
    KERNEL(min_##sfx, T, (y < x) ? y : x)                                                          \
    KERNEL(max_##sfx, T, (y > x) ? y : x)

MINMAX_KERNELS(i8, int8_t)
MINMAX_KERNELS(u8, uint8_t)
MINMAX_KERNELS(i16, int16_t)
MINMAX_KERNELS(u16, uint16_t)
MINMAX_KERNELS(i32, int32_t)
MINMAX_KERNELS(u32, uint32_t)
MINMAX_KERNELS(i64, int64_t)
MINMAX_KERNELS(u64, uint64_t)
MINMAX_KERNELS(f32, float)
MINMAX_KERNELS(f64, double)
MINMAX_KERNELS(ldbl, long double)

#define REAL_KERNELS(sfx, T)                                                                       \
    KERNEL(sum_##sfx, T, x + y)                                                                    \
    KERNEL(prod_##sfx, T, x *y)

REAL_KERNELS(f32, float)
REAL_KERNELS(f64, double)
REAL_KERNELS(ldbl, long double)

/*
 * SUM adds the interleaved (re, im) arrays of the real type, the layout
 * C11 6.2.5p13 guarantees, so it vectorises like a real SUM.  PROD is C's `*`
 * on _Complex, as in Open MPI 4.1 (`inout *= in`): the textbook formula,
 * plus the Annex G recovery of infinities (__mulsc3) when it yields NaN in
 * both parts.  That call keeps PROD scalar, and exactness matters more here
 * than speed: the textbook formula alone gives NaN where Open MPI gives inf.
 */
#define COMPLEX_KERNELS(sfx, R, C)                                                                 \
    static void sum_##sfx(void *restrict inout_, const void *restrict in_, size_t count)           \
    {                                                                                              \
        R *restrict out = inout_;                                                                  \
        const R *restrict in = in_;                                                                \
        for (size_t k = 0; k < 2 * count; k++)                                                     \
            out[k] = in[k] + out[k];                                                               \
    }                                                                                              \
    KERNEL(prod_##sfx, C, (y) * (x))

COMPLEX_KERNELS(c32, float, float _Complex)
COMPLEX_KERNELS(c64, double, double _Complex)
COMPLEX_KERNELS(cldbl, long double, long double _Complex)

/*
 * MINLOC/MAXLOC, written without branches so the float/int pairs can be
 * if-converted: take `in` when its value wins, otherwise on equal values keep
 * the smaller index, otherwise (including unordered values) keep `inout`.
 * The index comparison is Open MPI's (inout < in ? inout : in), which only
 * matters for a NaN index in MPI_2REAL / MPI_2DOUBLE_PRECISION.
 */
#define LOC_KERNEL(fname, P, CMP)                                                                  \
    static void fname(void *restrict inout_, const void *restrict in_, size_t count)               \
    {                                                                                              \
        struct P *restrict out = inout_;                                                           \
        const struct P *restrict in = in_;                                                         \
        for (size_t k = 0; k < count; k++) {                                                       \
            const struct P x = in[k];                                                              \
            const struct P y = out[k];                                                             \
            const int wins = x.v CMP y.v;                                                          \
            const int tie = x.v == y.v;                                                            \
            out[k].v = wins ? x.v : y.v;                                                           \
            out[k].i = wins ? x.i : (tie && !(y.i < x.i)) ? x.i : y.i;                             \
        }                                                                                          \
    }

#define LOC_KERNELS(name, vtype, itype)                                                            \
    LOC_KERNEL(minloc_##name, pair_##name, <)                                                      \
    LOC_KERNEL(maxloc_##name, pair_##name, >)
PAIR_TYPES(LOC_KERNELS)

/* Table rows.  Signed integer kinds reuse the unsigned kernel of their width
 * except for MIN/MAX, where signedness changes the answer. */
#define INT_ROW(op, fn8, fn16, fn32, fn64)                                                         \
    [SAMPI_OP_##op][SAMPI_ELEM_I8] = fn8, [SAMPI_OP_##op][SAMPI_ELEM_U8] = fn8,                    \
    [SAMPI_OP_##op][SAMPI_ELEM_I16] = fn16, [SAMPI_OP_##op][SAMPI_ELEM_U16] = fn16,                \
    [SAMPI_OP_##op][SAMPI_ELEM_I32] = fn32, [SAMPI_OP_##op][SAMPI_ELEM_U32] = fn32,                \
    [SAMPI_OP_##op][SAMPI_ELEM_I64] = fn64, [SAMPI_OP_##op][SAMPI_ELEM_U64] = fn64

#define UINT_ROW(op, name) INT_ROW(op, name##_u8, name##_u16, name##_u32, name##_u64)

#define MINMAX_ROW(op, name)                                                                       \
    [SAMPI_OP_##op][SAMPI_ELEM_I8] = name##_i8, [SAMPI_OP_##op][SAMPI_ELEM_U8] = name##_u8,        \
    [SAMPI_OP_##op][SAMPI_ELEM_I16] = name##_i16, [SAMPI_OP_##op][SAMPI_ELEM_U16] = name##_u16,    \
    [SAMPI_OP_##op][SAMPI_ELEM_I32] = name##_i32, [SAMPI_OP_##op][SAMPI_ELEM_U32] = name##_u32,    \
    [SAMPI_OP_##op][SAMPI_ELEM_I64] = name##_i64, [SAMPI_OP_##op][SAMPI_ELEM_U64] = name##_u64,    \
    [SAMPI_OP_##op][SAMPI_ELEM_F32] = name##_f32, [SAMPI_OP_##op][SAMPI_ELEM_F64] = name##_f64,    \
    [SAMPI_OP_##op][SAMPI_ELEM_LDBL] = name##_ldbl

#define ARITH_ROW(op, name)                                                                        \
    UINT_ROW(op, name), [SAMPI_OP_##op][SAMPI_ELEM_F32] = name##_f32,                              \
                        [SAMPI_OP_##op][SAMPI_ELEM_F64] = name##_f64,                              \
                        [SAMPI_OP_##op][SAMPI_ELEM_LDBL] = name##_ldbl,                            \
                        [SAMPI_OP_##op][SAMPI_ELEM_C32] = name##_c32,                              \
                        [SAMPI_OP_##op][SAMPI_ELEM_C64] = name##_c64,                              \
                        [SAMPI_OP_##op][SAMPI_ELEM_CLDBL] = name##_cldbl

#define LOGICAL_ROW(op, name) UINT_ROW(op, name), [SAMPI_OP_##op][SAMPI_ELEM_BOOL] = name##_u8

#define LOC_ROW(op, name)                                                                          \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_FLOAT_INT] = name##_float_int,                                 \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_DOUBLE_INT] = name##_double_int,                               \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_LONG_INT] = name##_long_int,                                   \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_INT_INT] = name##_int_int,                                     \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_SHORT_INT] = name##_short_int,                                 \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_LDBL_INT] = name##_ldbl_int,                                   \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_FLOAT_FLOAT] = name##_float_float,                             \
    [SAMPI_OP_##op][SAMPI_ELEM_PAIR_DOUBLE_DOUBLE] = name##_double_double

/* Entries not named here are NULL: the combinations MPI does not define. */
static const sampi_reduce_fn kernel_table[SAMPI_OP__COUNT][SAMPI_ELEM__COUNT] = {
    ARITH_ROW(SUM, sum),     ARITH_ROW(PROD, prod),   MINMAX_ROW(MIN, min),
    MINMAX_ROW(MAX, max),    LOGICAL_ROW(LAND, land), LOGICAL_ROW(LOR, lor),
    LOGICAL_ROW(LXOR, lxor), UINT_ROW(BAND, band),    UINT_ROW(BOR, bor),
    UINT_ROW(BXOR, bxor),    LOC_ROW(MINLOC, minloc), LOC_ROW(MAXLOC, maxloc),
};

sampi_reduce_fn sampi_reduce_fn_get(enum sampi_op op, enum sampi_elem elem)
{
    /* Casting to unsigned also rejects negative values from a bad caller. */
    if ((unsigned)op >= SAMPI_OP__COUNT || (unsigned)elem >= SAMPI_ELEM__COUNT)
        return NULL;
    return kernel_table[op][elem];
}

static const size_t elem_sizes[SAMPI_ELEM__COUNT] = {
    [SAMPI_ELEM_I8] = sizeof(int8_t),
    [SAMPI_ELEM_U8] = sizeof(uint8_t),
    [SAMPI_ELEM_I16] = sizeof(int16_t),
    [SAMPI_ELEM_U16] = sizeof(uint16_t),
    [SAMPI_ELEM_I32] = sizeof(int32_t),
    [SAMPI_ELEM_U32] = sizeof(uint32_t),
    [SAMPI_ELEM_I64] = sizeof(int64_t),
    [SAMPI_ELEM_U64] = sizeof(uint64_t),
    [SAMPI_ELEM_BOOL] = sizeof(_Bool),
    [SAMPI_ELEM_F32] = sizeof(float),
    [SAMPI_ELEM_F64] = sizeof(double),
    [SAMPI_ELEM_LDBL] = sizeof(long double),
    [SAMPI_ELEM_C32] = sizeof(float _Complex),
    [SAMPI_ELEM_C64] = sizeof(double _Complex),
    [SAMPI_ELEM_CLDBL] = sizeof(long double _Complex),
    [SAMPI_ELEM_PAIR_FLOAT_INT] = sizeof(struct pair_float_int),
    [SAMPI_ELEM_PAIR_DOUBLE_INT] = sizeof(struct pair_double_int),
    [SAMPI_ELEM_PAIR_LONG_INT] = sizeof(struct pair_long_int),
    [SAMPI_ELEM_PAIR_INT_INT] = sizeof(struct pair_int_int),
    [SAMPI_ELEM_PAIR_SHORT_INT] = sizeof(struct pair_short_int),
    [SAMPI_ELEM_PAIR_LDBL_INT] = sizeof(struct pair_ldbl_int),
    [SAMPI_ELEM_PAIR_FLOAT_FLOAT] = sizeof(struct pair_float_float),
    [SAMPI_ELEM_PAIR_DOUBLE_DOUBLE] = sizeof(struct pair_double_double),
};

size_t sampi_elem_size(enum sampi_elem elem)
{
    if ((unsigned)elem >= SAMPI_ELEM__COUNT)
        return 0;
    return elem_sizes[elem];
}

static const char *const op_names[SAMPI_OP__COUNT] = {
    [SAMPI_OP_SUM] = "sum",   [SAMPI_OP_PROD] = "prod",     [SAMPI_OP_MIN] = "min",
    [SAMPI_OP_MAX] = "max",   [SAMPI_OP_LAND] = "land",     [SAMPI_OP_LOR] = "lor",
    [SAMPI_OP_LXOR] = "lxor", [SAMPI_OP_BAND] = "band",     [SAMPI_OP_BOR] = "bor",
    [SAMPI_OP_BXOR] = "bxor", [SAMPI_OP_MINLOC] = "minloc", [SAMPI_OP_MAXLOC] = "maxloc",
};

/* Names are for logs and benchmark output, where a bad value must still print. */
const char *sampi_op_name(enum sampi_op op)
{
    if ((unsigned)op >= SAMPI_OP__COUNT)
        return "unknown";
    return op_names[op];
}

static const char *const elem_names[SAMPI_ELEM__COUNT] = {
    [SAMPI_ELEM_I8] = "i8",
    [SAMPI_ELEM_U8] = "u8",
    [SAMPI_ELEM_I16] = "i16",
    [SAMPI_ELEM_U16] = "u16",
    [SAMPI_ELEM_I32] = "i32",
    [SAMPI_ELEM_U32] = "u32",
    [SAMPI_ELEM_I64] = "i64",
    [SAMPI_ELEM_U64] = "u64",
    [SAMPI_ELEM_BOOL] = "bool",
    [SAMPI_ELEM_F32] = "f32",
    [SAMPI_ELEM_F64] = "f64",
    [SAMPI_ELEM_LDBL] = "ldbl",
    [SAMPI_ELEM_C32] = "c32",
    [SAMPI_ELEM_C64] = "c64",
    [SAMPI_ELEM_CLDBL] = "cldbl",
    [SAMPI_ELEM_PAIR_FLOAT_INT] = "float_int",
    [SAMPI_ELEM_PAIR_DOUBLE_INT] = "double_int",
    [SAMPI_ELEM_PAIR_LONG_INT] = "long_int",
    [SAMPI_ELEM_PAIR_INT_INT] = "int_int",
    [SAMPI_ELEM_PAIR_SHORT_INT] = "short_int",
    [SAMPI_ELEM_PAIR_LDBL_INT] = "ldbl_int",
    [SAMPI_ELEM_PAIR_FLOAT_FLOAT] = "float_float",
    [SAMPI_ELEM_PAIR_DOUBLE_DOUBLE] = "double_double",
};

const char *sampi_elem_name(enum sampi_elem elem)
{
    if ((unsigned)elem >= SAMPI_ELEM__COUNT)
        return "unknown";
    return elem_names[elem];
}
