/*
 * check_kernels.c - Check suite for the reduction kernels (kernels.c) and the
 * MPI handle mapping (dtype.c).
 *
 * Every (op, element kind) pair is run against a scalar reference written
 * independently of the kernels: it dispatches per element on the kind,
 * computes integer results exactly in 128 bits and then truncates, computes
 * float SUM/PROD in a wider type, and decides MIN/MAX/MINLOC/MAXLOC by
 * explicit case analysis.  Buffers carry every pair of edge values at both
 * ends (so the vector body and the scalar tail both see them), guard bytes
 * around the output, and a copy of the input to catch stray writes.
 *
 * No MPI function is called (Check forks; MPI could not be initialised
 * again): the MPI handles are only compared, as sampi_dtype_lookup does.
 */
#include <check.h>
#include <complex.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "kernels.h"
#include "suites.h"

/* ------------------------------------------------------------------ layout */

/* The pair layouts as the test understands them, declared independently of
 * kernels.c so that a layout change there is caught by the size checks. */
struct t_float_int {
    float v;
    int i;
};
struct t_double_int {
    double v;
    int i;
};
struct t_long_int {
    long v;
    int i;
};
struct t_int_int {
    int v;
    int i;
};
struct t_short_int {
    short v;
    int i;
};
struct t_ldbl_int {
    long double v;
    int i;
};
struct t_float_float {
    float v;
    float i;
};
struct t_double_double {
    double v;
    double i;
};

enum fkind { FK_SINT, FK_UINT, FK_BOOL, FK_F32, FK_F64, FK_LDBL };
enum shape { SH_SCALAR, SH_COMPLEX, SH_PAIR };

struct field {
    size_t off, size;
    enum fkind kind;
};

struct edesc {
    size_t size;
    enum shape shape;
    struct field f[2]; /* f[1] unused for scalars */
};

/* clang-format off: it cannot tell braced initializers inside macros from blocks */
#define SCALAR(T, k)                                                                               \
    {                                                                                              \
        .size = sizeof(T), .shape = SH_SCALAR, .f[0] = { 0, sizeof(T), k }                         \
    }
#define COMPLEX(R, k)                                                                              \
    {                                                                                              \
        .size = 2 * sizeof(R), .shape = SH_COMPLEX, .f[0] = {0, sizeof(R), k}, .f[1] = {           \
            sizeof(R),                                                                             \
            sizeof(R),                                                                             \
            k                                                                                      \
        }                                                                                          \
    }
#define PAIR(S, vk, ik)                                                                            \
    {                                                                                              \
        .size = sizeof(struct S), .shape = SH_PAIR,                                                \
        .f[0] = {offsetof(struct S, v), sizeof(((struct S *)0)->v), vk}, .f[1] = {                 \
            offsetof(struct S, i),                                                                 \
            sizeof(((struct S *)0)->i),                                                            \
            ik                                                                                     \
        }                                                                                          \
    }
/* clang-format on */

static const struct edesc descs[SAMPI_ELEM__COUNT] = {
    [SAMPI_ELEM_I8] = SCALAR(int8_t, FK_SINT),
    [SAMPI_ELEM_U8] = SCALAR(uint8_t, FK_UINT),
    [SAMPI_ELEM_I16] = SCALAR(int16_t, FK_SINT),
    [SAMPI_ELEM_U16] = SCALAR(uint16_t, FK_UINT),
    [SAMPI_ELEM_I32] = SCALAR(int32_t, FK_SINT),
    [SAMPI_ELEM_U32] = SCALAR(uint32_t, FK_UINT),
    [SAMPI_ELEM_I64] = SCALAR(int64_t, FK_SINT),
    [SAMPI_ELEM_U64] = SCALAR(uint64_t, FK_UINT),
    [SAMPI_ELEM_BOOL] = SCALAR(_Bool, FK_BOOL),
    [SAMPI_ELEM_F32] = SCALAR(float, FK_F32),
    [SAMPI_ELEM_F64] = SCALAR(double, FK_F64),
    [SAMPI_ELEM_LDBL] = SCALAR(long double, FK_LDBL),
    [SAMPI_ELEM_C32] = COMPLEX(float, FK_F32),
    [SAMPI_ELEM_C64] = COMPLEX(double, FK_F64),
    [SAMPI_ELEM_CLDBL] = COMPLEX(long double, FK_LDBL),
    [SAMPI_ELEM_PAIR_FLOAT_INT] = PAIR(t_float_int, FK_F32, FK_SINT),
    [SAMPI_ELEM_PAIR_DOUBLE_INT] = PAIR(t_double_int, FK_F64, FK_SINT),
    [SAMPI_ELEM_PAIR_LONG_INT] = PAIR(t_long_int, FK_SINT, FK_SINT),
    [SAMPI_ELEM_PAIR_INT_INT] = PAIR(t_int_int, FK_SINT, FK_SINT),
    [SAMPI_ELEM_PAIR_SHORT_INT] = PAIR(t_short_int, FK_SINT, FK_SINT),
    [SAMPI_ELEM_PAIR_LDBL_INT] = PAIR(t_ldbl_int, FK_LDBL, FK_SINT),
    [SAMPI_ELEM_PAIR_FLOAT_FLOAT] = PAIR(t_float_float, FK_F32, FK_F32),
    [SAMPI_ELEM_PAIR_DOUBLE_DOUBLE] = PAIR(t_double_double, FK_F64, FK_F64),
};

/* Bytes of a long double that carry its value; x87 extended precision
 * leaves the rest as padding, which no store is obliged to preserve. */
#define LDBL_VALUE_BYTES (LDBL_MANT_DIG == 64 ? 10 : sizeof(long double))

static int fields_of(enum sampi_elem e)
{
    return descs[e].shape == SH_SCALAR ? 1 : 2;
}

/* ------------------------------------------------------- field load/store */

static uint64_t ld_u(const unsigned char *p, size_t n)
{
    uint8_t a;
    uint16_t b;
    uint32_t c;
    uint64_t d = 0;
    switch (n) {
    case 1:
        memcpy(&a, p, 1);
        return a;
    case 2:
        memcpy(&b, p, 2);
        return b;
    case 4:
        memcpy(&c, p, 4);
        return c;
    default:
        memcpy(&d, p, 8);
        return d;
    }
}

/* The signed field: the unsigned load, sign-extended from its top bit. */
static int64_t ld_s(const unsigned char *p, size_t n)
{
    const uint64_t u = ld_u(p, n);
    if (n != 1 && n != 2 && n != 4)
        return (int64_t)u;
    const uint64_t sign = UINT64_C(1) << (8 * n - 1);
    return (int64_t)((u ^ sign) - sign);
}

/* Stores the low 8*n bits of v: truncation is the modulo-2^n wrap. */
static void st_u(unsigned char *p, size_t n, uint64_t v)
{
    uint8_t a = (uint8_t)v;
    uint16_t b = (uint16_t)v;
    uint32_t c = (uint32_t)v;
    switch (n) {
    case 1:
        memcpy(p, &a, 1);
        break;
    case 2:
        memcpy(p, &b, 2);
        break;
    case 4:
        memcpy(p, &c, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

/* Every float, double and x87 long double value (NaN included) is exactly
 * representable as a long double, so comparisons can be done there. */
static long double ld_real(const unsigned char *p, enum fkind k)
{
    float f;
    double d;
    long double l;
    switch (k) {
    case FK_F32:
        memcpy(&f, p, sizeof f);
        return f;
    case FK_F64:
        memcpy(&d, p, sizeof d);
        return d;
    default:
        memcpy(&l, p, sizeof l);
        return l;
    }
}

static void st_real(unsigned char *p, enum fkind k, long double v)
{
    float f = (float)v;
    double d = (double)v;
    switch (k) {
    case FK_F32:
        memcpy(p, &f, sizeof f);
        break;
    case FK_F64:
        memcpy(p, &d, sizeof d);
        break;
    default:
        memcpy(p, &v, sizeof v);
        break;
    }
}

static long double ld_field(const unsigned char *p, const struct field *f)
{
    if (f->kind == FK_SINT)
        return (long double)ld_s(p + f->off, f->size);
    if (f->kind == FK_UINT)
        return (long double)ld_u(p + f->off, f->size);
    return ld_real(p + f->off, f->kind);
}

/* ---------------------------------------------------------------- reference */

static int is_selection(enum sampi_op op)
{
    return op == SAMPI_OP_MIN || op == SAMPI_OP_MAX || op == SAMPI_OP_MINLOC ||
           op == SAMPI_OP_MAXLOC;
}

__extension__ typedef __int128 s128;
__extension__ typedef unsigned __int128 u128;

static void ref_int(enum sampi_op op, const struct field *f, const unsigned char *x,
                    unsigned char *y)
{
    const int sgn = f->kind == FK_SINT;
    const s128 a = sgn ? (s128)ld_s(x, f->size) : (s128)ld_u(x, f->size);
    const s128 b = sgn ? (s128)ld_s(y, f->size) : (s128)ld_u(y, f->size);
    u128 r;

    switch (op) {
    case SAMPI_OP_SUM:
        r = (u128)(a + b);
        break;
    case SAMPI_OP_PROD:
        /* |a*b| < 2^127 for 64-bit operands, so this is the exact product */
        r = (u128)a * (u128)b;
        break;
    case SAMPI_OP_MIN:
        r = (u128)(a < b ? a : b);
        break;
    case SAMPI_OP_MAX:
        r = (u128)(a > b ? a : b);
        break;
    case SAMPI_OP_LAND:
        r = (a != 0 && b != 0) ? 1 : 0;
        break;
    case SAMPI_OP_LOR:
        r = (a != 0 || b != 0) ? 1 : 0;
        break;
    case SAMPI_OP_LXOR:
        r = ((a == 0) != (b == 0)) ? 1 : 0;
        break;
    case SAMPI_OP_BAND:
        r = (u128)a & (u128)b;
        break;
    case SAMPI_OP_BOR:
        r = (u128)a | (u128)b;
        break;
    default:
        r = (u128)a ^ (u128)b;
        break;
    }
    st_u(y, f->size, (uint64_t)r);
}

static void ref_bool(enum sampi_op op, const unsigned char *x, unsigned char *y)
{
    const int a = x[0] != 0, b = y[0] != 0;
    if (op == SAMPI_OP_LAND)
        y[0] = a && b;
    else if (op == SAMPI_OP_LOR)
        y[0] = a || b;
    else
        y[0] = a != b;
}

/* Open MPI's MIN/MAX keep `in` unless `inout` is strictly better; NaN on
 * either side therefore gives `in`, and so do -0.0 vs +0.0. */
static int take_in(enum sampi_op op, long double a, long double b)
{
    if (isnan(a) || isnan(b) || a == b)
        return 1;
    return (op == SAMPI_OP_MIN) ? (a < b) : (a > b);
}

static void ref_arith_real(enum sampi_op op, enum fkind k, const unsigned char *x, unsigned char *y)
{
    if (k == FK_F32) {
        /* One product or sum of floats rounded once from double is the
         * correctly rounded float result (53 >= 2*24+2). */
        double a = (double)ld_real(x, k), b = (double)ld_real(y, k);
        st_real(y, k, (float)(op == SAMPI_OP_SUM ? a + b : a * b));
    } else if (k == FK_F64) {
#ifdef __SIZEOF_FLOAT128__
        __extension__ __float128 a = (double)ld_real(x, k), b = (double)ld_real(y, k);
        st_real(y, k, (double)(op == SAMPI_OP_SUM ? a + b : a * b));
#else
        double a = (double)ld_real(x, k), b = (double)ld_real(y, k);
        st_real(y, k, op == SAMPI_OP_SUM ? a + b : a * b);
#endif
    } else {
        long double a = ld_real(x, k), b = ld_real(y, k);
        st_real(y, k, op == SAMPI_OP_SUM ? a + b : a * b);
    }
}

/*
 * C11 G.5.1 EXAMPLE 1 (_Cmultd), once per real type: the textbook product
 * inout * in, and where that is NaN in both parts, the recovery of
 * infinities.  Written from the standard's text on the real and imaginary
 * parts, independently of the compiler's complex multiply.
 */
#define REF_CMUL(name, R, copysignR)                                                               \
    static void name(const unsigned char *x, unsigned char *y)                                     \
    {                                                                                              \
        R a, b, c, d;                                                                              \
        memcpy(&a, y, sizeof a);                                                                   \
        memcpy(&b, y + sizeof a, sizeof b);                                                        \
        memcpy(&c, x, sizeof c);                                                                   \
        memcpy(&d, x + sizeof c, sizeof d);                                                        \
        const R ac = a * c, bd = b * d, ad = a * d, bc = b * c;                                    \
        R re = ac - bd, im = ad + bc;                                                              \
        if (isnan(re) && isnan(im)) {                                                              \
            int recalc = 0;                                                                        \
            if (isinf(a) || isinf(b)) {                                                            \
                a = copysignR(isinf(a) ? 1 : 0, a);                                                \
                b = copysignR(isinf(b) ? 1 : 0, b);                                                \
                if (isnan(c))                                                                      \
                    c = copysignR(0, c);                                                           \
                if (isnan(d))                                                                      \
                    d = copysignR(0, d);                                                           \
                recalc = 1;                                                                        \
            }                                                                                      \
            if (isinf(c) || isinf(d)) {                                                            \
                c = copysignR(isinf(c) ? 1 : 0, c);                                                \
                d = copysignR(isinf(d) ? 1 : 0, d);                                                \
                if (isnan(a))                                                                      \
                    a = copysignR(0, a);                                                           \
                if (isnan(b))                                                                      \
                    b = copysignR(0, b);                                                           \
                recalc = 1;                                                                        \
            }                                                                                      \
            if (!recalc && (isinf(ac) || isinf(bd) || isinf(ad) || isinf(bc))) {                   \
                if (isnan(a))                                                                      \
                    a = copysignR(0, a);                                                           \
                if (isnan(b))                                                                      \
                    b = copysignR(0, b);                                                           \
                if (isnan(c))                                                                      \
                    c = copysignR(0, c);                                                           \
                if (isnan(d))                                                                      \
                    d = copysignR(0, d);                                                           \
                recalc = 1;                                                                        \
            }                                                                                      \
            if (recalc) {                                                                          \
                re = (R)INFINITY * (a * c - b * d);                                                \
                im = (R)INFINITY * (a * d + b * c);                                                \
            }                                                                                      \
        }                                                                                          \
        memcpy(y, &re, sizeof re);                                                                 \
        memcpy(y + sizeof re, &im, sizeof im);                                                     \
    }

REF_CMUL(ref_cmul_f, float, copysignf)
REF_CMUL(ref_cmul_d, double, copysign)
REF_CMUL(ref_cmul_l, long double, copysignl)

static void ref_cprod(enum fkind k, const unsigned char *x, unsigned char *y)
{
    if (k == FK_F32)
        ref_cmul_f(x, y);
    else if (k == FK_F64)
        ref_cmul_d(x, y);
    else
        ref_cmul_l(x, y);
}

static void ref_pair(enum sampi_op op, const struct edesc *d, const unsigned char *x,
                     unsigned char *y)
{
    const struct field *fv = &d->f[0], *fi = &d->f[1];
    const long double xv = ld_field(x, fv), yv = ld_field(y, fv);

    if (isnan(xv) || isnan(yv))
        return; /* unordered: neither "wins" nor "ties", inout stays */
    if (op == SAMPI_OP_MINLOC ? xv < yv : xv > yv) {
        memcpy(y, x, d->size);
    } else if (xv == yv) {
        /* the value stays inout's (bits matter for -0.0 vs +0.0); the index
         * is Open MPI's (inout < in ? inout : in) */
        const long double xi = ld_field(x, fi), yi = ld_field(y, fi);
        if (!(yi < xi))
            memcpy(y + fi->off, x + fi->off, fi->size);
    }
}

static void ref_one(enum sampi_op op, enum sampi_elem e, const unsigned char *x, unsigned char *y)
{
    const struct edesc *d = &descs[e];
    switch (d->shape) {
    case SH_PAIR:
        ref_pair(op, d, x, y);
        return;
    case SH_COMPLEX:
        if (op == SAMPI_OP_PROD) {
            ref_cprod(d->f[0].kind, x, y);
        } else {
            ref_arith_real(op, d->f[0].kind, x, y);
            ref_arith_real(op, d->f[1].kind, x + d->f[1].off, y + d->f[1].off);
        }
        return;
    case SH_SCALAR:
        break;
    }
    switch (d->f[0].kind) {
    case FK_SINT:
    case FK_UINT:
        ref_int(op, &d->f[0], x, y);
        return;
    case FK_BOOL:
        ref_bool(op, x, y);
        return;
    default:
        if (is_selection(op)) {
            if (take_in(op, ld_real(x, d->f[0].kind), ld_real(y, d->f[0].kind)))
                memcpy(y, x, d->size);
        } else {
            ref_arith_real(op, d->f[0].kind, x, y);
        }
        return;
    }
}

/* Same result?  Selections must pick the very same bits; arithmetic may
 * produce any NaN where the reference produced a NaN (x86 picks the payload
 * by operand order, which the compiler is free to swap). */
static int same_field(enum sampi_op op, const struct field *f, const unsigned char *a,
                      const unsigned char *b)
{
    a += f->off;
    b += f->off;
    switch (f->kind) {
    case FK_SINT:
    case FK_UINT:
    case FK_BOOL:
        return memcmp(a, b, f->size) == 0;
    default: {
        const size_t n = f->kind == FK_LDBL ? LDBL_VALUE_BYTES : f->size;
        if (memcmp(a, b, n) == 0)
            return 1;
        return !is_selection(op) && isnan(ld_real(a, f->kind)) && isnan(ld_real(b, f->kind));
    }
    }
}

static int same_elem(enum sampi_op op, enum sampi_elem e, const unsigned char *a,
                     const unsigned char *b)
{
    for (int k = 0; k < fields_of(e); k++)
        if (!same_field(op, &descs[e].f[k], a, b))
            return 0;
    return 1;
}

/* ------------------------------------------------------------- test data */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic, so a failure reproduces */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

#define MAX_EDGES 64
#define MAX_ELEM  32

struct edges {
    size_t n;
    unsigned char v[MAX_EDGES][MAX_ELEM];
};

static size_t int_edges(size_t bytes, uint64_t *out)
{
    const unsigned bits = 8 * (unsigned)bytes;
    const uint64_t ones = bits == 64 ? ~0ULL : (1ULL << bits) - 1;
    const uint64_t sign = 1ULL << (bits - 1);
    /* 0..3; -1, -2 (UMAX, UMAX-1); MIN, MAX, MIN+1 (2^(n-1) and around);
     * 2^(n/2), whose square wraps to 0; alternating bit patterns */
    const uint64_t pats[] = {0,
                             1,
                             2,
                             3,
                             ones,
                             ones - 1,
                             sign,
                             sign - 1,
                             sign + 1,
                             1ULL << (bits / 2),
                             0x5555555555555555ULL & ones,
                             0xAAAAAAAAAAAAAAAAULL & ones};
    memcpy(out, pats, sizeof pats);
    return sizeof pats / sizeof pats[0];
}

static size_t real_edges(enum fkind k, long double *out, int full)
{
    const long double max = k == FK_F32 ? FLT_MAX : k == FK_F64 ? DBL_MAX : LDBL_MAX;
    const long double tiny = k == FK_F32   ? FLT_TRUE_MIN
                             : k == FK_F64 ? DBL_TRUE_MIN
                                           : LDBL_TRUE_MIN;
    /* max: a product that overflows while another part is NaN takes the
     * third recovery branch of C11 G.5.1 */
    const long double few[] = {0.0L, -0.0L, 1.0L, -2.5L, INFINITY, NAN, max};
    const long double all[] = {0.0L, -0.0L, 1.0L, -1.0L, 0.5L, 3.0L,  INFINITY, -INFINITY,
                               NAN,  -NAN,  max,  -max,  tiny, -tiny, 0.1L,     1e-30L};
    if (!full) {
        memcpy(out, few, sizeof few);
        return sizeof few / sizeof few[0];
    }
    memcpy(out, all, sizeof all);
    return sizeof all / sizeof all[0];
}

/* NaNs with different sign and payload, so a MIN/MAX that picks the wrong
 * operand between two NaNs shows up in a bitwise comparison. */
static void put_nan_payload(unsigned char *p, enum fkind k, int which)
{
    if (k == FK_F32) {
        uint32_t u = which ? 0xFFC00002u : 0x7FC00001u;
        memcpy(p, &u, 4);
    } else if (k == FK_F64) {
        uint64_t u = which ? 0xFFF8000000000002ULL : 0x7FF8000000000001ULL;
        memcpy(p, &u, 8);
    } else {
        long double v = which ? -__builtin_nanl("2") : __builtin_nanl("1");
        memcpy(p, &v, sizeof v);
    }
}

static void put_field(unsigned char *p, const struct field *f, long double v)
{
    if (f->kind == FK_SINT)
        st_u(p + f->off, f->size, (uint64_t)(int64_t)v);
    else if (f->kind == FK_UINT)
        st_u(p + f->off, f->size, (uint64_t)v);
    else
        st_real(p + f->off, f->kind, v);
}

static void build_edges(enum sampi_elem e, struct edges *E)
{
    const struct edesc *d = &descs[e];
    memset(E, 0, sizeof *E);
    if (d->shape == SH_SCALAR && (d->f[0].kind == FK_SINT || d->f[0].kind == FK_UINT)) {
        uint64_t pats[16];
        E->n = int_edges(d->size, pats);
        for (size_t k = 0; k < E->n; k++)
            st_u(E->v[k], d->size, pats[k]);
    } else if (d->shape == SH_SCALAR && d->f[0].kind == FK_BOOL) {
        /* 2 is not a valid _Bool, but bytes off the network can be anything;
         * the kernels treat any non-zero byte as true */
        E->n = 3;
        E->v[1][0] = 1;
        E->v[2][0] = 2;
    } else if (d->shape == SH_SCALAR) {
        long double vals[16];
        size_t n = real_edges(d->f[0].kind, vals, 1);
        for (size_t k = 0; k < n; k++)
            st_real(E->v[k], d->f[0].kind, vals[k]);
        put_nan_payload(E->v[n], d->f[0].kind, 0);
        put_nan_payload(E->v[n + 1], d->f[0].kind, 1);
        E->n = n + 2;
    } else if (d->shape == SH_COMPLEX) {
        long double vals[16];
        size_t n = real_edges(d->f[0].kind, vals, 0);
        for (size_t r = 0; r < n; r++)
            for (size_t i = 0; i < n; i++) {
                put_field(E->v[E->n], &d->f[0], vals[r]);
                put_field(E->v[E->n], &d->f[1], vals[i]);
                E->n++;
            }
    } else {
        /* pairs: values chosen to tie often, indices at their limits */
        const struct field *fv = &d->f[0], *fi = &d->f[1];
        const int vreal = fv->kind != FK_SINT, ireal = fi->kind != FK_SINT;
        long double vv[8], iv[8];
        size_t nv = 0, ni = 0;
        vv[nv++] = -1;
        vv[nv++] = 0;
        vv[nv++] = 1;
        if (vreal) {
            vv[nv++] = -0.0L;
            vv[nv++] = NAN;
            vv[nv++] = -INFINITY;
        } else {
            vv[nv++] = fv->size == 2 ? SHRT_MIN : fv->size == 4 ? INT_MIN : (long double)LONG_MIN;
            vv[nv++] = fv->size == 2 ? SHRT_MAX : fv->size == 4 ? INT_MAX : (long double)LONG_MAX;
        }
        iv[ni++] = 0;
        iv[ni++] = 1;
        iv[ni++] = 7;
        iv[ni++] = -3;
        if (ireal) {
            iv[ni++] = NAN;
        } else {
            iv[ni++] = INT_MAX;
            iv[ni++] = INT_MIN;
        }
        for (size_t a = 0; a < nv; a++)
            for (size_t b = 0; b < ni; b++) {
                put_field(E->v[E->n], fv, vv[a]);
                put_field(E->v[E->n], fi, iv[b]);
                E->n++;
            }
    }
}

static void fill_random(enum sampi_elem e, unsigned char *p)
{
    const struct edesc *d = &descs[e];
    for (int k = 0; k < fields_of(e); k++) {
        const struct field *f = &d->f[k];
        const uint64_t r = rnd();
        if (d->shape == SH_PAIR && k == 0)
            put_field(p, f, (long double)(int)(r % 5) - 2); /* ties are the point */
        else if (f->kind == FK_SINT || f->kind == FK_UINT)
            st_u(p + f->off, f->size, r);
        else if (f->kind == FK_BOOL)
            p[f->off] = r & 1;
        else /* exact quarter values: sums and products stay interesting */
            put_field(p, f, ((long double)(int)(r % 33) - 16) / 4);
    }
}

/* ------------------------------------------------------------ the matrix */

static int is_int(enum sampi_elem e)
{
    return e >= SAMPI_ELEM_I8 && e <= SAMPI_ELEM_U64;
}

static int is_real(enum sampi_elem e)
{
    return e == SAMPI_ELEM_F32 || e == SAMPI_ELEM_F64 || e == SAMPI_ELEM_LDBL;
}

static int is_cplx(enum sampi_elem e)
{
    return e == SAMPI_ELEM_C32 || e == SAMPI_ELEM_C64 || e == SAMPI_ELEM_CLDBL;
}

static int is_pair(enum sampi_elem e)
{
    return e >= SAMPI_ELEM_PAIR_FLOAT_INT && e <= SAMPI_ELEM_PAIR_DOUBLE_DOUBLE;
}

/* MPI's table of which op applies to which kind of element. */
static int mpi_defines(enum sampi_op op, enum sampi_elem e)
{
    switch (op) {
    case SAMPI_OP_SUM:
    case SAMPI_OP_PROD:
        return is_int(e) || is_real(e) || is_cplx(e);
    case SAMPI_OP_MIN:
    case SAMPI_OP_MAX:
        return is_int(e) || is_real(e);
    case SAMPI_OP_LAND:
    case SAMPI_OP_LOR:
    case SAMPI_OP_LXOR:
        return is_int(e) || e == SAMPI_ELEM_BOOL;
    case SAMPI_OP_BAND:
    case SAMPI_OP_BOR:
    case SAMPI_OP_BXOR:
        return is_int(e);
    case SAMPI_OP_MINLOC:
    case SAMPI_OP_MAXLOC:
        return is_pair(e);
    default:
        return 0;
    }
}

#define GUARD_BYTES 64
#define GUARD_BYTE  0xA5
#define BIG_COUNT   1000003

/* FNV-1a over 8-byte words: notices a stray write to the input without
 * keeping a second copy of a buffer that can be 32 MiB. */
static uint64_t digest(const unsigned char *p, size_t n)
{
    uint64_t h = 0xCBF29CE484222325ULL, w;
    size_t k = 0;
    for (; k + 8 <= n; k += 8) {
        memcpy(&w, p + k, 8);
        h = (h ^ w) * 0x100000001B3ULL;
    }
    for (; k < n; k++)
        h = (h ^ p[k]) * 0x100000001B3ULL;
    return h;
}

/* Runs one (op, elem, count, offset) case; `offset` elements in front of the
 * data shift it off the allocator's alignment and double as a front guard. */
static void run_case(enum sampi_op op, enum sampi_elem e, size_t count, size_t offset)
{
    const size_t sz = descs[e].size;
    const size_t head = offset * sz, end = head + count * sz, bytes = end + GUARD_BYTES;
    unsigned char *in = malloc(bytes), *got = malloc(bytes), *want = malloc(bytes);
    sampi_reduce_fn fn = sampi_reduce_fn_get(op, e);
    struct edges E;

    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(got);
    ck_assert_ptr_nonnull(want);
    ck_assert_ptr_nonnull(fn);

    memset(in, GUARD_BYTE, head);
    memset(got, GUARD_BYTE, head);
    memset(in + end, GUARD_BYTE, GUARD_BYTES);
    memset(got + end, GUARD_BYTE, GUARD_BYTES);
    build_edges(e, &E);
    rng_state = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)op << 32) ^ (uint64_t)e ^ count;

    /* every ordered pair of edge values at the front, again (reversed) at
     * the back so the scalar tail sees them too, random data in between */
    const size_t ncomb = E.n * E.n;
    for (size_t k = 0; k < count; k++) {
        unsigned char *x = in + head + k * sz, *y = got + head + k * sz;
        size_t c = k < ncomb ? k : (count - 1 - k < ncomb ? count - 1 - k : SIZE_MAX);
        if (c != SIZE_MAX) {
            memcpy(x, E.v[c / E.n], sz);
            memcpy(y, E.v[c % E.n], sz);
        } else {
            fill_random(e, x);
            fill_random(e, y);
        }
    }
    const uint64_t in_digest = digest(in, bytes);
    memcpy(want, got, bytes);

    for (size_t k = 0; k < count; k++)
        ref_one(op, e, in + head + k * sz, want + head + k * sz);
    fn(got + head, in + head, count);

    /* Check records every assertion, so find the first mismatch first */
    size_t bad = SIZE_MAX;
    for (size_t k = 0; k < count && bad == SIZE_MAX; k++)
        if (!same_elem(op, e, got + head + k * sz, want + head + k * sz))
            bad = k;
    ck_assert_msg(bad == SIZE_MAX,
                  "%s/%s count %zu offset %zu: element %zu differs from the reference",
                  sampi_op_name(op), sampi_elem_name(e), count, offset, bad);
    ck_assert_msg(memcmp(got, want, head) == 0, "%s/%s wrote before the buffer", sampi_op_name(op),
                  sampi_elem_name(e));
    ck_assert_msg(memcmp(got + end, want + end, GUARD_BYTES) == 0,
                  "%s/%s count %zu wrote past the end", sampi_op_name(op), sampi_elem_name(e),
                  count);
    ck_assert_msg(digest(in, bytes) == in_digest, "%s/%s count %zu modified its input",
                  sampi_op_name(op), sampi_elem_name(e), count);
    free(in);
    free(got);
    free(want);
}

/* _i enumerates the whole op x elem square, defined or not. */
START_TEST(test_kernel_matrix)
{
    const enum sampi_op op = (enum sampi_op)(_i / SAMPI_ELEM__COUNT);
    const enum sampi_elem e = (enum sampi_elem)(_i % SAMPI_ELEM__COUNT);
    sampi_reduce_fn fn = sampi_reduce_fn_get(op, e);

    if (!mpi_defines(op, e)) {
        ck_assert_msg(fn == NULL, "%s on %s is not an MPI reduction but has a kernel",
                      sampi_op_name(op), sampi_elem_name(e));
        return;
    }
    ck_assert_msg(fn != NULL, "%s on %s has no kernel", sampi_op_name(op), sampi_elem_name(e));

    /* count 0 must not touch memory at all, not even to read it */
    fn(NULL, NULL, 0);

    struct edges E;
    build_edges(e, &E);
    const size_t counts[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 64, 65, 1001, E.n * E.n};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
        for (size_t off = 0; off < 2; off++)
            run_case(op, e, counts[c], off);
    run_case(op, e, 2 * E.n * E.n + 1, 0);
    run_case(op, e, BIG_COUNT, 0);
}
END_TEST

START_TEST(test_out_of_range)
{
    ck_assert_ptr_null(sampi_reduce_fn_get(SAMPI_OP__COUNT, SAMPI_ELEM_F32));
    ck_assert_ptr_null(sampi_reduce_fn_get(SAMPI_OP_SUM, SAMPI_ELEM__COUNT));
    ck_assert_ptr_null(sampi_reduce_fn_get((enum sampi_op) - 1, SAMPI_ELEM_F32));
    ck_assert_ptr_null(sampi_reduce_fn_get(SAMPI_OP_SUM, (enum sampi_elem) - 1));
    ck_assert_uint_eq(sampi_elem_size(SAMPI_ELEM__COUNT), 0);
    ck_assert_str_eq(sampi_op_name(SAMPI_OP__COUNT), "unknown");
    ck_assert_str_eq(sampi_elem_name((enum sampi_elem) - 1), "unknown");
}
END_TEST

START_TEST(test_sizes_and_names)
{
    for (int e = 0; e < SAMPI_ELEM__COUNT; e++) {
        ck_assert_msg(sampi_elem_size((enum sampi_elem)e) == descs[e].size,
                      "%s: size %zu, C type has %zu", sampi_elem_name((enum sampi_elem)e),
                      sampi_elem_size((enum sampi_elem)e), descs[e].size);
        for (int f = 0; f < e; f++)
            ck_assert_str_ne(sampi_elem_name((enum sampi_elem)e),
                             sampi_elem_name((enum sampi_elem)f));
    }
    for (int o = 0; o < SAMPI_OP__COUNT; o++)
        for (int p = 0; p < o; p++)
            ck_assert_str_ne(sampi_op_name((enum sampi_op)o), sampi_op_name((enum sampi_op)p));
    ck_assert_str_eq(sampi_op_name(SAMPI_OP_MAXLOC), "maxloc");
    ck_assert_str_eq(sampi_elem_name(SAMPI_ELEM_F32), "f32");
}
END_TEST

/* ------------------------------------------- known answers, no reference */

#define APPLY(op, elem, inv, iov) sampi_reduce_fn_get(op, elem)(&(iov), &(inv), 1)

START_TEST(test_integer_wrap)
{
    int32_t i32 = INT32_MAX, one = 1;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_I32, one, i32);
    ck_assert_int_eq(i32, INT32_MIN);

    /* Open MPI 4.1's op/avx component saturates 8/16-bit SUM on AVX2/AVX-512
     * machines (open-mpi/ompi#8045); the base component and SAMPI wrap. */
    int8_t a8 = 100, b8 = 100;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_I8, a8, b8);
    ck_assert_int_eq(b8, -56);
    int16_t a16 = 16384, b16 = 16384;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_I16, a16, b16);
    ck_assert_int_eq(b16, INT16_MIN);
    uint8_t u8a = 200, u8b = 100;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_U8, u8a, u8b);
    ck_assert_uint_eq(u8b, 44);

    /* 65535 * 65535 overflows int after promotion: must be computed unsigned */
    uint16_t u16a = UINT16_MAX, u16b = UINT16_MAX;
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_U16, u16a, u16b);
    ck_assert_uint_eq(u16b, 1);
    int64_t m = INT64_MIN, neg = -1;
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_I64, neg, m);
    ck_assert(m == INT64_MIN);
    uint64_t u64a = UINT64_MAX, u64b = 2;
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_U64, u64a, u64b);
    ck_assert(u64b == UINT64_MAX - 1);

    int8_t lo = INT8_MIN, hi = INT8_MAX;
    APPLY(SAMPI_OP_MIN, SAMPI_ELEM_I8, lo, hi);
    ck_assert_int_eq(hi, INT8_MIN);
    uint32_t big = UINT32_MAX, small = 1;
    APPLY(SAMPI_OP_MAX, SAMPI_ELEM_U32, big, small);
    ck_assert_uint_eq(small, UINT32_MAX);
}
END_TEST

START_TEST(test_logical_and_bitwise)
{
    int32_t in[4] = {5, 0, 5, 0}, io[4] = {3, 7, 0, 0};
    int32_t a[4], b[4];

    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_LAND, SAMPI_ELEM_I32)(b, in, 4);
    ck_assert(b[0] == 1 && b[1] == 0 && b[2] == 0 && b[3] == 0);
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_LOR, SAMPI_ELEM_I32)(b, in, 4);
    ck_assert(b[0] == 1 && b[1] == 1 && b[2] == 1 && b[3] == 0);
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_LXOR, SAMPI_ELEM_I32)(b, in, 4);
    ck_assert(b[0] == 0 && b[1] == 1 && b[2] == 1 && b[3] == 0);
    memcpy(a, in, sizeof a);
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_BAND, SAMPI_ELEM_I32)(b, a, 4);
    ck_assert(b[0] == 1 && b[1] == 0);

    _Bool t = 1, f = 0;
    APPLY(SAMPI_OP_LAND, SAMPI_ELEM_BOOL, t, f);
    ck_assert(!f);
    f = 0;
    APPLY(SAMPI_OP_LXOR, SAMPI_ELEM_BOOL, t, f);
    ck_assert(f);

    /* MPI_BYTE reduces through U8 */
    uint8_t x = 0xF0, y = 0x3C;
    APPLY(SAMPI_OP_BXOR, SAMPI_ELEM_U8, x, y);
    ck_assert_uint_eq(y, 0xCC);
    y = 0x3C;
    APPLY(SAMPI_OP_BOR, SAMPI_ELEM_U8, x, y);
    ck_assert_uint_eq(y, 0xFC);
}
END_TEST

START_TEST(test_float_minmax_open_mpi)
{
    /* Open MPI base: inout = (inout < in) ? inout : in.  Anything unordered,
     * and a tie between -0.0 and +0.0, yields `in`. */
    float in = NAN, io = 1.0f;
    APPLY(SAMPI_OP_MIN, SAMPI_ELEM_F32, in, io);
    ck_assert(isnan(io));
    in = 1.0f;
    io = NAN;
    APPLY(SAMPI_OP_MIN, SAMPI_ELEM_F32, in, io);
    ck_assert(io == 1.0f);
    in = 2.0f;
    io = NAN;
    APPLY(SAMPI_OP_MAX, SAMPI_ELEM_F32, in, io);
    ck_assert(io == 2.0f);

    double din = -0.0, dio = 0.0;
    APPLY(SAMPI_OP_MIN, SAMPI_ELEM_F64, din, dio);
    ck_assert(dio == 0.0 && signbit(dio));
    din = 0.0;
    dio = -0.0;
    APPLY(SAMPI_OP_MAX, SAMPI_ELEM_F64, din, dio);
    ck_assert(dio == 0.0 && !signbit(dio));
    din = -INFINITY;
    dio = 5.0;
    APPLY(SAMPI_OP_MIN, SAMPI_ELEM_F64, din, dio);
    ck_assert(isinf(dio) && dio < 0);

    long double lin = 3.0L, lio = -7.0L;
    APPLY(SAMPI_OP_MAX, SAMPI_ELEM_LDBL, lin, lio);
    ck_assert(lio == 3.0L);
}
END_TEST

START_TEST(test_float_arith)
{
    double a = 0.1, b = 0.2;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_F64, a, b);
    ck_assert(b == 0.30000000000000004);
    a = INFINITY;
    b = -INFINITY;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_F64, a, b);
    ck_assert(isnan(b));
    float fa = -0.0f, fb = -0.0f;
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_F32, fa, fb);
    ck_assert(fb == 0.0f && signbit(fb));
    fa = FLT_MAX;
    fb = 2.0f;
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_F32, fa, fb);
    ck_assert(isinf(fb));

    double complex ca = CMPLX(1.0, 2.0), cb = CMPLX(3.0, 4.0);
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_C64, ca, cb);
    ck_assert(creal(cb) == -5.0 && cimag(cb) == 10.0);
    float complex fca = CMPLXF(1.5f, -2.0f), fcb = CMPLXF(0.5f, 4.0f);
    APPLY(SAMPI_OP_SUM, SAMPI_ELEM_C32, fca, fcb);
    ck_assert(crealf(fcb) == 2.0f && cimagf(fcb) == 2.0f);
    /* the textbook formula gives NaN + NaN i here; C and Open MPI give inf */
    double complex inf = CMPLX(INFINITY, INFINITY), one = CMPLX(1.0, 0.0);
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_C64, one, inf);
    ck_assert(isinf(creal(inf)) && isinf(cimag(inf)));
    long double complex la = CMPLXL(0.0L, 1.0L), lb = CMPLXL(0.0L, 1.0L);
    APPLY(SAMPI_OP_PROD, SAMPI_ELEM_CLDBL, la, lb);
    ck_assert(creall(lb) == -1.0L && cimagl(lb) == 0.0L);
}
END_TEST

START_TEST(test_loc_ties)
{
    struct t_double_int in = {1.0, 5}, io = {1.0, 3};
    APPLY(SAMPI_OP_MINLOC, SAMPI_ELEM_PAIR_DOUBLE_INT, in, io);
    ck_assert(io.v == 1.0 && io.i == 3);
    in = (struct t_double_int){1.0, 2};
    APPLY(SAMPI_OP_MAXLOC, SAMPI_ELEM_PAIR_DOUBLE_INT, in, io);
    ck_assert(io.v == 1.0 && io.i == 2);
    in = (struct t_double_int){0.5, 9};
    APPLY(SAMPI_OP_MINLOC, SAMPI_ELEM_PAIR_DOUBLE_INT, in, io);
    ck_assert(io.v == 0.5 && io.i == 9);
    in = (struct t_double_int){7.0, 0};
    APPLY(SAMPI_OP_MINLOC, SAMPI_ELEM_PAIR_DOUBLE_INT, in, io);
    ck_assert(io.v == 0.5 && io.i == 9);
    in = (struct t_double_int){NAN, 0};
    APPLY(SAMPI_OP_MAXLOC, SAMPI_ELEM_PAIR_DOUBLE_INT, in, io);
    ck_assert(io.v == 0.5 && io.i == 9);

    struct t_int_int ii = {4, -1}, io2 = {4, 6};
    APPLY(SAMPI_OP_MAXLOC, SAMPI_ELEM_PAIR_INT_INT, ii, io2);
    ck_assert(io2.v == 4 && io2.i == -1);
    struct t_short_int si = {-3, 10}, so = {2, 1};
    APPLY(SAMPI_OP_MINLOC, SAMPI_ELEM_PAIR_SHORT_INT, si, so);
    ck_assert(so.v == -3 && so.i == 10);
    struct t_long_int li = {LONG_MAX, 8}, lo = {LONG_MAX, 2};
    APPLY(SAMPI_OP_MAXLOC, SAMPI_ELEM_PAIR_LONG_INT, li, lo);
    ck_assert(lo.v == LONG_MAX && lo.i == 2);
    struct t_float_float ff = {2.0f, 1.0f}, fo = {2.0f, 3.0f};
    APPLY(SAMPI_OP_MINLOC, SAMPI_ELEM_PAIR_FLOAT_FLOAT, ff, fo);
    ck_assert(fo.v == 2.0f && fo.i == 1.0f);
    struct t_ldbl_int ldi = {-1.0L, 4}, ldo = {-1.0L, 4};
    APPLY(SAMPI_OP_MAXLOC, SAMPI_ELEM_PAIR_LDBL_INT, ldi, ldo);
    ck_assert(ldo.v == -1.0L && ldo.i == 4);
}
END_TEST

/* Counts that are not a multiple of any vector width, with the interesting
 * value in the last (scalar tail) element, checked against a hand answer. */
START_TEST(test_tail)
{
    enum { N = 1000003 };
    float *in = malloc(N * sizeof *in), *io = malloc(N * sizeof *io);
    ck_assert_ptr_nonnull(in);
    ck_assert_ptr_nonnull(io);
    for (size_t k = 0; k < N; k++) {
        in[k] = (float)(k % 7);
        io[k] = 1.0f;
    }
    in[N - 1] = NAN;
    sampi_reduce_fn_get(SAMPI_OP_MAX, SAMPI_ELEM_F32)(io, in, N);
    size_t bad = SIZE_MAX;
    for (size_t k = 0; k + 1 < N && bad == SIZE_MAX; k++)
        if (io[k] != (float)(k % 7 > 1 ? k % 7 : 1))
            bad = k;
    ck_assert_msg(bad == SIZE_MAX, "element %zu", bad);
    ck_assert(isnan(io[N - 1]));
    free(in);
    free(io);
}
END_TEST

/* ------------------------------------------------------------ MPI handles */

struct expect {
    MPI_Datatype dt;
    const char *name;
    enum sampi_elem elem;
    enum sampi_tclass tclass;
    size_t extent;
};

/* clang-format off */
#define X(dt, elem, cls, size) {dt, #dt, SAMPI_ELEM_##elem, SAMPI_TCLASS_##cls, size}
/* clang-format on */

/* Built at run time: an initializer with MPI handles is fine in C for Open
 * MPI (addresses) but the expectations depend on sizeof of C types. */
static size_t expected(struct expect *out)
{
    const enum sampi_elem i_long = sizeof(long) == 8 ? SAMPI_ELEM_I64 : SAMPI_ELEM_I32;
    const enum sampi_elem u_long = sizeof(long) == 8 ? SAMPI_ELEM_U64 : SAMPI_ELEM_U32;
    const struct expect t[] = {
        X(MPI_DOUBLE, F64, FLOATING, sizeof(double)),
        X(MPI_FLOAT, F32, FLOATING, sizeof(float)),
        X(MPI_LONG_DOUBLE, LDBL, FLOATING, sizeof(long double)),
        X(MPI_INT, I32, C_INTEGER, sizeof(int)),
        {MPI_LONG, "MPI_LONG", i_long, SAMPI_TCLASS_C_INTEGER, sizeof(long)},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", u_long, SAMPI_TCLASS_C_INTEGER,
         sizeof(unsigned long)},
        X(MPI_SHORT, I16, C_INTEGER, sizeof(short)),
        X(MPI_UNSIGNED_SHORT, U16, C_INTEGER, sizeof(unsigned short)),
        X(MPI_UNSIGNED, U32, C_INTEGER, sizeof(unsigned)),
        X(MPI_LONG_LONG_INT, I64, C_INTEGER, sizeof(long long)),
        X(MPI_LONG_LONG, I64, C_INTEGER, sizeof(long long)),
        X(MPI_UNSIGNED_LONG_LONG, U64, C_INTEGER, sizeof(unsigned long long)),
        X(MPI_CHAR, I8, C_INTEGER, sizeof(char)),
        X(MPI_SIGNED_CHAR, I8, C_INTEGER, sizeof(signed char)),
        X(MPI_UNSIGNED_CHAR, U8, C_INTEGER, sizeof(unsigned char)),
        X(MPI_INT8_T, I8, C_INTEGER, sizeof(int8_t)),
        X(MPI_INT16_T, I16, C_INTEGER, sizeof(int16_t)),
        X(MPI_INT32_T, I32, C_INTEGER, sizeof(int32_t)),
        X(MPI_INT64_T, I64, C_INTEGER, sizeof(int64_t)),
        X(MPI_UINT8_T, U8, C_INTEGER, sizeof(uint8_t)),
        X(MPI_UINT16_T, U16, C_INTEGER, sizeof(uint16_t)),
        X(MPI_UINT32_T, U32, C_INTEGER, sizeof(uint32_t)),
        X(MPI_UINT64_T, U64, C_INTEGER, sizeof(uint64_t)),
        X(MPI_AINT, I64, C_INTEGER, sizeof(MPI_Aint)),
        X(MPI_OFFSET, I64, C_INTEGER, sizeof(MPI_Offset)),
        X(MPI_COUNT, I64, C_INTEGER, sizeof(MPI_Count)),
        X(MPI_INTEGER, I32, F_INTEGER, sizeof(int32_t)),
#ifdef MPI_INTEGER1
        X(MPI_INTEGER1, I8, F_INTEGER, sizeof(int8_t)),
#endif
#ifdef MPI_INTEGER2
        X(MPI_INTEGER2, I16, F_INTEGER, sizeof(int16_t)),
#endif
#ifdef MPI_INTEGER4
        X(MPI_INTEGER4, I32, F_INTEGER, sizeof(int32_t)),
#endif
#ifdef MPI_INTEGER8
        X(MPI_INTEGER8, I64, F_INTEGER, sizeof(int64_t)),
#endif
        X(MPI_REAL, F32, FLOATING, sizeof(float)),
        X(MPI_DOUBLE_PRECISION, F64, FLOATING, sizeof(double)),
#ifdef MPI_REAL4
        X(MPI_REAL4, F32, FLOATING, sizeof(float)),
#endif
#ifdef MPI_REAL8
        X(MPI_REAL8, F64, FLOATING, sizeof(double)),
#endif
        X(MPI_C_BOOL, BOOL, LOGICAL, sizeof(_Bool)),
#ifdef MPI_CXX_BOOL
        X(MPI_CXX_BOOL, BOOL, LOGICAL, sizeof(_Bool)),
#endif
        X(MPI_LOGICAL, I32, LOGICAL, sizeof(int32_t)),
        X(MPI_C_FLOAT_COMPLEX, C32, COMPLEX, sizeof(float complex)),
        X(MPI_C_COMPLEX, C32, COMPLEX, sizeof(float complex)),
        X(MPI_C_DOUBLE_COMPLEX, C64, COMPLEX, sizeof(double complex)),
        X(MPI_C_LONG_DOUBLE_COMPLEX, CLDBL, COMPLEX, sizeof(long double complex)),
#ifdef MPI_CXX_FLOAT_COMPLEX
        X(MPI_CXX_FLOAT_COMPLEX, C32, COMPLEX, sizeof(float complex)),
        X(MPI_CXX_DOUBLE_COMPLEX, C64, COMPLEX, sizeof(double complex)),
        X(MPI_CXX_LONG_DOUBLE_COMPLEX, CLDBL, COMPLEX, sizeof(long double complex)),
#endif
        X(MPI_COMPLEX, C32, COMPLEX, sizeof(float complex)),
        X(MPI_DOUBLE_COMPLEX, C64, COMPLEX, sizeof(double complex)),
#ifdef MPI_COMPLEX8
        X(MPI_COMPLEX8, C32, COMPLEX, sizeof(float complex)),
#endif
#ifdef MPI_COMPLEX16
        X(MPI_COMPLEX16, C64, COMPLEX, sizeof(double complex)),
#endif
        X(MPI_BYTE, U8, BYTE, 1),
        X(MPI_FLOAT_INT, PAIR_FLOAT_INT, PAIR, sizeof(struct t_float_int)),
        X(MPI_DOUBLE_INT, PAIR_DOUBLE_INT, PAIR, sizeof(struct t_double_int)),
        X(MPI_LONG_INT, PAIR_LONG_INT, PAIR, sizeof(struct t_long_int)),
        X(MPI_2INT, PAIR_INT_INT, PAIR, sizeof(struct t_int_int)),
        X(MPI_SHORT_INT, PAIR_SHORT_INT, PAIR, sizeof(struct t_short_int)),
        X(MPI_LONG_DOUBLE_INT, PAIR_LDBL_INT, PAIR, sizeof(struct t_ldbl_int)),
        X(MPI_2REAL, PAIR_FLOAT_FLOAT, PAIR, sizeof(struct t_float_float)),
        X(MPI_2DOUBLE_PRECISION, PAIR_DOUBLE_DOUBLE, PAIR, sizeof(struct t_double_double)),
        X(MPI_2INTEGER, PAIR_INT_INT, PAIR, sizeof(struct t_int_int)),
    };
    memcpy(out, t, sizeof t);
    return sizeof t / sizeof t[0];
}

START_TEST(test_dtype_lookup)
{
    struct expect t[96];
    const size_t n = expected(t);

    /* the Fortran rows above assume gfortran's 4-byte default INTEGER */
    ck_assert_uint_eq(sizeof(MPI_Fint), 4);
    for (size_t k = 0; k < n; k++) {
        struct sampi_dtype_info info;
        memset(&info, 0xEE, sizeof info);
        ck_assert_msg(sampi_dtype_lookup(t[k].dt, &info) == 0, "%s not mapped", t[k].name);
        ck_assert_msg(info.elem == t[k].elem, "%s: elem %s, expected %s", t[k].name,
                      sampi_elem_name(info.elem), sampi_elem_name(t[k].elem));
        ck_assert_msg(info.tclass == t[k].tclass, "%s: class %d, expected %d", t[k].name,
                      (int)info.tclass, (int)t[k].tclass);
        ck_assert_msg(info.extent == t[k].extent, "%s: extent %zu, sizeof says %zu", t[k].name,
                      info.extent, t[k].extent);
        /* the kernel strides by sampi_elem_size, the executor by the extent */
        ck_assert_msg(sampi_elem_size(info.elem) == info.extent, "%s: elem size %zu != extent %zu",
                      t[k].name, sampi_elem_size(info.elem), info.extent);
        /* every combination MPI defines on a mapped type has a kernel */
        for (int op = 0; op < SAMPI_OP__COUNT; op++)
            if (sampi_op_defined_on((enum sampi_op)op, info.tclass))
                ck_assert_msg(sampi_reduce_fn_get((enum sampi_op)op, info.elem) != NULL,
                              "%s: %s is defined but has no kernel", t[k].name,
                              sampi_op_name((enum sampi_op)op));
    }
}
END_TEST

START_TEST(test_dtype_unmapped)
{
    const MPI_Datatype no[] = {
        MPI_DATATYPE_NULL, MPI_WCHAR, MPI_PACKED, MPI_2COMPLEX, MPI_2DOUBLE_COMPLEX,
#ifdef MPI_REAL16
        MPI_REAL16, /* quad precision in gfortran, not long double */
#endif
#ifdef MPI_COMPLEX32
        MPI_COMPLEX32,
#endif
#ifdef MPI_INTEGER16
        MPI_INTEGER16,
#endif
    };
    for (size_t k = 0; k < sizeof no / sizeof no[0]; k++) {
        struct sampi_dtype_info info;
        memset(&info, 0x5A, sizeof info);
        ck_assert_msg(sampi_dtype_lookup(no[k], &info) == -1, "entry %zu should be unmapped", k);
    }
}
END_TEST

/*
 * MPI_CHAR as Open MPI 4.1 reduces it: as int8_t (OMPI_DATATYPE_MPI_CHAR is
 * a synonym of OMPI_DATATYPE_MPI_INT8_T), so signed whatever the signedness
 * of the platform's char, SUM and PROD wrapping, and with the ten ops of a C
 * integer; MINLOC and MAXLOC go to Open MPI, which refuses them.
 */
START_TEST(test_dtype_mpi_char)
{
    struct sampi_dtype_info info;
    ck_assert_int_eq(sampi_dtype_lookup(MPI_CHAR, &info), 0);
    ck_assert_int_eq(info.elem, SAMPI_ELEM_I8);
    ck_assert_uint_eq(info.extent, 1);

    int defined = 0;
    for (int op = 0; op < SAMPI_OP__COUNT; op++) {
        const int yes = sampi_op_defined_on((enum sampi_op)op, info.tclass) != 0;
        const int loc = op == SAMPI_OP_MINLOC || op == SAMPI_OP_MAXLOC;
        ck_assert_msg(yes == !loc, "MPI_CHAR %s: defined %d", sampi_op_name((enum sampi_op)op),
                      yes);
        defined += yes;
    }
    ck_assert_int_eq(defined, 10);

    /* bytes as they arrive in a char buffer: 0xff is -1, 0x80 is -128 */
    unsigned char in[4] = {100, 0xff, 0x80, 0x7f}, io[4] = {100, 0x01, 0x01, 0x01};
    unsigned char b[4];
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_SUM, info.elem)(b, in, 4);
    ck_assert(b[0] == 0xc8 && b[1] == 0x00 && b[2] == 0x81 && b[3] == 0x80);
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_MAX, info.elem)(b, in, 4);
    ck_assert(b[0] == 100 && b[1] == 0x01 && b[2] == 0x01 && b[3] == 0x7f);
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_MIN, info.elem)(b, in, 4);
    ck_assert(b[0] == 100 && b[1] == 0xff && b[2] == 0x80 && b[3] == 0x01);
    memcpy(b, io, sizeof b);
    sampi_reduce_fn_get(SAMPI_OP_PROD, info.elem)(b, in, 4);
    ck_assert(b[0] == 0x10 && b[1] == 0xff && b[2] == 0x80 && b[3] == 0x7f);
}
END_TEST

START_TEST(test_op_lookup)
{
    const struct {
        MPI_Op op;
        int want;
    } t[] = {
        {MPI_SUM, SAMPI_OP_SUM},
        {MPI_PROD, SAMPI_OP_PROD},
        {MPI_MIN, SAMPI_OP_MIN},
        {MPI_MAX, SAMPI_OP_MAX},
        {MPI_LAND, SAMPI_OP_LAND},
        {MPI_LOR, SAMPI_OP_LOR},
        {MPI_LXOR, SAMPI_OP_LXOR},
        {MPI_BAND, SAMPI_OP_BAND},
        {MPI_BOR, SAMPI_OP_BOR},
        {MPI_BXOR, SAMPI_OP_BXOR},
        {MPI_MINLOC, SAMPI_OP_MINLOC},
        {MPI_MAXLOC, SAMPI_OP_MAXLOC},
        {MPI_REPLACE, -1},
        {MPI_NO_OP, -1},
        {MPI_OP_NULL, -1},
    };
    for (size_t k = 0; k < sizeof t / sizeof t[0]; k++)
        ck_assert_msg(sampi_op_lookup(t[k].op) == t[k].want, "entry %zu: got %d, want %d", k,
                      sampi_op_lookup(t[k].op), t[k].want);
}
END_TEST

/* MPI 3.1 section 5.9.2, spelled out pair by pair. */
static int standard_allows(enum sampi_op op, enum sampi_tclass c)
{
    switch (c) {
    case SAMPI_TCLASS_C_INTEGER:
        return op != SAMPI_OP_MINLOC && op != SAMPI_OP_MAXLOC;
    case SAMPI_TCLASS_F_INTEGER:
        return op == SAMPI_OP_SUM || op == SAMPI_OP_PROD || op == SAMPI_OP_MIN ||
               op == SAMPI_OP_MAX || op == SAMPI_OP_BAND || op == SAMPI_OP_BOR ||
               op == SAMPI_OP_BXOR;
    case SAMPI_TCLASS_FLOATING:
        return op == SAMPI_OP_SUM || op == SAMPI_OP_PROD || op == SAMPI_OP_MIN ||
               op == SAMPI_OP_MAX;
    case SAMPI_TCLASS_LOGICAL:
        return op == SAMPI_OP_LAND || op == SAMPI_OP_LOR || op == SAMPI_OP_LXOR;
    case SAMPI_TCLASS_COMPLEX:
        return op == SAMPI_OP_SUM || op == SAMPI_OP_PROD;
    case SAMPI_TCLASS_BYTE:
        return op == SAMPI_OP_BAND || op == SAMPI_OP_BOR || op == SAMPI_OP_BXOR;
    case SAMPI_TCLASS_PAIR:
        return op == SAMPI_OP_MINLOC || op == SAMPI_OP_MAXLOC;
    }
    return 0;
}

START_TEST(test_op_defined_on)
{
    const enum sampi_tclass classes[] = {
        SAMPI_TCLASS_C_INTEGER, SAMPI_TCLASS_F_INTEGER, SAMPI_TCLASS_FLOATING, SAMPI_TCLASS_LOGICAL,
        SAMPI_TCLASS_COMPLEX,   SAMPI_TCLASS_BYTE,      SAMPI_TCLASS_PAIR,
    };
    int yes = 0;
    for (int op = 0; op < SAMPI_OP__COUNT; op++)
        for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
            const int got = sampi_op_defined_on((enum sampi_op)op, classes[c]) != 0;
            ck_assert_msg(got == standard_allows((enum sampi_op)op, classes[c]),
                          "%s on class %d: got %d", sampi_op_name((enum sampi_op)op),
                          (int)classes[c], got);
            yes += got;
        }
    ck_assert_int_eq(yes, 10 + 7 + 4 + 3 + 2 + 3 + 2);
    ck_assert(!sampi_op_defined_on(SAMPI_OP__COUNT, SAMPI_TCLASS_C_INTEGER));
    ck_assert(!sampi_op_defined_on(SAMPI_OP_SUM, (enum sampi_tclass)0));
}
END_TEST

Suite *sampi_kernels_suite(void)
{
    return UNIT_SUITE(
        "kernels",
        /* the 1000003-element case runs the scalar reference over every element */
        {.name = "matrix",
         .timeout = 60,
         UNIT_LOOPS({test_kernel_matrix, 0, SAMPI_OP__COUNT * SAMPI_ELEM__COUNT})},
        {.name = "table", UNIT_TESTS(test_out_of_range, test_sizes_and_names)},
        {.name = "known_answers",
         UNIT_TESTS(test_integer_wrap, test_logical_and_bitwise, test_float_minmax_open_mpi,
                    test_float_arith, test_loc_ties, test_tail)},
        {.name = "dtype",
         UNIT_TESTS(test_dtype_lookup, test_dtype_unmapped, test_dtype_mpi_char, test_op_lookup,
                    test_op_defined_on)});
}
