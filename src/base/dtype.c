/*
 * dtype.c - map MPI's predefined datatype and op handles to kernel enums, and
 * encode which ops the MPI standard defines on which datatype class.
 *
 * Runs on every MPI_Allreduce, so it only compares handles: no MPI call, no
 * allocation.  Element kinds are chosen from the C type's size, so MPI_LONG
 * is I64 on LP64 and I32 on ILP32/LLP64 without an #ifdef per platform.
 */
#include "dtype.h"

#include <stdint.h>

/* Not a kind: marks a row whose handle has no kernel of matching size on
 * this platform, so the lookup answers "unknown" and PMPI_Allreduce runs. */
#define NO_ELEM SAMPI_ELEM__COUNT

#define SINT_KIND(T)                                                                               \
    (sizeof(T) == 1   ? SAMPI_ELEM_I8                                                              \
     : sizeof(T) == 2 ? SAMPI_ELEM_I16                                                             \
     : sizeof(T) == 4 ? SAMPI_ELEM_I32                                                             \
     : sizeof(T) == 8 ? SAMPI_ELEM_I64                                                             \
                      : NO_ELEM)
#define UINT_KIND(T)                                                                               \
    (sizeof(T) == 1   ? SAMPI_ELEM_U8                                                              \
     : sizeof(T) == 2 ? SAMPI_ELEM_U16                                                             \
     : sizeof(T) == 4 ? SAMPI_ELEM_U32                                                             \
     : sizeof(T) == 8 ? SAMPI_ELEM_U64                                                             \
                      : NO_ELEM)
/* A Fortran real of `bytes` bytes, and a complex made of two of them.
 * REAL16 is deliberately absent: gfortran's REAL(16) is IEEE quad, not the
 * x87 long double, so size alone cannot identify it. */
#define REAL_KIND(bytes)                                                                           \
    ((bytes) == sizeof(float)    ? SAMPI_ELEM_F32                                                  \
     : (bytes) == sizeof(double) ? SAMPI_ELEM_F64                                                  \
                                 : NO_ELEM)
#define COMPLEX_KIND(bytes)                                                                        \
    ((bytes) == sizeof(float)    ? SAMPI_ELEM_C32                                                  \
     : (bytes) == sizeof(double) ? SAMPI_ELEM_C64                                                  \
                                 : NO_ELEM)

/*
 * Fortran's storage association makes default INTEGER, REAL and LOGICAL one
 * numeric storage unit and DOUBLE PRECISION two; MPI_Fint is the C type of
 * that unit, so it fixes the size of every default-kind Fortran type even when
 * the Fortran compiler was run with -fdefault-integer-8.
 */
#define F_UNIT sizeof(MPI_Fint)

/* Pair structs with the layout Open MPI gives MPI_FLOAT_INT etc.; only their
 * sizes are needed here, the kernels in kernels.c do the arithmetic. */
struct float_int {
    float v;
    int i;
};
struct double_int {
    double v;
    int i;
};
struct long_int {
    long v;
    int i;
};
struct int_int {
    int v;
    int i;
};
struct short_int {
    short v;
    int i;
};
struct ldbl_int {
    long double v;
    int i;
};
struct float_float {
    float v;
    float i;
};
struct double_double {
    double v;
    double i;
};

struct dtype_row {
    MPI_Datatype handle;
    struct sampi_dtype_info info;
};

/* clang-format off */
#define ROW(h, e, c, size)                                                                         \
    {.handle = (h), .info = {.elem = (e), .tclass = SAMPI_TCLASS_##c, .extent = (size)}}
/* clang-format on */
#define SROW(h, T) ROW(h, SINT_KIND(T), C_INTEGER, sizeof(T))
#define UROW(h, T) ROW(h, UINT_KIND(T), C_INTEGER, sizeof(T))

/*
 * Searched linearly, most frequently used handles first: this runs on every
 * call, and the types real applications reduce are a handful.  The handles
 * are link-time addresses in Open MPI (integers in MPICH), so the table is a
 * constant initializer.
 */
static const struct dtype_row dtype_table[] = {
    ROW(MPI_DOUBLE, SAMPI_ELEM_F64, FLOATING, sizeof(double)),
    ROW(MPI_FLOAT, SAMPI_ELEM_F32, FLOATING, sizeof(float)),
    SROW(MPI_INT, int),
    SROW(MPI_LONG, long),
    SROW(MPI_LONG_LONG_INT, long long),
    UROW(MPI_UNSIGNED_LONG, unsigned long),
    UROW(MPI_UNSIGNED, unsigned),
    SROW(MPI_INT64_T, int64_t),
    SROW(MPI_INT32_T, int32_t),
    UROW(MPI_UINT64_T, uint64_t),
    UROW(MPI_UINT32_T, uint32_t),
    ROW(MPI_DOUBLE_PRECISION, REAL_KIND(2 * F_UNIT), FLOATING, 2 * F_UNIT),
    ROW(MPI_REAL, REAL_KIND(F_UNIT), FLOATING, F_UNIT),
    ROW(MPI_INTEGER, SINT_KIND(MPI_Fint), F_INTEGER, sizeof(MPI_Fint)),
    ROW(MPI_DOUBLE_INT, SAMPI_ELEM_PAIR_DOUBLE_INT, PAIR, sizeof(struct double_int)),
    ROW(MPI_2INT, SAMPI_ELEM_PAIR_INT_INT, PAIR, sizeof(struct int_int)),
    ROW(MPI_C_BOOL, SAMPI_ELEM_BOOL, LOGICAL, sizeof(_Bool)),
    ROW(MPI_BYTE, SAMPI_ELEM_U8, BYTE, 1),
    ROW(MPI_C_DOUBLE_COMPLEX, SAMPI_ELEM_C64, COMPLEX, sizeof(double _Complex)),
    ROW(MPI_C_FLOAT_COMPLEX, SAMPI_ELEM_C32, COMPLEX, sizeof(float _Complex)),
    ROW(MPI_LONG_DOUBLE, SAMPI_ELEM_LDBL, FLOATING, sizeof(long double)),
    SROW(MPI_SHORT, short),
    UROW(MPI_UNSIGNED_SHORT, unsigned short),
    UROW(MPI_UNSIGNED_LONG_LONG, unsigned long long),
    /* The MPI standard defines no reduction on MPI_CHAR, but Open MPI 4.1
     * reduces it as int8_t: ompi_datatype_internal.h makes
     * OMPI_DATATYPE_MPI_CHAR a synonym of OMPI_DATATYPE_MPI_INT8_T, so it
     * takes the ten ops of a C integer (MINLOC/MAXLOC give MPI_ERR_OP) and
     * MIN/MAX compare signed bytes even where char is unsigned (AArch64,
     * POWER).  Hence I8, not the kind of `char`.  osu_allreduce reduces
     * MPI_CHAR by default. */
    ROW(MPI_CHAR, SAMPI_ELEM_I8, C_INTEGER, 1),
    SROW(MPI_SIGNED_CHAR, signed char),
    UROW(MPI_UNSIGNED_CHAR, unsigned char),
    SROW(MPI_INT8_T, int8_t),
    SROW(MPI_INT16_T, int16_t),
    UROW(MPI_UINT8_T, uint8_t),
    UROW(MPI_UINT16_T, uint16_t),
    /* MPI 3.1 calls these "multi-language types"; Open MPI reduces them as C
     * integers (LAND included), so they are classed as such. */
    SROW(MPI_AINT, MPI_Aint),
    SROW(MPI_OFFSET, MPI_Offset),
    SROW(MPI_COUNT, MPI_Count),
    ROW(MPI_LOGICAL, SINT_KIND(MPI_Fint), LOGICAL, sizeof(MPI_Fint)),
    ROW(MPI_COMPLEX, COMPLEX_KIND(F_UNIT), COMPLEX, 2 * F_UNIT),
    ROW(MPI_DOUBLE_COMPLEX, COMPLEX_KIND(2 * F_UNIT), COMPLEX, 4 * F_UNIT),
    ROW(MPI_C_LONG_DOUBLE_COMPLEX, SAMPI_ELEM_CLDBL, COMPLEX, sizeof(long double _Complex)),
    ROW(MPI_FLOAT_INT, SAMPI_ELEM_PAIR_FLOAT_INT, PAIR, sizeof(struct float_int)),
    ROW(MPI_LONG_INT, SAMPI_ELEM_PAIR_LONG_INT, PAIR, sizeof(struct long_int)),
    ROW(MPI_SHORT_INT, SAMPI_ELEM_PAIR_SHORT_INT, PAIR, sizeof(struct short_int)),
    ROW(MPI_LONG_DOUBLE_INT, SAMPI_ELEM_PAIR_LDBL_INT, PAIR, sizeof(struct ldbl_int)),
    ROW(MPI_2REAL, F_UNIT == sizeof(float) ? SAMPI_ELEM_PAIR_FLOAT_FLOAT : NO_ELEM, PAIR,
        sizeof(struct float_float)),
    ROW(MPI_2DOUBLE_PRECISION,
        2 * F_UNIT == sizeof(double) ? SAMPI_ELEM_PAIR_DOUBLE_DOUBLE : NO_ELEM, PAIR,
        sizeof(struct double_double)),
    ROW(MPI_2INTEGER, F_UNIT == sizeof(int) ? SAMPI_ELEM_PAIR_INT_INT : NO_ELEM, PAIR,
        sizeof(struct int_int)),
#ifdef MPI_CXX_BOOL
    /* The Itanium C++ ABI gives bool the same single byte as _Bool. */
    ROW(MPI_CXX_BOOL, SAMPI_ELEM_BOOL, LOGICAL, sizeof(_Bool)),
#endif
#ifdef MPI_CXX_FLOAT_COMPLEX
    ROW(MPI_CXX_FLOAT_COMPLEX, SAMPI_ELEM_C32, COMPLEX, sizeof(float _Complex)),
    ROW(MPI_CXX_DOUBLE_COMPLEX, SAMPI_ELEM_C64, COMPLEX, sizeof(double _Complex)),
    ROW(MPI_CXX_LONG_DOUBLE_COMPLEX, SAMPI_ELEM_CLDBL, COMPLEX, sizeof(long double _Complex)),
#endif
/* The sized Fortran types exist only when the Fortran compiler supports
 * them; Open MPI leaves the macro undefined otherwise. */
#ifdef MPI_INTEGER1
    ROW(MPI_INTEGER1, SAMPI_ELEM_I8, F_INTEGER, 1),
#endif
#ifdef MPI_INTEGER2
    ROW(MPI_INTEGER2, SAMPI_ELEM_I16, F_INTEGER, 2),
#endif
#ifdef MPI_INTEGER4
    ROW(MPI_INTEGER4, SAMPI_ELEM_I32, F_INTEGER, 4),
#endif
#ifdef MPI_INTEGER8
    ROW(MPI_INTEGER8, SAMPI_ELEM_I64, F_INTEGER, 8),
#endif
#ifdef MPI_REAL4
    ROW(MPI_REAL4, REAL_KIND(4), FLOATING, 4),
#endif
#ifdef MPI_REAL8
    ROW(MPI_REAL8, REAL_KIND(8), FLOATING, 8),
#endif
#ifdef MPI_COMPLEX8
    ROW(MPI_COMPLEX8, COMPLEX_KIND(4), COMPLEX, 8),
#endif
#ifdef MPI_COMPLEX16
    ROW(MPI_COMPLEX16, COMPLEX_KIND(8), COMPLEX, 16),
#endif
};

int sampi_dtype_lookup(MPI_Datatype dt, struct sampi_dtype_info *out)
{
    /* An MPI without some optional type may define its handle as
     * MPI_DATATYPE_NULL; never let such a row match. */
    if (dt == MPI_DATATYPE_NULL)
        return -1;
    for (size_t k = 0; k < sizeof(dtype_table) / sizeof(dtype_table[0]); k++) {
        if (dtype_table[k].handle != dt)
            continue;
        if (dtype_table[k].info.elem == NO_ELEM)
            return -1;
        *out = dtype_table[k].info;
        return 0;
    }
    return -1;
}

/* MPI_REPLACE and MPI_NO_OP are predefined but only meaningful for one-sided
 * accumulates; they answer -1 like a user op. */
static const struct {
    MPI_Op handle;
    enum sampi_op op;
} op_table[] = {
    {MPI_SUM, SAMPI_OP_SUM},   {MPI_MAX, SAMPI_OP_MAX},       {MPI_MIN, SAMPI_OP_MIN},
    {MPI_PROD, SAMPI_OP_PROD}, {MPI_LAND, SAMPI_OP_LAND},     {MPI_LOR, SAMPI_OP_LOR},
    {MPI_BAND, SAMPI_OP_BAND}, {MPI_BOR, SAMPI_OP_BOR},       {MPI_LXOR, SAMPI_OP_LXOR},
    {MPI_BXOR, SAMPI_OP_BXOR}, {MPI_MAXLOC, SAMPI_OP_MAXLOC}, {MPI_MINLOC, SAMPI_OP_MINLOC},
};

int sampi_op_lookup(MPI_Op op)
{
    if (op == MPI_OP_NULL)
        return -1;
    for (size_t k = 0; k < sizeof(op_table) / sizeof(op_table[0]); k++)
        if (op_table[k].handle == op)
            return (int)op_table[k].op;
    return -1;
}

#define INTEGERS (SAMPI_TCLASS_C_INTEGER | SAMPI_TCLASS_F_INTEGER)

/* MPI 3.1 section 5.9.2, the table of ops against datatype classes. */
static const unsigned op_classes[SAMPI_OP__COUNT] = {
    [SAMPI_OP_MIN] = INTEGERS | SAMPI_TCLASS_FLOATING,
    [SAMPI_OP_MAX] = INTEGERS | SAMPI_TCLASS_FLOATING,
    [SAMPI_OP_SUM] = INTEGERS | SAMPI_TCLASS_FLOATING | SAMPI_TCLASS_COMPLEX,
    [SAMPI_OP_PROD] = INTEGERS | SAMPI_TCLASS_FLOATING | SAMPI_TCLASS_COMPLEX,
    [SAMPI_OP_LAND] = SAMPI_TCLASS_C_INTEGER | SAMPI_TCLASS_LOGICAL,
    [SAMPI_OP_LOR] = SAMPI_TCLASS_C_INTEGER | SAMPI_TCLASS_LOGICAL,
    [SAMPI_OP_LXOR] = SAMPI_TCLASS_C_INTEGER | SAMPI_TCLASS_LOGICAL,
    [SAMPI_OP_BAND] = INTEGERS | SAMPI_TCLASS_BYTE,
    [SAMPI_OP_BOR] = INTEGERS | SAMPI_TCLASS_BYTE,
    [SAMPI_OP_BXOR] = INTEGERS | SAMPI_TCLASS_BYTE,
    [SAMPI_OP_MINLOC] = SAMPI_TCLASS_PAIR,
    [SAMPI_OP_MAXLOC] = SAMPI_TCLASS_PAIR,
};

int sampi_op_defined_on(enum sampi_op op, enum sampi_tclass tclass)
{
    if ((unsigned)op >= SAMPI_OP__COUNT)
        return 0;
    return (op_classes[op] & (unsigned)tclass) != 0;
}
