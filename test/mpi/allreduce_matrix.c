/*
 * allreduce_matrix.c - MPI_Allreduce through SAMPI against PMPI_Allreduce.
 *
 * One run loops over communicators x datatypes x every op MPI defines on the
 * datatype x counts x algorithms x in-place, so that one mpirun per process
 * count covers the whole matrix.  For each case:
 *   - the reference is PMPI_Allreduce on the same inputs (Open MPI itself);
 *   - integer, logical, bitwise, byte, MAXLOC/MINLOC and floating MAX/MIN
 *     results must equal it bit for bit; floating SUM/PROD must lie within a
 *     reassociation bound computed per element from the inputs of all ranks;
 *   - every rank must hold identical bits (SAMPI reduces each element at one
 *     place and copies it);
 *   - the send buffer must be untouched and nothing past `count` written;
 *   - sampi_comm_last_algorithm must name the forced algorithm, or "native"
 *     when the call is not eligible (communicator of one rank); `stragglar`
 *     (straggler from SAMPI_STRAGGLAR_RANK, as the library reads it) runs
 *     "ring" instead on fewer than 3 ranks, fewer than size-1 elements, or
 *     with no straggler rank inside the communicator; `optcc` (degraded
 *     rank and slowdown from SAMPI_OPTCC_SLOWDOWN) likewise on fewer than 3
 *     ranks, fewer than 4(size-1) elements, or no degraded rank inside it.
 * Then the cases that must fall back (user-defined ops, a derived datatype)
 * and one NaN/signed-zero case whose only portable property is that all
 * ranks agree.
 *
 * Usage: allreduce_matrix [--quick | --shape] [--deep] [--netdev mpi|ofi]
 *   --quick   a subset of the datatypes and no 2^22-element cases;
 *   --shape   only MPI_INT and MPI_DOUBLE under MPI_SUM and MPI_MAX, no
 *             2^22-element cases: every algorithm, count, in-place mode and
 *             communicator still runs, so the schedules and the data path are
 *             checked at this size, while the reduction kernels (the same at
 *             every size) are left to the full matrix at smaller sizes;
 *   --deep    then `ring` (and on 2 ranks `rhd`) on MPI_COMM_WORLD with 1 KiB
 *             segments, 2400 per step of `ring`: more operations at once
 *             than a libfabric provider queue holds; the result must equal
 *             the exact sum computed locally;
 *   --netdev  set that data path on every communicator before its first
 *             allreduce and check that it is the one in use.
 */
#include "mpitest.h"
#include "sampi.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#define GUARD_ELEMS 4
#define SENTINEL    0xA5
#define PRIME_COUNT 99991
#define BIG_COUNT   (1u << 22)

/* ------------------------------------------------------------ scalars */

/* How to write one value component of a datatype, and for floating types
 * how to read it back.  `sig` is the number of bytes that carry the value:
 * x86's long double uses 10 of its 16, and the rest is never compared. */
struct scalar {
    size_t size, sig;
    int is_signed;
    void (*store_i)(void *p, int64_t v);
    void (*store_r)(void *p, long double v);
    long double (*load_r)(const void *p);
    long double eps;
};

#define SCALAR_INT(N, T, SIGNED)                                                                   \
    static void N##_store(void *p, int64_t v)                                                      \
    {                                                                                              \
        T x = (T)v;                                                                                \
        memcpy(p, &x, sizeof x);                                                                   \
    }                                                                                              \
    static const struct scalar N = {sizeof(T), sizeof(T), SIGNED, N##_store, NULL, NULL, 0};

#define SCALAR_REAL(N, T, SIG, EPS)                                                                \
    static void N##_store(void *p, long double v)                                                  \
    {                                                                                              \
        T x = (T)v;                                                                                \
        memcpy(p, &x, sizeof x);                                                                   \
    }                                                                                              \
    static long double N##_load(const void *p)                                                     \
    {                                                                                              \
        T x;                                                                                       \
        memcpy(&x, p, sizeof x);                                                                   \
        return x;                                                                                  \
    }                                                                                              \
    static const struct scalar N = {sizeof(T), SIG, 1, NULL, N##_store, N##_load, EPS};

SCALAR_INT(s_int, int, 1)
SCALAR_INT(s_long, long, 1)
SCALAR_INT(s_unsigned, unsigned, 0)
SCALAR_INT(s_int8, int8_t, 1)
SCALAR_INT(s_char, char, CHAR_MIN < 0)
SCALAR_INT(s_uint64, uint64_t, 0)
SCALAR_INT(s_short, short, 1)
SCALAR_INT(s_bool, bool, 0)
SCALAR_INT(s_byte, uint8_t, 0)
SCALAR_REAL(s_float, float, sizeof(float), FLT_EPSILON)
SCALAR_REAL(s_double, double, sizeof(double), DBL_EPSILON)
SCALAR_REAL(s_ldouble, long double, LDBL_MANT_DIG == 64 ? 10 : sizeof(long double), LDBL_EPSILON)

/* ------------------------------------------------------------ datatypes */

/* MPI's datatype classes, which decide the ops defined on a type (MPI 4.0
 * section 6.9.2).  Fortran integers are not in the class logical ops take.
 * OMPI_CHAR is not an MPI class: the standard defines no op on MPI_CHAR, but
 * Open MPI 4.1 reduces it as int8_t (ompi_datatype_internal.h makes
 * OMPI_DATATYPE_MPI_CHAR a synonym of OMPI_DATATYPE_MPI_INT8_T) and accepts
 * the ten ops below that name it; MINLOC/MAXLOC on it fail with MPI_ERR_OP
 * (bad_args.c checks that SAMPI gives the same). */
enum tclass {
    C_INTEGER = 1 << 0,
    F_INTEGER = 1 << 1,
    FLOATING = 1 << 2,
    COMPLEX = 1 << 3,
    LOGICAL = 1 << 4,
    BYTE = 1 << 5,
    PAIR = 1 << 6,
    OMPI_CHAR = 1 << 7,
};
#define INTEGERS (C_INTEGER | F_INTEGER)

/* How values are generated and compared. */
enum kind { K_INT, K_REAL, K_CPLX, K_PAIR };

struct ttype {
    MPI_Datatype dt;
    const char *name;
    enum tclass cls;
    enum kind kind;
    const struct scalar *val; /* a value component */
    size_t extent;
    size_t idx_off; /* K_PAIR: offset of the int location */
    int quick;      /* in the --quick subset */
};

struct double_int {
    double v;
    int i;
};
struct float_int {
    float v;
    int i;
};

static const struct ttype types[] = {
    {MPI_INT, "MPI_INT", C_INTEGER, K_INT, &s_int, sizeof(int), 0, 1},
    {MPI_LONG, "MPI_LONG", C_INTEGER, K_INT, &s_long, sizeof(long), 0, 0},
    {MPI_UNSIGNED, "MPI_UNSIGNED", C_INTEGER, K_INT, &s_unsigned, sizeof(unsigned), 0, 0},
    {MPI_INT8_T, "MPI_INT8_T", C_INTEGER, K_INT, &s_int8, 1, 0, 1},
    /* osu_allreduce's default datatype, hence in the --quick subset */
    {MPI_CHAR, "MPI_CHAR", OMPI_CHAR, K_INT, &s_char, 1, 0, 1},
    {MPI_UINT64_T, "MPI_UINT64_T", C_INTEGER, K_INT, &s_uint64, 8, 0, 0},
    {MPI_SHORT, "MPI_SHORT", C_INTEGER, K_INT, &s_short, sizeof(short), 0, 0},
    {MPI_INTEGER, "MPI_INTEGER", F_INTEGER, K_INT, &s_int, sizeof(int), 0, 0},
    {MPI_FLOAT, "MPI_FLOAT", FLOATING, K_REAL, &s_float, sizeof(float), 0, 0},
    {MPI_DOUBLE, "MPI_DOUBLE", FLOATING, K_REAL, &s_double, sizeof(double), 0, 1},
    {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE", FLOATING, K_REAL, &s_ldouble, sizeof(long double), 0, 1},
    {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX", COMPLEX, K_CPLX, &s_double, 2 * sizeof(double),
     0, 1},
    {MPI_C_BOOL, "MPI_C_BOOL", LOGICAL, K_INT, &s_bool, sizeof(bool), 0, 0},
    {MPI_BYTE, "MPI_BYTE", BYTE, K_INT, &s_byte, 1, 0, 1},
    {MPI_2INT, "MPI_2INT", PAIR, K_PAIR, &s_int, 2 * sizeof(int), sizeof(int), 0},
    {MPI_DOUBLE_INT, "MPI_DOUBLE_INT", PAIR, K_PAIR, &s_double, sizeof(struct double_int),
     offsetof(struct double_int, i), 1},
    {MPI_FLOAT_INT, "MPI_FLOAT_INT", PAIR, K_PAIR, &s_float, sizeof(struct float_int),
     offsetof(struct float_int, i), 0},
};
#define NTYPES (sizeof types / sizeof types[0])

/* ------------------------------------------------------------ ops */

/* Input shape that makes an op's result informative: products of small odd
 * numbers (not all zero), logical inputs with zeros and non-one truths, full
 * bit patterns for bitwise ops, few distinct values (ties) for MAXLOC. */
enum mode { M_ARITH, M_PROD, M_LOGICAL, M_BITS, M_LOC };

struct top {
    MPI_Op op;
    const char *name;
    unsigned classes; /* datatype classes MPI defines the op on */
    enum mode mode;
    int rounds; /* floating results depend on the order of evaluation */
    int is_sum;
};

static const struct top ops[] = {
    {MPI_MAX, "MPI_MAX", INTEGERS | FLOATING | OMPI_CHAR, M_ARITH, 0, 0},
    {MPI_MIN, "MPI_MIN", INTEGERS | FLOATING | OMPI_CHAR, M_ARITH, 0, 0},
    {MPI_SUM, "MPI_SUM", INTEGERS | FLOATING | COMPLEX | OMPI_CHAR, M_ARITH, 1, 1},
    {MPI_PROD, "MPI_PROD", INTEGERS | FLOATING | COMPLEX | OMPI_CHAR, M_PROD, 1, 0},
    {MPI_LAND, "MPI_LAND", C_INTEGER | LOGICAL | OMPI_CHAR, M_LOGICAL, 0, 0},
    {MPI_LOR, "MPI_LOR", C_INTEGER | LOGICAL | OMPI_CHAR, M_LOGICAL, 0, 0},
    {MPI_LXOR, "MPI_LXOR", C_INTEGER | LOGICAL | OMPI_CHAR, M_LOGICAL, 0, 0},
    {MPI_BAND, "MPI_BAND", INTEGERS | BYTE | OMPI_CHAR, M_BITS, 0, 0},
    {MPI_BOR, "MPI_BOR", INTEGERS | BYTE | OMPI_CHAR, M_BITS, 0, 0},
    {MPI_BXOR, "MPI_BXOR", INTEGERS | BYTE | OMPI_CHAR, M_BITS, 0, 0},
    {MPI_MAXLOC, "MPI_MAXLOC", PAIR, M_LOC, 0, 0},
    {MPI_MINLOC, "MPI_MINLOC", PAIR, M_LOC, 0, 0},
};
#define NOPS (sizeof ops / sizeof ops[0])

/* The only (type, op) pairs run with 2^22 elements: enough to cross every
 * segment and pipeline boundary while keeping the run short.  MPI_CHAR
 * MPI_SUM is osu_allreduce's default call; its sums overflow and must wrap. */
static const struct {
    MPI_Datatype dt;
    MPI_Op op;
} big_pairs[] = {{MPI_INT, MPI_SUM}, {MPI_DOUBLE, MPI_SUM}, {MPI_CHAR, MPI_SUM}};

static const char *const algos[] = {"native", "ring", "rhd", "stragglar", "optcc", "hier", "auto"};
#define NALGOS (sizeof algos / sizeof algos[0])

/* ------------------------------------------------------------ run state */

struct tcomm {
    MPI_Comm comm;
    const char *name;
    int rank, size;
    int big; /* runs the 2^22-element cases */
};

struct ctx {
    struct mt_state st;
    int quick;
    int shape;          /* --shape: see the usage above */
    const char *netdev; /* requested data path, or NULL */
    int wsize;
};

/* One (communicator, type, op, count) and its buffers; the reference and
 * the per-element floating bounds are computed once and shared by the
 * algorithm x in-place runs. */
struct tcase {
    const struct tcomm *c;
    const struct ttype *t;
    const struct top *o;
    size_t count;
    uint64_t seed;
    unsigned char *pristine, *send, *recv, *ref;
    long double *bound;
    struct mt_batch batch; /* the cases of one count, closed together */
};

static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static int64_t int_max(const struct scalar *s)
{
    return s->is_signed ? (int64_t)(UINT64_MAX >> (65 - 8 * s->size)) : -1;
}

static int64_t int_min(const struct scalar *s)
{
    return s->is_signed ? -int_max(s) - 1 : 0;
}

/* The first indices carry the extremes: all ranks at MAX (a SUM wraps), all
 * at MIN, and one rank alone at MAX or MIN (MAX/MIN must pick it). */
static int64_t gen_int(const struct tcase *k, int r, size_t i, uint64_t h)
{
    static const int64_t logical[] = {0, 1, 2, -7, 4};
    const struct scalar *s = k->t->val;
    switch (k->o->mode) {
    case M_PROD:
        return 2 * (int64_t)(h % 4) - 3;
    case M_LOGICAL:
        return logical[h % 5];
    case M_BITS:
        return (int64_t)h;
    default:
        break;
    }
    if (i == 0 || (i == 2 && r == 0))
        return int_max(s);
    if (i == 1 || (i == 3 && r == k->c->size - 1))
        return int_min(s);
    return (int64_t)(h % 2001) - 1000;
}

/* Never zero, so MAX/MIN never compare +0 with -0; mixed magnitudes make
 * SUM depend on the order of evaluation. */
static long double gen_real(enum mode m, size_t i, uint64_t h)
{
    if (m == M_PROD)
        return 1.0L + ((long double)(h % 17) - 8) / 64;
    long double v = ((long double)(h % 2001) - 1000 + 0.5L) / 7;
    return i % 3 == 0 ? v * 1024 : v;
}

/* Element i of comm rank r's input, written at dst (extent bytes). */
static void gen_elem(const struct tcase *k, int r, size_t i, unsigned char *dst)
{
    const struct scalar *s = k->t->val;
    uint64_t h = mix64(k->seed ^ ((uint64_t)i << 16) ^ (uint64_t)r);
    switch (k->t->kind) {
    case K_INT:
        s->store_i(dst, gen_int(k, r, i, h));
        break;
    case K_REAL:
        s->store_r(dst, gen_real(k->o->mode, i, h));
        break;
    case K_CPLX:
        s->store_r(dst, gen_real(k->o->mode, i, h));
        s->store_r(dst + s->size, gen_real(k->o->mode, i + 1, mix64(h)));
        break;
    case K_PAIR: {
        int idx = (int)(mix64(h) % 100) - 50;
        if (s->store_i)
            s->store_i(dst, (int64_t)(h % 4));
        else
            s->store_r(dst, (long double)(h % 4) - 1.5L);
        memcpy(dst + k->t->idx_off, &idx, sizeof idx);
        break;
    }
    }
}

/* Magnitude of this rank's element i (complex: modulus). */
static long double elem_abs(const struct tcase *k, size_t i)
{
    const struct scalar *s = k->t->val;
    const unsigned char *e = k->pristine + i * k->t->extent;
    if (k->t->kind == K_CPLX)
        return hypotl(s->load_r(e), s->load_r(e + s->size));
    return fabsl(s->load_r(e));
}

/*
 * |sampi - ref| <= 2 p c eps M per element (per component for complex),
 * with M = sum over ranks of |x_r| for SUM and product of |x_r| for PROD.
 * Each side's rounding error is at most (p-1) eps/2 M for a real sum or
 * product in any order; c = 4 covers a complex multiply (sqrt(2) * 2 units
 * of roundoff); the factor 2 p over (p-1) is slack, far below any real
 * error (which would be of the order of an input, not eps times the
 * inputs).  M is itself reduced by Open MPI in long double: its terms are
 * non-negative, so its own rounding is negligible.
 */
static void compute_bounds(struct tcase *k)
{
    int p = k->c->size;
    long double c = k->t->kind == K_CPLX && !k->o->is_sum ? 4 : 1;
    for (size_t i = 0; i < k->count; i++)
        k->bound[i] = elem_abs(k, i);
    PMPI_Allreduce(MPI_IN_PLACE, k->bound, (int)k->count, MPI_LONG_DOUBLE,
                   k->o->is_sum ? MPI_SUM : MPI_PROD, k->c->comm);
    for (size_t i = 0; i < k->count; i++)
        k->bound[i] *= 2 * p * c * k->t->val->eps;
}

/* Every byte of the buffer carries value bits (no pair or long double
 * padding), so whole-buffer hashing and comparison are exact. */
static int dense(const struct ttype *t)
{
    size_t comps = t->kind == K_CPLX ? 2 : 1;
    return t->kind != K_PAIR && t->val->sig == t->val->size && t->extent == comps * t->val->size;
}

/* Hash of the bytes that carry values. */
static uint64_t result_hash(const struct tcase *k, const unsigned char *buf)
{
    const struct ttype *t = k->t;
    uint64_t h = MT_HASH_SEED;
    if (dense(t))
        return mt_hash(h, buf, k->count * t->extent);
    for (size_t i = 0; i < k->count; i++) {
        const unsigned char *e = buf + i * t->extent;
        h = mt_hash(h, e, t->val->sig);
        if (t->kind == K_CPLX)
            h = mt_hash(h, e + t->val->size, t->val->sig);
        if (t->kind == K_PAIR)
            h = mt_hash(h, e + t->idx_off, sizeof(int));
    }
    return h;
}

static void hex(char *out, size_t len, const unsigned char *e, size_t n)
{
    size_t o = 0;
    for (size_t j = 0; j < n && o + 3 < len; j++)
        o += (size_t)snprintf(out + o, len - o, "%02x", e[n - 1 - j]);
}

/* Floating SUM and PROD are compared within a bound; everything else bit
 * for bit. */
static int exact_compare(const struct tcase *k)
{
    return !(k->o->rounds && (k->t->kind == K_REAL || k->t->kind == K_CPLX));
}

/* 0 when element i of got matches the reference. */
static int elem_mismatch(const struct tcase *k, const unsigned char *got, size_t i)
{
    const struct ttype *t = k->t;
    const struct scalar *s = t->val;
    const unsigned char *g = got + i * t->extent, *r = k->ref + i * t->extent;
    if (!exact_compare(k)) {
        int ncomp = t->kind == K_CPLX ? 2 : 1;
        for (int j = 0; j < ncomp; j++) {
            long double d = fabsl(s->load_r(g + j * s->size) - s->load_r(r + j * s->size));
            if (!(d <= k->bound[i]))
                return 1;
        }
        return 0;
    }
    if (memcmp(g, r, s->sig) != 0)
        return 1;
    if (t->kind == K_CPLX && memcmp(g + s->size, r + s->size, s->sig) != 0)
        return 1;
    return t->kind == K_PAIR && memcmp(g + t->idx_off, r + t->idx_off, sizeof(int)) != 0;
}

static void describe(const struct ctx *x, const struct tcase *k, const char *alg, int inplace,
                     char *out, size_t len)
{
    snprintf(out, len, "np=%d netdev=%s comm=%s(size %d) alg=%s type=%s op=%s count=%zu inplace=%d",
             x->wsize, x->netdev ? x->netdev : "default", k->c->name, k->c->size, alg, k->t->name,
             k->o->name, k->count, inplace);
}

static void check_values(struct ctx *x, const struct tcase *k, const char *what)
{
    if (exact_compare(k) && dense(k->t) && memcmp(k->recv, k->ref, k->count * k->t->extent) == 0)
        return;
    for (size_t i = 0; i < k->count; i++) {
        if (!elem_mismatch(k, k->recv, i))
            continue;
        char g[80] = "", r[80] = "";
        size_t n = k->t->extent < 32 ? k->t->extent : 32;
        hex(g, sizeof g, k->recv + i * k->t->extent, n);
        hex(r, sizeof r, k->ref + i * k->t->extent, n);
        if (k->t->kind == K_REAL)
            mt_fail(&x->st, "%s: element %zu: got %.21Lg expected %.21Lg (bound %Lg)", what, i,
                    k->t->val->load_r(k->recv + i * k->t->extent),
                    k->t->val->load_r(k->ref + i * k->t->extent),
                    k->o->rounds ? k->bound[i] : 0.0L);
        else
            mt_fail(&x->st, "%s: element %zu: got 0x%s expected 0x%s", what, i, g, r);
        return;
    }
}

static int guard_intact(const unsigned char *p, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (p[j] != SENTINEL)
            return 0;
    return 1;
}

/* Whether a call forced to `stragglar` runs it rather than `ring`. */
static int stragglar_runs(int size, size_t count)
{
    const char *env = getenv("SAMPI_STRAGGLAR_RANK");
    long s = env ? strtol(env, NULL, 10) : -1;
    return size >= 3 && s >= 0 && s < size && count >= (size_t)size - 1;
}

/* Whether a call forced to `optcc` runs it rather than `ring`: a degraded
 * rank from SAMPI_OPTCC_SLOWDOWN ("rank:l") inside the communicator, at
 * least 3 ranks and 4(size-1) elements. */
static int optcc_runs(int size, size_t count)
{
    const char *env = getenv("SAMPI_OPTCC_SLOWDOWN");
    long z = env && *env ? strtol(env, NULL, 10) : -1;
    return size >= 3 && z >= 0 && z < size && count >= 4 * ((size_t)size - 1);
}

/* Whether a call forced to `hier` runs it rather than `ring`: nodes of
 * SAMPI_HIER_RANKS_PER_NODE ranks, all of that size, two or more of them;
 * -1 when Open MPI's nodes decide (unset: either may run). */
static int hier_runs(int size)
{
    const char *env = getenv("SAMPI_HIER_RANKS_PER_NODE");
    long k = env && *env ? strtol(env, NULL, 10) : 0;
    if (k <= 0)
        return -1;
    return k >= 2 && size % k == 0 && size / k >= 2;
}

/* What sampi_comm_last_algorithm may say after a call with `alg` forced. */
static int algo_as_expected(const char *alg, const char *got, int size, size_t count)
{
    int eligible = size > 1;
    if (!eligible || strcmp(alg, "native") == 0)
        return strcmp(got, "native") == 0;
    if (strcmp(alg, "stragglar") == 0 && count > 0 && !stragglar_runs(size, count))
        return strcmp(got, "ring") == 0;
    if (strcmp(alg, "optcc") == 0 && count > 0 && !optcc_runs(size, count))
        return strcmp(got, "ring") == 0;
    if (strcmp(alg, "hier") == 0 && count > 0 && hier_runs(size) >= 0)
        return strcmp(got, hier_runs(size) ? "hier" : "ring") == 0;
    if (strcmp(alg, "hier") == 0 && count > 0)
        return strcmp(got, "hier") == 0 || strcmp(got, "ring") == 0;
    if (strcmp(alg, "auto") == 0) /* tracked calls may go to stragglar or optcc */
        return strcmp(got, "native") == 0 || strcmp(got, "ring") == 0 || strcmp(got, "rhd") == 0 ||
               strcmp(got, "stragglar") == 0 || strcmp(got, "optcc") == 0 ||
               strcmp(got, "hier") == 0;
    /* With nothing to reduce, handing the call to Open MPI is as good. */
    return strcmp(got, alg) == 0 || (count == 0 && strcmp(got, "native") == 0);
}

static void run_one(struct ctx *x, struct tcase *k, const char *alg, int inplace)
{
    const struct ttype *t = k->t;
    size_t bytes = k->count * t->extent;
    char what[320];
    describe(x, k, alg, inplace, what, sizeof what);

    memcpy(k->send, k->pristine, bytes);
    memset(k->recv, SENTINEL, bytes + GUARD_ELEMS * t->extent);
    if (inplace)
        memcpy(k->recv, k->pristine, bytes);

    int rc = sampi_comm_set_algorithm(k->c->comm, alg);
    if (rc != MPI_SUCCESS)
        mt_fail(&x->st, "%s: sampi_comm_set_algorithm returned %d", what, rc);
    rc = MPI_Allreduce(inplace ? MPI_IN_PLACE : k->send, k->recv, (int)k->count, t->dt, k->o->op,
                       k->c->comm);
    if (rc != MPI_SUCCESS)
        mt_fail(&x->st, "%s: MPI_Allreduce returned %d", what, rc);

    const char *ran = sampi_comm_last_algorithm(k->c->comm);
    if (!algo_as_expected(alg, ran ? ran : "(null)", k->c->size, k->count))
        mt_fail(&x->st, "%s: sampi_comm_last_algorithm says '%s'", what, ran ? ran : "(null)");
    if (!inplace && memcmp(k->send, k->pristine, bytes) != 0)
        mt_fail(&x->st, "%s: send buffer modified", what);
    if (!guard_intact(k->recv + bytes, GUARD_ELEMS * t->extent))
        mt_fail(&x->st, "%s: wrote past the end of the receive buffer", what);
    check_values(x, k, what);
    mt_batch_add(&x->st, &k->batch, k->c->comm, result_hash(k, k->recv), what);
}

static void run_count(struct ctx *x, struct tcase *k)
{
    size_t bytes = k->count * k->t->extent;
    k->seed = mix64((uint64_t)(k->t - types) << 40 ^ (uint64_t)(k->o - ops) << 32 ^ k->count);
    memset(k->pristine, 0, bytes);
    for (size_t i = 0; i < k->count; i++)
        gen_elem(k, k->c->rank, i, k->pristine + i * k->t->extent);
    memset(k->ref, SENTINEL, bytes);
    int rc = PMPI_Allreduce(k->pristine, k->ref, (int)k->count, k->t->dt, k->o->op, k->c->comm);
    if (rc != MPI_SUCCESS) {
        /* Open MPI refused a pair the table claims MPI defines: the table
         * is wrong, not SAMPI; report it and skip the comparison. */
        mt_fail(&x->st, "reference PMPI_Allreduce(%s, %s) failed: %d", k->t->name, k->o->name, rc);
        mt_close_case(&x->st, k->c->comm, 0, "reference");
        return;
    }
    if (!exact_compare(k))
        compute_bounds(k);
    for (size_t a = 0; a < NALGOS; a++)
        for (int inplace = 0; inplace < 2; inplace++)
            run_one(x, k, algos[a], inplace);
    mt_batch_close(&x->st, &k->batch, k->c->comm); /* one agreement per count */
}

static int is_big_pair(const struct ttype *t, const struct top *o)
{
    for (size_t j = 0; j < sizeof big_pairs / sizeof big_pairs[0]; j++)
        if (big_pairs[j].dt == t->dt && big_pairs[j].op == o->op)
            return 1;
    return 0;
}

/* Counts {0, 1, p-1, p, p+1, prime, 2^22}, without repeats. */
static size_t count_list(const struct ctx *x, const struct tcomm *c, const struct ttype *t,
                         const struct top *o, size_t *out)
{
    size_t cand[] = {
        0, 1, (size_t)c->size - 1, (size_t)c->size, (size_t)c->size + 1, PRIME_COUNT, BIG_COUNT};
    size_t n = 0;
    for (size_t j = 0; j < sizeof cand / sizeof cand[0]; j++) {
        if (cand[j] == BIG_COUNT && (x->quick || x->shape || !c->big || !is_big_pair(t, o)))
            continue;
        int seen = 0;
        for (size_t m = 0; m < n; m++)
            seen |= out[m] == cand[j];
        if (!seen)
            out[n++] = cand[j];
    }
    return n;
}

static void run_type_op(struct ctx *x, const struct tcomm *c, const struct ttype *t,
                        const struct top *o)
{
    size_t counts[8], n = count_list(x, c, t, o, counts), max = 0;
    for (size_t j = 0; j < n; j++)
        max = counts[j] > max ? counts[j] : max;
    size_t bytes = (max + GUARD_ELEMS) * t->extent;
    struct tcase k = {.c = c, .t = t, .o = o};
    k.pristine = mt_malloc(bytes);
    k.send = mt_malloc(bytes);
    k.recv = mt_malloc(bytes);
    k.ref = mt_malloc(bytes);
    k.bound = mt_malloc(max * sizeof *k.bound);
    for (size_t j = 0; j < n; j++) {
        k.count = counts[j];
        run_count(x, &k);
    }
    free(k.pristine);
    free(k.send);
    free(k.recv);
    free(k.ref);
    free(k.bound);
}

/* The --shape subset: one integer and one floating type, one op that
 * combines and one that selects. */
static int in_shape(const struct ttype *t, const struct top *o)
{
    return (t->dt == MPI_INT || t->dt == MPI_DOUBLE) && (o->op == MPI_SUM || o->op == MPI_MAX);
}

static void run_matrix(struct ctx *x, const struct tcomm *c)
{
    for (size_t t = 0; t < NTYPES; t++) {
        if (x->quick && !types[t].quick)
            continue;
        for (size_t o = 0; o < NOPS; o++)
            if ((ops[o].classes & types[t].cls) && (!x->shape || in_shape(&types[t], &ops[o])))
                run_type_op(x, c, &types[t], &ops[o]);
    }
}

/* ------------------------------------------------------------ fallbacks */

/* Integer sum over MPI_INT or any contiguous run of MPI_INTs. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int size;
    PMPI_Type_size(*dt, &size);
    const int *a = in;
    int *b = inout;
    for (long i = 0; i < (long)*len * size / (long)sizeof(int); i++)
        b[i] += a[i];
}

/* Keeps the left operand: associative, not commutative, so the result is
 * rank 0's input and any reordering shows. */
static void user_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int n = *len, size;
    PMPI_Type_size(*dt, &size);
    memcpy(inout, in, (size_t)n * (size_t)size);
}

/* A call SAMPI must hand to PMPI_Allreduce: forced ring/rhd still report
 * "native", and the outcome is Open MPI's: the same error class when Open
 * MPI refuses the call (it rejects predefined ops on derived types), the
 * same bits when it accepts it. */
static void run_fallback(struct ctx *x, const struct tcomm *c, MPI_Datatype dt, const char *tname,
                         MPI_Op op, const char *oname, int elems_per_item)
{
    enum { COUNT = 1000 };
    static const char *const forced[] = {"ring", "rhd", "stragglar", "optcc"};
    size_t bytes = sizeof(int) * COUNT * (size_t)elems_per_item;
    int *in = mt_malloc(bytes), *got = mt_malloc(bytes), *ref = mt_malloc(bytes);
    for (size_t i = 0; i < bytes / sizeof(int); i++)
        in[i] = (int)(mix64((uint64_t)i ^ (uint64_t)c->rank << 32) % 20001) - 10000;
    int ref_rc = PMPI_Allreduce(in, ref, COUNT, dt, op, c->comm), ref_cls = MPI_SUCCESS;
    if (ref_rc != MPI_SUCCESS)
        PMPI_Error_class(ref_rc, &ref_cls);
    for (size_t a = 0; a < sizeof forced / sizeof forced[0]; a++) {
        char what[256];
        snprintf(what, sizeof what,
                 "np=%d comm=%s(size %d) alg=%s type=%s op=%s count=%d (fallback)", x->wsize,
                 c->name, c->size, forced[a], tname, oname, COUNT);
        memset(got, SENTINEL, bytes);
        sampi_comm_set_algorithm(c->comm, forced[a]);
        int rc = MPI_Allreduce(in, got, COUNT, dt, op, c->comm), cls = MPI_SUCCESS;
        if (rc != MPI_SUCCESS)
            PMPI_Error_class(rc, &cls);
        const char *ran = sampi_comm_last_algorithm(c->comm);
        if (cls != ref_cls)
            mt_fail(&x->st, "%s: error class %d, Open MPI gives %d", what, cls, ref_cls);
        if (ref_rc == MPI_SUCCESS && (ran == NULL || strcmp(ran, "native") != 0))
            mt_fail(&x->st, "%s: ran '%s', expected the PMPI fallback 'native'", what,
                    ran ? ran : "(null)");
        if (ref_rc == MPI_SUCCESS && memcmp(got, ref, bytes) != 0)
            mt_fail(&x->st, "%s: result differs from PMPI_Allreduce", what);
        mt_close_case(&x->st, c->comm, ref_rc ? 0 : mt_hash(MT_HASH_SEED, got, bytes), what);
    }
    free(in);
    free(got);
    free(ref);
}

static void run_fallbacks(struct ctx *x, const struct tcomm *c)
{
    MPI_Op sum, first;
    MPI_Datatype int3;
    PMPI_Op_create(user_sum, 1, &sum);
    PMPI_Op_create(user_first, 0, &first);
    PMPI_Type_contiguous(3, MPI_INT, &int3);
    PMPI_Type_commit(&int3);
    run_fallback(x, c, MPI_INT, "MPI_INT", sum, "user commutative sum", 1);
    run_fallback(x, c, MPI_INT, "MPI_INT", first, "user non-commutative", 1);
    run_fallback(x, c, int3, "contiguous(3, MPI_INT)", MPI_SUM, "MPI_SUM", 3);
    run_fallback(x, c, int3, "contiguous(3, MPI_INT)", sum, "user commutative sum", 3);
    PMPI_Type_free(&int3);
    PMPI_Op_free(&sum);
    PMPI_Op_free(&first);
}

/* ------------------------------------------------------------ NaN and zeros */

/* Per index: a NaN with a rank-specific payload on one rank, -0 on all
 * ranks, +0/-0 alternating between ranks, an ordinary value.  Which NaN
 * payload or zero sign survives depends on the order of evaluation, so the
 * only checks are that every rank holds the same bits and that a SUM with a
 * NaN input is a NaN. */
static void fill_special(const struct tcomm *c, double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (i % 4) {
        case 0:
            v[i] = (int)((i / 4) % (size_t)c->size) == c->rank ? nan("") : 1.0;
            if (isnan(v[i])) {
                uint64_t bits;
                memcpy(&bits, &v[i], sizeof bits);
                bits |= (uint64_t)(c->rank + 1) << 8;
                memcpy(&v[i], &bits, sizeof bits);
            }
            break;
        case 1:
            v[i] = -0.0;
            break;
        case 2:
            v[i] = c->rank % 2 ? -0.0 : 0.0;
            break;
        default:
            v[i] = (double)((int)i % 13 - 6) * 0.1;
        }
    }
}

static void run_special(struct ctx *x, const struct tcomm *c)
{
    enum { N = 1003 };
    static const struct top *const sops[] = {&ops[2], &ops[0], &ops[1]}; /* SUM MAX MIN */
    double *in = mt_malloc(sizeof(double) * N), *out = mt_malloc(sizeof(double) * N);
    fill_special(c, in, N);
    for (size_t a = 1; a < NALGOS; a++) {
        for (size_t o = 0; o < sizeof sops / sizeof sops[0]; o++) {
            char what[256];
            snprintf(what, sizeof what,
                     "np=%d comm=%s(size %d) alg=%s type=MPI_DOUBLE op=%s "
                     "count=%d (NaN and signed zeros)",
                     x->wsize, c->name, c->size, algos[a], sops[o]->name, N);
            sampi_comm_set_algorithm(c->comm, algos[a]);
            int rc = MPI_Allreduce(in, out, N, MPI_DOUBLE, sops[o]->op, c->comm);
            if (rc != MPI_SUCCESS)
                mt_fail(&x->st, "%s: MPI_Allreduce returned %d", what, rc);
            for (size_t i = 0; sops[o]->is_sum && i < N; i += 4)
                if (!isnan(out[i])) {
                    mt_fail(&x->st, "%s: element %zu is %g, expected a NaN", what, i, out[i]);
                    break;
                }
            mt_close_case(&x->st, c->comm, mt_hash(MT_HASH_SEED, out, sizeof(double) * N), what);
        }
    }
    free(in);
    free(out);
}

/* ------------------------------------------------------------ deep steps */

/* The --deep case: every step of `ring` carries DEEP_SEGMENTS segments of
 * DEEP_SEGMENT_BYTES, more than any libfabric provider queue here holds (shm
 * 1024 operations, tcp;ofi_rxm 2048). */
#define DEEP_SEGMENTS      2400
#define DEEP_SEGMENT_BYTES 1024

/* Rank r's element i: a small integer, so that the sum is exact in any order
 * and can be computed here without communication. */
static double deep_value(int r, size_t i)
{
    return (double)((int)((i * 7 + (size_t)r * 13) % 1001) - 500);
}

static void run_deep_algo(struct ctx *x, const struct tcomm *c, const char *alg, double *buf,
                          const double *want, size_t count)
{
    char what[256];
    snprintf(what, sizeof what,
             "np=%d netdev=%s comm=%s(size %d) alg=%s type=MPI_DOUBLE op=MPI_SUM count=%zu "
             "(segments of %d bytes, %d per step of ring)",
             x->wsize, x->netdev ? x->netdev : "default", c->name, c->size, alg, count,
             DEEP_SEGMENT_BYTES, DEEP_SEGMENTS);
    for (size_t i = 0; i < count; i++)
        buf[i] = deep_value(c->rank, i);
    sampi_comm_set_algorithm(c->comm, alg);
    int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, MPI_DOUBLE, MPI_SUM, c->comm);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        mt_fail(&x->st, "%s: MPI_Allreduce returned %d (%s)", what, rc, msg);
    }
    const char *ran = sampi_comm_last_algorithm(c->comm);
    if (ran == NULL || strcmp(ran, alg) != 0)
        mt_fail(&x->st, "%s: sampi_comm_last_algorithm says '%s'", what, ran ? ran : "(null)");
    for (size_t i = 0; i < count; i++) {
        if (buf[i] != want[i]) {
            mt_fail(&x->st, "%s: element %zu: got %.17g expected %.17g", what, i, buf[i], want[i]);
            break;
        }
    }
    mt_close_case(&x->st, c->comm, mt_hash(MT_HASH_SEED, buf, count * sizeof(double)), what);
}

/* sampi_segment_bytes is set to DEEP_SEGMENT_BYTES through MPI_T for these
 * calls (the same value on every rank) and restored afterwards.  `rhd` runs
 * on 2 ranks only: with more, a rank can hear from two peers at once, and
 * shm (libfabric 1.17) can then still deadlock on segments of 4 KiB or less
 * (netdev/ofi.c). */
static void run_deep(struct ctx *x, const struct tcomm *c)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    unsigned long long old = 0, seg = DEEP_SEGMENT_BYTES;
    int provided = 0, idx = -1, n = 0;
    int mpit = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    int ok = mpit && MPI_T_cvar_get_index("sampi_segment_bytes", &idx) == MPI_SUCCESS &&
             MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) == MPI_SUCCESS &&
             MPI_T_cvar_read(h, &old) == MPI_SUCCESS && MPI_T_cvar_write(h, &seg) == MPI_SUCCESS;
    if (!ok) {
        mt_fail(&x->st, "--deep: cannot set sampi_segment_bytes through MPI_T");
        mt_close_case(&x->st, c->comm, 0, "deep setup");
        goto out;
    }
    size_t count = (size_t)DEEP_SEGMENTS * (DEEP_SEGMENT_BYTES / sizeof(double)) * (size_t)c->size;
    double *buf = mt_malloc(count * sizeof(double)), *want = mt_malloc(count * sizeof(double));
    for (size_t i = 0; i < count; i++) {
        double s = 0;
        for (int r = 0; r < c->size; r++)
            s += deep_value(r, i);
        want[i] = s;
    }
    run_deep_algo(x, c, "ring", buf, want, count);
    if (c->size == 2)
        run_deep_algo(x, c, "rhd", buf, want, count);
    free(buf);
    free(want);
    MPI_T_cvar_write(h, &old);
out:
    if (h != MPI_T_CVAR_HANDLE_NULL)
        MPI_T_cvar_handle_free(&h);
    if (mpit)
        MPI_T_finalize();
}

/* ------------------------------------------------------------ driver */

static void setup_comm(struct ctx *x, struct tcomm *c)
{
    PMPI_Comm_rank(c->comm, &c->rank);
    PMPI_Comm_size(c->comm, &c->size);
    /* A failing call must be reported by the checks, not abort the job. */
    PMPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    if (x->netdev == NULL)
        return;
    int rc = sampi_comm_set_netdev(c->comm, x->netdev);
    if (rc != MPI_SUCCESS)
        mt_fail(&x->st, "comm=%s: sampi_comm_set_netdev(%s) returned %d", c->name, x->netdev, rc);
}

/* After the matrix ran on `c`: the requested data path is the one in use,
 * and it can no longer be changed. */
static void check_netdev(struct ctx *x, const struct tcomm *c)
{
    char what[128];
    snprintf(what, sizeof what, "np=%d comm=%s(size %d) netdev check", x->wsize, c->name, c->size);
    if (x->netdev != NULL && c->size > 1) {
        const char *nd = sampi_comm_netdev(c->comm);
        if (nd == NULL || strcmp(nd, x->netdev) != 0)
            mt_fail(&x->st, "%s: sampi_comm_netdev says '%s', requested '%s'", what,
                    nd ? nd : "(null)", x->netdev);
        int rc = sampi_comm_set_netdev(c->comm, "mpi"), cls = rc;
        if (rc != MPI_SUCCESS)
            MPI_Error_class(rc, &cls);
        if (cls != MPI_ERR_OTHER)
            mt_fail(&x->st,
                    "%s: sampi_comm_set_netdev after first use returned class %d, "
                    "expected MPI_ERR_OTHER",
                    what, cls);
    }
    mt_close_case(&x->st, c->comm, 0, what);
}

int main(int argc, char **argv)
{
    struct ctx x = {0};
    MPI_Init(&argc, &argv);
    mt_init(&x.st, "allreduce_matrix");
    x.quick = mt_has_flag(argc, argv, "--quick");
    x.shape = mt_has_flag(argc, argv, "--shape");
    int deep = mt_has_flag(argc, argv, "--deep");
    x.netdev = mt_option(argc, argv, "--netdev", NULL);
    PMPI_Comm_size(MPI_COMM_WORLD, &x.wsize);

    int wrank = x.st.rank;
    struct tcomm comms[3] = {{MPI_COMM_WORLD, "world", 0, 0, 1},
                             {MPI_COMM_NULL, wrank % 2 ? "split-odd" : "split-even", 0, 0, 0},
                             {MPI_COMM_NULL, "dup", 0, 0, 0}};
    PMPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wrank, &comms[1].comm);
    PMPI_Comm_dup(MPI_COMM_WORLD, &comms[2].comm);
    for (int c = 0; c < 3; c++)
        setup_comm(&x, &comms[c]);

    for (int c = 0; c < 3; c++) {
        run_matrix(&x, &comms[c]);
        run_fallbacks(&x, &comms[c]);
        run_special(&x, &comms[c]);
        check_netdev(&x, &comms[c]);
    }
    if (deep)
        run_deep(&x, &comms[0]);

    long cases, failed;
    mt_totals(&x.st, &cases, &failed);
    if (wrank == 0)
        printf("allreduce_matrix: np=%d netdev=%s: %ld cases, %ld failed\n", x.wsize,
               x.netdev ? x.netdev : "default", cases, failed);
    PMPI_Comm_free(&comms[1].comm);
    PMPI_Comm_free(&comms[2].comm);
    MPI_Finalize();
    return mt_exit_code(failed);
}
