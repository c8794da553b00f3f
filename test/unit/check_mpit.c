/*
 * check_mpit.c - SAMPI's MPI_T layer (mpit_registry.c) against a fake
 * PMPI_T layer: index shifting in every index-taking or index-returning call,
 * routing of handles, enums and sessions by membership, per-handle counter
 * semantics, refused writes, init nesting; and the registry's own tables
 * (every cvar has MPI_T metadata, every override has a field).  No MPI runs:
 * only MPI's types and constants are used.
 */
#include "comm.h"
#include "config.h"
#include "mpit_registry.h"
#include "pvars.h"
#include "stats.h"
#include "suites.h"
#include "wait_mode.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the fake layer */

#define FAKE_CVARS 3
#define FAKE_PVARS 2
#define FAKE_CATS  2

static const char *const fake_cvar_names[FAKE_CVARS] = {"n_alpha", "n_beta", "n_gamma"};
static const char *const fake_pvar_names[FAKE_PVARS] = {"n_p0", "n_p1"};
static const char *const fake_cat_names[FAKE_CATS] = {"n_cat0", "n_cat1"};
static const int fake_cat_cvars[FAKE_CATS][2] = {{1, 2}, {0, -1}};
static const int fake_cat_ncvars[FAKE_CATS] = {2, 1};
static const int fake_cat_npvars[FAKE_CATS] = {1, 0};
static const int fake_cat_ncats[FAKE_CATS] = {0, 1};

static int fake_cvar_handles[FAKE_CVARS];
static int fake_pvar_handles[FAKE_PVARS];
static int fake_session_objs[8], fake_sessions;
static int fake_enum_obj;
static int native_inits, native_finalizes;
static MPI_T_pvar_handle last_start, last_stop, last_reset;
static int starts, stops, resets;
static const void *last_enum_seen;

static void copy_name(char *dst, int *len, const char *src)
{
    if (len && *len > 0 && dst)
        snprintf(dst, (size_t)*len, "%s", src);
    if (len)
        *len = (int)strlen(src) + 1;
}

static int f_init_thread(int required, int *provided)
{
    native_inits++;
    *provided = required;
    return MPI_SUCCESS;
}

static int f_finalize(void)
{
    native_finalizes++;
    return MPI_SUCCESS;
}

static int f_cvar_get_num(int *n)
{
    *n = FAKE_CVARS;
    return MPI_SUCCESS;
}

static int f_cvar_get_info(int i, char *name, int *name_len, int *verbosity, MPI_Datatype *dt,
                           MPI_T_enum *e, char *desc, int *desc_len, int *bind, int *scope)
{
    if (i < 0 || i >= FAKE_CVARS)
        return MPI_T_ERR_INVALID_INDEX;
    copy_name(name, name_len, fake_cvar_names[i]);
    copy_name(desc, desc_len, "native");
    if (e)
        *e = (MPI_T_enum)(void *)&fake_enum_obj;
    if (bind)
        *bind = MPI_T_BIND_NO_OBJECT;
    return MPI_SUCCESS;
}

/* The fake native lookups by name: NAMES[0..n-1]. */
static int fake_index(const char *const *names, int n, const char *name, int *idx)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) {
            *idx = i;
            return MPI_SUCCESS;
        }
    return MPI_T_ERR_INVALID_NAME;
}

static int f_cvar_get_index(const char *name, int *idx)
{
    return fake_index(fake_cvar_names, FAKE_CVARS, name, idx);
}

static int f_cvar_handle_alloc(int i, void *obj, MPI_T_cvar_handle *h, int *count)
{
    if (i < 0 || i >= FAKE_CVARS)
        return MPI_T_ERR_INVALID_INDEX;
    *h = (MPI_T_cvar_handle)(void *)&fake_cvar_handles[i];
    *count = 1;
    return MPI_SUCCESS;
}

static int fake_cvar_index(MPI_T_cvar_handle h)
{
    for (int i = 0; i < FAKE_CVARS; i++)
        if ((void *)h == (void *)&fake_cvar_handles[i])
            return i;
    return -1;
}

static int f_cvar_handle_free(MPI_T_cvar_handle *h)
{
    if (fake_cvar_index(*h) < 0)
        return MPI_T_ERR_INVALID_HANDLE;
    *h = MPI_T_CVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

static int f_cvar_read(MPI_T_cvar_handle h, void *buf)
{
    int i = fake_cvar_index(h);
    if (i < 0)
        return MPI_T_ERR_INVALID_HANDLE;
    *(int *)buf = 100 + i;
    return MPI_SUCCESS;
}

static int f_cvar_write(MPI_T_cvar_handle h, const void *buf)
{
    return fake_cvar_index(h) < 0 ? MPI_T_ERR_INVALID_HANDLE : MPI_SUCCESS;
}

static int f_category_get_num(int *n)
{
    *n = FAKE_CATS;
    return MPI_SUCCESS;
}

static int f_category_get_info(int i, char *name, int *name_len, char *desc, int *desc_len, int *nc,
                               int *np, int *ncat)
{
    if (i < 0 || i >= FAKE_CATS)
        return MPI_T_ERR_INVALID_INDEX;
    copy_name(name, name_len, fake_cat_names[i]);
    copy_name(desc, desc_len, "native category");
    *nc = fake_cat_ncvars[i];
    *np = fake_cat_npvars[i];
    *ncat = fake_cat_ncats[i];
    return MPI_SUCCESS;
}

static int f_category_get_index(const char *name, int *idx)
{
    return fake_index(fake_cat_names, FAKE_CATS, name, idx);
}

static int f_category_get_cvars(int i, int len, int idx[])
{
    for (int k = 0; k < len && k < fake_cat_ncvars[i]; k++)
        idx[k] = fake_cat_cvars[i][k];
    return MPI_SUCCESS;
}

static int f_category_get_pvars(int i, int len, int idx[])
{
    for (int k = 0; k < len && k < fake_cat_npvars[i]; k++)
        idx[k] = 0;
    return MPI_SUCCESS;
}

static int f_category_get_categories(int i, int len, int idx[])
{
    for (int k = 0; k < len && k < fake_cat_ncats[i]; k++)
        idx[k] = 0;
    return MPI_SUCCESS;
}

static int f_category_changed(int *stamp)
{
    *stamp = 42;
    return MPI_SUCCESS;
}

static int f_pvar_get_num(int *n)
{
    *n = FAKE_PVARS;
    return MPI_SUCCESS;
}

static int f_pvar_get_info(int i, char *name, int *name_len, int *verbosity, int *var_class,
                           MPI_Datatype *dt, MPI_T_enum *e, char *desc, int *desc_len, int *bind,
                           int *readonly, int *continuous, int *atomic)
{
    if (i < 0 || i >= FAKE_PVARS)
        return MPI_T_ERR_INVALID_INDEX;
    copy_name(name, name_len, fake_pvar_names[i]);
    if (var_class)
        *var_class = MPI_T_PVAR_CLASS_COUNTER;
    return MPI_SUCCESS;
}

static int f_pvar_get_index(const char *name, int var_class, int *idx)
{
    if (var_class != MPI_T_PVAR_CLASS_COUNTER) /* the fakes are all counters */
        return MPI_T_ERR_INVALID_NAME;
    return fake_index(fake_pvar_names, FAKE_PVARS, name, idx);
}

static int f_session_create(MPI_T_pvar_session *s)
{
    *s = (MPI_T_pvar_session)(void *)&fake_session_objs[fake_sessions++ % 8];
    return MPI_SUCCESS;
}

static int f_session_free(MPI_T_pvar_session *s)
{
    *s = MPI_T_PVAR_SESSION_NULL;
    return MPI_SUCCESS;
}

static int fake_pvar_index(MPI_T_pvar_handle h)
{
    for (int i = 0; i < FAKE_PVARS; i++)
        if ((void *)h == (void *)&fake_pvar_handles[i])
            return i;
    return -1;
}

static int f_pvar_handle_alloc(MPI_T_pvar_session s, int i, void *obj, MPI_T_pvar_handle *h,
                               int *count)
{
    if (i < 0 || i >= FAKE_PVARS)
        return MPI_T_ERR_INVALID_INDEX;
    *h = (MPI_T_pvar_handle)(void *)&fake_pvar_handles[i];
    *count = 1;
    return MPI_SUCCESS;
}

static int f_pvar_handle_free(MPI_T_pvar_session s, MPI_T_pvar_handle *h)
{
    if (fake_pvar_index(*h) < 0)
        return MPI_T_ERR_INVALID_HANDLE;
    *h = MPI_T_PVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

static int f_pvar_start(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    starts++;
    last_start = h;
    return MPI_SUCCESS;
}

static int f_pvar_stop(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    stops++;
    last_stop = h;
    return MPI_SUCCESS;
}

static int f_pvar_read(MPI_T_pvar_session s, MPI_T_pvar_handle h, void *buf)
{
    if (fake_pvar_index(h) < 0)
        return MPI_T_ERR_INVALID_HANDLE;
    *(unsigned long long *)buf = 7;
    return MPI_SUCCESS;
}

static int f_pvar_write(MPI_T_pvar_session s, MPI_T_pvar_handle h, const void *buf)
{
    return fake_pvar_index(h) < 0 ? MPI_T_ERR_INVALID_HANDLE : MPI_SUCCESS;
}

static int f_pvar_reset(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    resets++;
    last_reset = h;
    return MPI_SUCCESS;
}

static int f_pvar_readreset(MPI_T_pvar_session s, MPI_T_pvar_handle h, void *buf)
{
    return MPI_T_ERR_INVALID_HANDLE; /* as Open MPI 4.1's, which always fails */
}

static int f_enum_get_info(MPI_T_enum e, int *num, char *name, int *name_len)
{
    last_enum_seen = (const void *)e;
    if ((void *)e != (void *)&fake_enum_obj)
        return MPI_T_ERR_INVALID_HANDLE;
    *num = 1;
    copy_name(name, name_len, "n_enum");
    return MPI_SUCCESS;
}

static int f_enum_get_item(MPI_T_enum e, int i, int *value, char *name, int *name_len)
{
    last_enum_seen = (const void *)e;
    return MPI_T_ERR_INVALID_ITEM;
}

/* A communicator "handle" of the fake layer is the address of a state. */
static int f_comm_state(void *obj, struct sampi_comm **c)
{
    MPI_Comm comm = *(MPI_Comm *)obj;
    if (comm == MPI_COMM_NULL)
        return MPI_T_ERR_INVALID_HANDLE;
    *c = (struct sampi_comm *)(void *)comm;
    return MPI_SUCCESS;
}

static int f_mpi_finalized(void)
{
    return 0;
}

static const struct sampi_mpit_native fake = {
    .init_thread = f_init_thread,
    .finalize = f_finalize,
    .cvar_get_num = f_cvar_get_num,
    .cvar_get_info = f_cvar_get_info,
    .cvar_get_index = f_cvar_get_index,
    .cvar_handle_alloc = f_cvar_handle_alloc,
    .cvar_handle_free = f_cvar_handle_free,
    .cvar_read = f_cvar_read,
    .cvar_write = f_cvar_write,
    .category_get_num = f_category_get_num,
    .category_get_info = f_category_get_info,
    .category_get_index = f_category_get_index,
    .category_get_cvars = f_category_get_cvars,
    .category_get_pvars = f_category_get_pvars,
    .category_get_categories = f_category_get_categories,
    .category_changed = f_category_changed,
    .pvar_get_num = f_pvar_get_num,
    .pvar_get_info = f_pvar_get_info,
    .pvar_get_index = f_pvar_get_index,
    .pvar_session_create = f_session_create,
    .pvar_session_free = f_session_free,
    .pvar_handle_alloc = f_pvar_handle_alloc,
    .pvar_handle_free = f_pvar_handle_free,
    .pvar_start = f_pvar_start,
    .pvar_stop = f_pvar_stop,
    .pvar_read = f_pvar_read,
    .pvar_write = f_pvar_write,
    .pvar_reset = f_pvar_reset,
    .pvar_readreset = f_pvar_readreset,
    .enum_get_info = f_enum_get_info,
    .enum_get_item = f_enum_get_item,
    .comm_state = f_comm_state,
    .mpi_finalized = f_mpi_finalized,
};

static struct sampi_comm *fake_comm(int size, MPI_Comm *handle)
{
    struct sampi_comm *c = calloc(1, sizeof(*c));
    ck_assert_ptr_nonnull(c);
    c->size = size;
    c->forced_algo = c->forced_netdev = -1;
    atomic_store(&c->last_algo, -1);
    *handle = (MPI_Comm)(void *)c;
    return c;
}

static void setup(void)
{
    int provided;
    sampi_config_load();
    ck_assert_int_eq(sampi_mpit_init_thread(&fake, MPI_THREAD_MULTIPLE, &provided), MPI_SUCCESS);
}

static int K(void)
{
    return sampi_mpit_num_cvars();
}

#define P SAMPI_PVAR__COUNT

static int cvar_index(const char *name)
{
    int i = -1;
    ck_assert_int_eq(sampi_mpit_cvar_get_index(&fake, name, &i), MPI_SUCCESS);
    return i;
}

static int pvar_index(const char *name, int var_class)
{
    int i = -1;
    ck_assert_int_eq(sampi_mpit_pvar_get_index(&fake, name, var_class, &i), MPI_SUCCESS);
    return i;
}

/* ------------------------------------------------------------ the registry */

START_TEST(every_cvar_has_mpit_metadata)
{
    int overrides = 0;
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++) {
        ck_assert_msg(sampi_cvar_infos[id].present, "sampi_%s has no SAMPI_CVAR_INFO line",
                      sampi_cvar_descs[id].name);
        if (sampi_cvar_infos[id].comm == SAMPI_CVAR_COMM_NONE)
            continue;
        overrides++;
        struct sampi_comm c;
        ck_assert_msg(sampi_comm_override(&c, id) != NULL,
                      "sampi_%s names an override but comm.h has no field for it",
                      sampi_cvar_descs[id].name);
        ck_assert_int_eq(sampi_cvar_descs[id].type, SAMPI_CVAR_TYPE_ENUM);
    }
    ck_assert_int_eq(K(), SAMPI_CVAR__COUNT + overrides);
    /* Algorithm choice shapes the message pattern: all ranks must agree. */
    ck_assert_int_eq(sampi_cvar_infos[SAMPI_CVAR_ALGORITHM].scope, MPI_T_SCOPE_ALL_EQ);
    ck_assert_int_ne(sampi_cvar_infos[SAMPI_CVAR_ALGORITHM].comm, SAMPI_CVAR_COMM_NONE);
}
END_TEST

/* sampi_info's listing shows one line per variable: name, value, default and
 * this summary, so it must exist, be one line, and stay short. */
static void check_summary(const char *name, const char *summary)
{
    ck_assert_msg(summary && summary[0], "%s has no summary", name);
    size_t len = strlen(summary);
    ck_assert_msg(len <= 70, "%s: summary of %zu characters (at most 70)", name, len);
    ck_assert_msg(!strpbrk(summary, "\n\t"), "%s: summary is not one line", name);
    ck_assert_msg(summary[len - 1] != '.', "%s: summary ends with a full stop", name);
}

START_TEST(every_variable_has_a_summary)
{
    setup();
    for (int i = 0; i < K(); i++) {
        char name[256];
        int nlen = sizeof(name);
        ck_assert_int_eq(sampi_mpit_cvar_get_info(&fake, i, name, &nlen, NULL, NULL, NULL, NULL,
                                                  NULL, NULL, NULL),
                         MPI_SUCCESS);
        struct sampi_mpit_cvar_doc doc;
        ck_assert_int_eq(sampi_mpit_cvar_doc(name, &doc), 0);
        check_summary(name, doc.summary);
    }
    for (int i = 0; i < SAMPI_PVAR__COUNT; i++) {
        ck_assert_msg(sampi_pvar_summaries[i], "%s has no SAMPI_PVAR_SUMMARY line",
                      sampi_pvar_descs[i].name);
        check_summary(sampi_pvar_descs[i].name, sampi_mpit_pvar_summary(sampi_pvar_descs[i].name));
    }
    ck_assert_ptr_null(sampi_mpit_pvar_summary("sampi_no_such_variable"));
}
END_TEST

START_TEST(types_come_from_the_allowed_set)
{
    setup();
    for (int i = 0; i < K(); i++) {
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        ck_assert_int_eq(
            sampi_mpit_cvar_get_info(&fake, i, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, NULL),
            MPI_SUCCESS);
        ck_assert(dt == MPI_INT || dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_CHAR);
    }
    /* INT variables travel as MPI_INT: their range must fit it (-1 is allowed
     * as "none", e.g. sampi_stragglar_rank) */
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++)
        if (sampi_cvar_descs[id].type == SAMPI_CVAR_TYPE_INT)
            ck_assert(sampi_cvar_descs[id].max <= INT32_MAX &&
                      sampi_cvar_descs[id].min >= INT32_MIN);
    for (int i = 0; i < P; i++) {
        const struct sampi_pvar_desc *d = &sampi_pvar_descs[i];
        ck_assert_msg(strncmp(d->name, "sampi_", 6) == 0, "%s", d->name);
        /* per-handle counter arithmetic is done in uint64_t */
        if (d->kind == SAMPI_PVAR_SESSION)
            ck_assert_int_eq(d->type, SAMPI_PVAR_TYPE_ULL);
        if (d->var_class == MPI_T_PVAR_CLASS_STATE)
            ck_assert_int_eq(d->type, SAMPI_PVAR_TYPE_INT);
    }
}
END_TEST

/* ------------------------------------------------------------ init nesting */

START_TEST(init_nesting)
{
    int n = 0, provided = 0;
    ck_assert_int_eq(sampi_mpit_cvar_get_num(&fake, &n), MPI_T_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(sampi_mpit_finalize(&fake), MPI_T_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(sampi_mpit_init_thread(&fake, MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_init_thread(&fake, MPI_THREAD_SINGLE, &provided), MPI_SUCCESS);
    ck_assert_int_eq(native_inits, 2);
    ck_assert_int_eq(sampi_mpit_finalize(&fake), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_cvar_get_num(&fake, &n), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_finalize(&fake), MPI_SUCCESS);
    ck_assert_int_eq(native_finalizes, 2);
    ck_assert_int_eq(sampi_mpit_cvar_get_num(&fake, &n), MPI_T_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(sampi_mpit_pvar_get_num(&fake, &n), MPI_T_ERR_NOT_INITIALIZED);
    ck_assert_int_eq(sampi_mpit_category_get_num(&fake, &n), MPI_T_ERR_NOT_INITIALIZED);
}
END_TEST

/* ------------------------------------------------------------ indices */

START_TEST(cvar_indices_ours_first_native_shifted)
{
    setup();
    int n = 0;
    char name[128];
    ck_assert_int_eq(sampi_mpit_cvar_get_num(&fake, &n), MPI_SUCCESS);
    ck_assert_int_eq(n, K() + FAKE_CVARS);
    for (int i = 0; i < n; i++) {
        int len = sizeof(name), bind = -1;
        ck_assert_int_eq(sampi_mpit_cvar_get_info(&fake, i, name, &len, NULL, NULL, NULL, NULL,
                                                  NULL, &bind, NULL),
                         MPI_SUCCESS);
        ck_assert_int_eq(len, (int)strlen(name) + 1);
        if (i < K())
            ck_assert_msg(strncmp(name, "sampi_", 6) == 0, "%d: %s", i, name);
        else
            ck_assert_str_eq(name, fake_cvar_names[i - K()]);
        ck_assert_int_eq(cvar_index(name), i);
    }
    ck_assert_int_eq(cvar_index("sampi_algorithm"), SAMPI_CVAR_ALGORITHM);
    int i = 0;
    ck_assert_int_eq(sampi_mpit_cvar_get_index(&fake, "nope", &i), MPI_T_ERR_INVALID_NAME);
    ck_assert_int_eq(
        sampi_mpit_cvar_get_info(&fake, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        MPI_T_ERR_INVALID_INDEX);
    ck_assert_int_eq(
        sampi_mpit_cvar_get_info(&fake, -1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        MPI_T_ERR_INVALID_INDEX);

    /* The MPI_T string convention: a short buffer is truncated, *len says
     * what was used; *len == 0 only asks for the length. */
    int len = 4;
    ck_assert_int_eq(
        sampi_mpit_cvar_get_info(&fake, 0, name, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        MPI_SUCCESS);
    ck_assert_str_eq(name, "sam");
    ck_assert_int_eq(len, 4);
    len = 0;
    sampi_mpit_cvar_get_info(&fake, 0, NULL, &len, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    ck_assert_int_eq(len, (int)strlen("sampi_algorithm") + 1);
}
END_TEST

START_TEST(pvar_indices_ours_first_native_shifted)
{
    setup();
    int n = 0;
    ck_assert_int_eq(sampi_mpit_pvar_get_num(&fake, &n), MPI_SUCCESS);
    ck_assert_int_eq(n, P + FAKE_PVARS);
    for (int i = 0; i < n; i++) {
        char name[128];
        int len = sizeof(name), cls = -1;
        ck_assert_int_eq(sampi_mpit_pvar_get_info(&fake, i, name, &len, NULL, &cls, NULL, NULL,
                                                  NULL, NULL, NULL, NULL, NULL, NULL),
                         MPI_SUCCESS);
        ck_assert_int_eq(pvar_index(name, cls), i);
    }
    int i;
    ck_assert_int_eq(
        sampi_mpit_pvar_get_index(&fake, "sampi_comm_calls", MPI_T_PVAR_CLASS_STATE, &i),
        MPI_T_ERR_INVALID_NAME);
    ck_assert_int_eq(sampi_mpit_pvar_get_info(&fake, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                              NULL, NULL, NULL, NULL, NULL),
                     MPI_T_ERR_INVALID_INDEX);
}
END_TEST

START_TEST(categories_shift_every_index)
{
    setup();
    int n = 0, nc, np, ncat, idx[8], stamp = 0;
    char name[64];
    int len = sizeof(name);
    ck_assert_int_eq(sampi_mpit_category_get_num(&fake, &n), MPI_SUCCESS);
    ck_assert_int_eq(n, 1 + FAKE_CATS);
    ck_assert_int_eq(
        sampi_mpit_category_get_info(&fake, 0, name, &len, NULL, NULL, &nc, &np, &ncat),
        MPI_SUCCESS);
    ck_assert_str_eq(name, "sampi");
    ck_assert_int_eq(nc, K());
    ck_assert_int_eq(np, P);
    ck_assert_int_eq(ncat, 0);
    /* as many as there are: more than 64 cvars already (with their
     * per-communicator variants) */
    int *all = malloc(sizeof(int) * (size_t)(nc > np ? nc : np));
    ck_assert_ptr_nonnull(all);
    ck_assert_int_eq(sampi_mpit_category_get_cvars(&fake, 0, nc, all), MPI_SUCCESS);
    for (int i = 0; i < nc; i++)
        ck_assert_int_eq(all[i], i);
    ck_assert_int_eq(sampi_mpit_category_get_pvars(&fake, 0, np, all), MPI_SUCCESS);
    for (int i = 0; i < np; i++)
        ck_assert_int_eq(all[i], i);
    free(all);

    int i = -1;
    ck_assert_int_eq(sampi_mpit_category_get_index(&fake, "sampi", &i), MPI_SUCCESS);
    ck_assert_int_eq(i, 0);
    ck_assert_int_eq(sampi_mpit_category_get_index(&fake, "n_cat0", &i), MPI_SUCCESS);
    ck_assert_int_eq(i, 1);
    len = sizeof(name);
    ck_assert_int_eq(
        sampi_mpit_category_get_info(&fake, 2, name, &len, NULL, NULL, &nc, &np, &ncat),
        MPI_SUCCESS);
    ck_assert_str_eq(name, "n_cat1");
    ck_assert_int_eq(sampi_mpit_category_get_cvars(&fake, 1, 8, idx), MPI_SUCCESS);
    ck_assert_int_eq(idx[0], 1 + K());
    ck_assert_int_eq(idx[1], 2 + K());
    ck_assert_int_eq(sampi_mpit_category_get_pvars(&fake, 1, 8, idx), MPI_SUCCESS);
    ck_assert_int_eq(idx[0], P);
    ck_assert_int_eq(sampi_mpit_category_get_categories(&fake, 2, 8, idx), MPI_SUCCESS);
    ck_assert_int_eq(idx[0], 1);
    ck_assert_int_eq(
        sampi_mpit_category_get_info(&fake, 3, NULL, NULL, NULL, NULL, &nc, &np, &ncat),
        MPI_T_ERR_INVALID_INDEX);
    ck_assert_int_eq(sampi_mpit_category_changed(&fake, &stamp), MPI_SUCCESS);
    ck_assert_int_eq(stamp, 42);
}
END_TEST

/* ------------------------------------------------------------ cvars */

static MPI_T_cvar_handle alloc_cvar(const char *name, void *obj, int *count)
{
    MPI_T_cvar_handle h = MPI_T_CVAR_HANDLE_NULL;
    int n = 0;
    ck_assert_int_eq(sampi_mpit_cvar_handle_alloc(&fake, cvar_index(name), obj, &h, &n),
                     MPI_SUCCESS);
    if (count)
        *count = n;
    return h;
}

START_TEST(cvar_read_write_and_refusals)
{
    setup();
    MPI_T_cvar_handle seg = alloc_cvar("sampi_segment_bytes", NULL, NULL);
    unsigned long long u = 0;
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, seg, &u), MPI_SUCCESS);
    ck_assert_int_eq(u, 256 * 1024);
    u = 1 << 20;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, seg, &u), MPI_SUCCESS);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_SEGMENT_BYTES), 1 << 20);
    u = 100; /* below the minimum */
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, seg, &u), MPI_T_ERR_INVALID);
    u = ~0ULL;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, seg, &u), MPI_T_ERR_INVALID);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_SEGMENT_BYTES), 1 << 20);

    MPI_T_cvar_handle algo = alloc_cvar("sampi_algorithm", NULL, NULL);
    int v = SAMPI_ALGO_RING;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, algo, &v), MPI_SUCCESS);
    v = -1;
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, algo, &v), MPI_SUCCESS);
    ck_assert_int_eq(v, SAMPI_ALGO_RING);
    v = SAMPI_ALGO__COUNT;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, algo, &v), MPI_T_ERR_INVALID);
    v = -1;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, algo, &v), MPI_T_ERR_INVALID);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_ALGORITHM), SAMPI_ALGO_RING);

    MPI_T_cvar_handle timeout = alloc_cvar("sampi_timeout_ms", NULL, NULL);
    v = -5;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, timeout, &v), MPI_T_ERR_INVALID);
    MPI_T_cvar_handle poll = alloc_cvar("sampi_busy_poll", NULL, NULL);
    v = SAMPI_WAIT__COUNT;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, poll, &v), MPI_T_ERR_INVALID);
    v = SAMPI_WAIT_POLL;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, poll, &v), MPI_SUCCESS);
    ck_assert_int_eq(sampi_cvar_int(SAMPI_CVAR_BUSY_POLL), SAMPI_WAIT_POLL);

    int count = 0;
    MPI_T_cvar_handle prov = alloc_cvar("sampi_ofi_provider", NULL, &count);
    ck_assert_int_eq(count, SAMPI_CVAR_STRING_MAX);
    char text[SAMPI_CVAR_STRING_MAX];
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, prov, "tcp;ofi_rxm"), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, prov, text), MPI_SUCCESS);
    ck_assert_str_eq(text, "tcp;ofi_rxm");
    MPI_T_cvar_handle pin = alloc_cvar("sampi_pin", NULL, NULL);
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, pin, "0-"), MPI_T_ERR_INVALID);
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, pin, text), MPI_SUCCESS);
    ck_assert_str_eq(text, "auto");

    ck_assert_int_eq(sampi_mpit_cvar_handle_free(&fake, &seg), MPI_SUCCESS);
    ck_assert_ptr_null(seg);
}
END_TEST

START_TEST(per_comm_variant_sets_the_override)
{
    setup();
    MPI_Comm comm, other;
    struct sampi_comm *c = fake_comm(4, &comm);
    struct sampi_comm *d = fake_comm(4, &other);
    int count = 0, bind = -1, scope = -1;
    int idx = cvar_index("sampi_comm_algorithm");
    ck_assert_int_eq(sampi_mpit_cvar_get_info(&fake, idx, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                              &bind, &scope),
                     MPI_SUCCESS);
    ck_assert_int_eq(bind, MPI_T_BIND_MPI_COMM);
    ck_assert_int_eq(scope, MPI_T_SCOPE_ALL_EQ);
    MPI_T_cvar_handle h = alloc_cvar("sampi_comm_algorithm", &comm, &count);
    ck_assert_int_eq(count, 1);
    int v = SAMPI_ALGO_RHD;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, h, &v), MPI_SUCCESS);
    ck_assert_int_eq(c->forced_algo, SAMPI_ALGO_RHD);
    ck_assert_int_eq(d->forced_algo, -1);
    ck_assert_int_eq(sampi_comm_algorithm_setting(c), SAMPI_ALGO_RHD);
    v = SAMPI_ALGO__COUNT;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, h, &v), MPI_T_ERR_INVALID);
    v = -2;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, h, &v), MPI_T_ERR_INVALID);
    ck_assert_int_eq(c->forced_algo, SAMPI_ALGO_RHD);
    v = -1;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, h, &v), MPI_SUCCESS);
    ck_assert_int_eq(c->forced_algo, -1);
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, h, &v), MPI_SUCCESS);
    ck_assert_int_eq(v, -1);

    MPI_T_cvar_handle nd = alloc_cvar("sampi_comm_netdev", &comm, NULL);
    v = SAMPI_NETDEV_MPI;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, nd, &v), MPI_SUCCESS);
    ck_assert_int_eq(c->forced_netdev, SAMPI_NETDEV_MPI);
    c->nd_tried = 1; /* the data path has been opened */
    v = SAMPI_NETDEV_OFI;
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, nd, &v), MPI_T_ERR_CVAR_SET_NOT_NOW);
    ck_assert_int_eq(c->forced_netdev, SAMPI_NETDEV_MPI);

    MPI_T_cvar_handle none;
    int n;
    ck_assert_int_eq(sampi_mpit_cvar_handle_alloc(&fake, idx, NULL, &none, &n),
                     MPI_T_ERR_INVALID_HANDLE);
    MPI_Comm null = MPI_COMM_NULL;
    ck_assert_int_eq(sampi_mpit_cvar_handle_alloc(&fake, idx, &null, &none, &n),
                     MPI_T_ERR_INVALID_HANDLE);
    free(c);
    free(d);
}
END_TEST

START_TEST(handles_route_by_membership)
{
    setup();
    MPI_T_cvar_handle native = MPI_T_CVAR_HANDLE_NULL;
    int count = 0, v = 0;
    ck_assert_int_eq(sampi_mpit_cvar_handle_alloc(&fake, K() + 1, NULL, &native, &count),
                     MPI_SUCCESS);
    ck_assert_ptr_eq((void *)native, (void *)&fake_cvar_handles[1]);
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, native, &v), MPI_SUCCESS);
    ck_assert_int_eq(v, 101);
    ck_assert_int_eq(sampi_mpit_cvar_handle_free(&fake, &native), MPI_SUCCESS);
    ck_assert_ptr_null(native);

    /* Unknown pointers are passed down, never dereferenced (0x10 would
     * crash the test if they were). */
    MPI_T_cvar_handle junk = (MPI_T_cvar_handle)(uintptr_t)0x10;
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, junk, &v), MPI_T_ERR_INVALID_HANDLE);
    ck_assert_int_eq(sampi_mpit_cvar_write(&fake, junk, &v), MPI_T_ERR_INVALID_HANDLE);
    ck_assert_int_eq(sampi_mpit_cvar_handle_free(&fake, &junk), MPI_T_ERR_INVALID_HANDLE);

    /* A freed handle of ours is no longer ours. */
    MPI_T_cvar_handle ours = alloc_cvar("sampi_verbose", NULL, NULL), stale = ours;
    ck_assert_int_eq(sampi_mpit_cvar_handle_free(&fake, &ours), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_cvar_read(&fake, stale, &v), MPI_T_ERR_INVALID_HANDLE);

    MPI_T_pvar_session s;
    ck_assert_int_eq(sampi_mpit_pvar_session_create(&fake, &s), MPI_SUCCESS);
    MPI_T_pvar_handle pj = (MPI_T_pvar_handle)(uintptr_t)0x20;
    unsigned long long x;
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, pj, &x), MPI_T_ERR_INVALID_HANDLE);
    MPI_T_pvar_handle pn;
    ck_assert_int_eq(sampi_mpit_pvar_handle_alloc(&fake, s, P + 1, NULL, &pn, &count), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, pn, &x), MPI_SUCCESS);
    ck_assert_int_eq(x, 7);
    ck_assert_int_eq(sampi_mpit_pvar_readreset(&fake, s, pn, &x), MPI_T_ERR_INVALID_HANDLE);
    ck_assert_int_eq(sampi_mpit_pvar_handle_free(&fake, s, &pn), MPI_SUCCESS);
}
END_TEST

START_TEST(enums_route_by_membership)
{
    setup();
    MPI_T_enum e = MPI_T_ENUM_NULL;
    ck_assert_int_eq(sampi_mpit_cvar_get_info(&fake, SAMPI_CVAR_ALGORITHM, NULL, NULL, NULL, NULL,
                                              &e, NULL, NULL, NULL, NULL),
                     MPI_SUCCESS);
    int num = 0, value = -9, len;
    char name[64];
    len = sizeof(name);
    ck_assert_int_eq(sampi_mpit_enum_get_info(&fake, e, &num, name, &len), MPI_SUCCESS);
    ck_assert_int_eq(num, SAMPI_ALGO__COUNT);
    ck_assert_str_eq(name, "sampi_algorithm");
    for (int i = 0; i < num; i++) {
        len = sizeof(name);
        ck_assert_int_eq(sampi_mpit_enum_get_item(&fake, e, i, &value, name, &len), MPI_SUCCESS);
        ck_assert_int_eq(value, i);
        ck_assert_str_eq(name, sampi_algos[i].name);
    }
    ck_assert_int_eq(sampi_mpit_enum_get_item(&fake, e, num, &value, name, &len),
                     MPI_T_ERR_INVALID_ITEM);

    ck_assert_int_eq(sampi_mpit_cvar_get_info(&fake, cvar_index("sampi_comm_algorithm"), NULL, NULL,
                                              NULL, NULL, &e, NULL, NULL, NULL, NULL),
                     MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_enum_get_info(&fake, e, &num, NULL, NULL), MPI_SUCCESS);
    ck_assert_int_eq(num, SAMPI_ALGO__COUNT + 1);
    len = sizeof(name);
    ck_assert_int_eq(sampi_mpit_enum_get_item(&fake, e, 0, &value, name, &len), MPI_SUCCESS);
    ck_assert_str_eq(name, "inherit");
    ck_assert_int_eq(value, -1);
    len = sizeof(name);
    ck_assert_int_eq(sampi_mpit_enum_get_item(&fake, e, 1 + SAMPI_ALGO_RING, &value, name, &len),
                     MPI_SUCCESS);
    ck_assert_str_eq(name, "ring");
    ck_assert_int_eq(value, SAMPI_ALGO_RING);

    ck_assert_int_eq(sampi_mpit_cvar_get_info(&fake, SAMPI_CVAR_VERBOSE, NULL, NULL, NULL, NULL, &e,
                                              NULL, NULL, NULL, NULL),
                     MPI_SUCCESS);
    ck_assert_ptr_eq((void *)e, (void *)MPI_T_ENUM_NULL);

    MPI_T_enum native = (MPI_T_enum)(void *)&fake_enum_obj;
    len = sizeof(name);
    ck_assert_int_eq(sampi_mpit_enum_get_info(&fake, native, &num, name, &len), MPI_SUCCESS);
    ck_assert_str_eq(name, "n_enum");
    MPI_T_enum junk = (MPI_T_enum)(uintptr_t)0x30;
    ck_assert_int_eq(sampi_mpit_enum_get_item(&fake, junk, 0, &value, name, &len),
                     MPI_T_ERR_INVALID_ITEM);
    ck_assert_ptr_eq(last_enum_seen, (void *)junk);
}
END_TEST

/* ------------------------------------------------------------ pvars */

START_TEST(pvar_counters_per_handle_and_all_handles)
{
    setup();
    MPI_Comm comm;
    struct sampi_comm *c = fake_comm(4, &comm);
    sampi_stat_add(&c->stats.calls[SAMPI_ALGO_RING], 5); /* before any handle */
    MPI_T_pvar_session s, other;
    ck_assert_int_eq(sampi_mpit_pvar_session_create(&fake, &s), MPI_SUCCESS);
    MPI_T_pvar_handle h, peers, last;
    int count = 0;
    ck_assert_int_eq(
        sampi_mpit_pvar_handle_alloc(
            &fake, s, pvar_index("sampi_comm_calls", MPI_T_PVAR_CLASS_COUNTER), &comm, &h, &count),
        MPI_SUCCESS);
    ck_assert_int_eq(count, SAMPI_ALGO__COUNT);
    unsigned long long v[SAMPI_ALGO__COUNT];
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 0); /* not started */

    ck_assert_int_eq(sampi_mpit_pvar_start(&fake, s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    ck_assert_int_eq(starts, 1);
    ck_assert_ptr_eq((void *)last_start, (void *)MPI_T_PVAR_ALL_HANDLES);
    sampi_stat_add(&c->stats.calls[SAMPI_ALGO_RING], 3);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 3);
    ck_assert_int_eq(sampi_mpit_pvar_stop(&fake, s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    ck_assert_ptr_eq((void *)last_stop, (void *)MPI_T_PVAR_ALL_HANDLES);
    sampi_stat_add(&c->stats.calls[SAMPI_ALGO_RING], 2); /* while stopped */
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 3);
    ck_assert_int_eq(sampi_mpit_pvar_start(&fake, s, h), MPI_SUCCESS);
    sampi_stat_add(&c->stats.calls[SAMPI_ALGO_RING], 1);
    ck_assert_int_eq(sampi_mpit_pvar_readreset(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 4);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 0);
    for (int i = 0; i < SAMPI_ALGO__COUNT; i++)
        v[i] = 10;
    ck_assert_int_eq(sampi_mpit_pvar_write(&fake, s, h, v), MPI_SUCCESS);
    sampi_stat_add(&c->stats.calls[SAMPI_ALGO_RING], 1);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 11);
    ck_assert_int_eq(v[SAMPI_ALGO_NATIVE], 10);
    ck_assert_int_eq(sampi_mpit_pvar_reset(&fake, s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);
    ck_assert_ptr_eq((void *)last_reset, (void *)MPI_T_PVAR_ALL_HANDLES);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, v), MPI_SUCCESS);
    ck_assert_int_eq(v[SAMPI_ALGO_RING], 0);

    /* LIVE variables: continuous and read-only */
    ck_assert_int_eq(sampi_mpit_pvar_handle_alloc(
                         &fake, s, pvar_index("sampi_comm_algorithm_last", MPI_T_PVAR_CLASS_STATE),
                         &comm, &last, &count),
                     MPI_SUCCESS);
    int a = 0;
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, last, &a), MPI_SUCCESS);
    ck_assert_int_eq(a, -1);
    atomic_store(&c->last_algo, SAMPI_ALGO_RHD);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, last, &a), MPI_SUCCESS);
    ck_assert_int_eq(a, SAMPI_ALGO_RHD);
    ck_assert_int_eq(sampi_mpit_pvar_start(&fake, s, last), MPI_T_ERR_PVAR_NO_STARTSTOP);
    ck_assert_int_eq(sampi_mpit_pvar_write(&fake, s, last, &a), MPI_T_ERR_PVAR_NO_WRITE);
    ck_assert_int_eq(sampi_mpit_pvar_reset(&fake, s, last), MPI_T_ERR_PVAR_NO_WRITE);
    ck_assert_int_eq(sampi_mpit_pvar_readreset(&fake, s, last, &a), MPI_T_ERR_PVAR_NO_WRITE);
    /* ALL_HANDLES skips what cannot be started */
    ck_assert_int_eq(sampi_mpit_pvar_start(&fake, s, MPI_T_PVAR_ALL_HANDLES), MPI_SUCCESS);

    /* per-peer array: count = communicator size */
    ck_assert_int_eq(sampi_mpit_pvar_handle_alloc(
                         &fake, s,
                         pvar_index("sampi_comm_peer_late_count", MPI_T_PVAR_CLASS_COUNTER), &comm,
                         &peers, &count),
                     MPI_SUCCESS);
    ck_assert_int_eq(count, 4);
    ck_assert_int_eq(sampi_mpit_pvar_start(&fake, s, peers), MPI_SUCCESS);
    sampi_stats_note_arrival(&c->stats, c->size, 2, 1000);
    sampi_stats_note_arrival(&c->stats, c->size, 2, 500);
    unsigned long long pl[4];
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, peers, pl), MPI_SUCCESS);
    ck_assert_int_eq(pl[0], 0);
    ck_assert_int_eq(pl[2], 2);

    /* sessions own their handles */
    ck_assert_int_eq(sampi_mpit_pvar_session_create(&fake, &other), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, other, h, v), MPI_T_ERR_INVALID_SESSION);
    MPI_T_pvar_session unknown = (MPI_T_pvar_session)(uintptr_t)0x40;
    MPI_T_pvar_handle x;
    ck_assert_int_eq(sampi_mpit_pvar_handle_alloc(&fake, unknown, 0, NULL, &x, &count),
                     MPI_T_ERR_INVALID_SESSION);
    ck_assert_int_eq(sampi_mpit_pvar_session_free(&fake, &s), MPI_SUCCESS);
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, other, h, v), MPI_T_ERR_INVALID_HANDLE);
    ck_assert_int_eq(sampi_mpit_pvar_session_free(&fake, &other), MPI_SUCCESS);
    sampi_stats_release(&c->stats);
    free(c);
}
END_TEST

START_TEST(process_pvars_and_info)
{
    setup();
    int idx = pvar_index("sampi_calls", MPI_T_PVAR_CLASS_COUNTER);
    int bind = -1, ro = -1, cont = -1, atomic = -1, cls = -1;
    MPI_Datatype dt;
    ck_assert_int_eq(sampi_mpit_pvar_get_info(&fake, idx, NULL, NULL, NULL, &cls, &dt, NULL, NULL,
                                              NULL, &bind, &ro, &cont, &atomic),
                     MPI_SUCCESS);
    ck_assert_int_eq(bind, MPI_T_BIND_NO_OBJECT);
    ck_assert(dt == MPI_UNSIGNED_LONG_LONG);
    ck_assert_int_eq(ro, 0);
    ck_assert_int_eq(cont, 0);
    ck_assert_int_eq(atomic, 1);
    MPI_T_enum e;
    idx = pvar_index("sampi_comm_algorithm_last", MPI_T_PVAR_CLASS_STATE);
    ck_assert_int_eq(sampi_mpit_pvar_get_info(&fake, idx, NULL, NULL, NULL, NULL, &dt, &e, NULL,
                                              NULL, &bind, &ro, &cont, NULL),
                     MPI_SUCCESS);
    ck_assert(dt == MPI_INT);
    ck_assert_int_eq(bind, MPI_T_BIND_MPI_COMM);
    ck_assert_int_eq(ro, 1);
    ck_assert_int_eq(cont, 1);
    int value;
    char name[32];
    int len = sizeof(name);
    ck_assert_int_eq(sampi_mpit_enum_get_item(&fake, e, 0, &value, name, &len), MPI_SUCCESS);
    ck_assert_str_eq(name, "none");
    ck_assert_int_eq(value, -1);

    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int count;
    ck_assert_int_eq(sampi_mpit_pvar_session_create(&fake, &s), MPI_SUCCESS);
    ck_assert_int_eq(
        sampi_mpit_pvar_handle_alloc(
            &fake, s, pvar_index("sampi_bytes_sent", MPI_T_PVAR_CLASS_COUNTER), NULL, &h, &count),
        MPI_SUCCESS);
    ck_assert_int_eq(count, 1);
    ck_assert_int_eq(sampi_mpit_pvar_start(&fake, s, h), MPI_SUCCESS);
    sampi_stat_add(&sampi_process_stats.bytes_sent, 4096);
    unsigned long long v = 0;
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, &v), MPI_SUCCESS);
    ck_assert_int_eq(v, 4096);
    /* MPI_T_finalize drops every handle and session */
    ck_assert_int_eq(sampi_mpit_finalize(&fake), MPI_SUCCESS);
    setup();
    ck_assert_int_eq(sampi_mpit_pvar_read(&fake, s, h, &v), MPI_T_ERR_INVALID_HANDLE);
}
END_TEST

START_TEST(arrival_statistics)
{
    MPI_Comm comm;
    struct sampi_comm *c = fake_comm(4, &comm);
    sampi_stats_note_arrival(&c->stats, c->size, 1, 100);
    sampi_stats_note_arrival(&c->stats, c->size, 2, 50);
    sampi_stats_note_arrival(&c->stats, c->size, 1, 300);
    sampi_stats_note_arrival(&c->stats, c->size, 3, -5);
    sampi_stats_note_arrival(&c->stats, c->size, -1, 0);
    sampi_stats_note_arrival(&c->stats, c->size, 9,
                             10); /* not a rank of c: counted, not attributed */
    ck_assert_int_eq(sampi_stat_get(&c->stats.arrival_samples), 6);
    ck_assert_int_eq(sampi_stat_get(&c->stats.arrival_skew_sum_ns), 460);
    ck_assert_int_eq(sampi_stat_get(&c->stats.arrival_skew_max_ns), 300);
    ck_assert_int_eq(sampi_stat_get(&sampi_process_stats.arrival_skew_max_ns), 300);
    unsigned long long pl[4];
    sampi_pvar_fetch(SAMPI_PVAR_COMM_PEER_LATE_COUNT, c, pl, 4);
    ck_assert_int_eq(pl[0], 0);
    ck_assert_int_eq(pl[1], 2);
    ck_assert_int_eq(pl[2], 1);
    ck_assert_int_eq(pl[3], 1);
    int mode = -2;
    sampi_pvar_fetch(SAMPI_PVAR_COMM_LATE_RANK, c, &mode, 1);
    ck_assert_int_eq(mode, 1);
    sampi_stats_note_arrival(&c->stats, c->size, 3, 1);
    sampi_stats_note_arrival(&c->stats, c->size, 3, 1);
    sampi_pvar_fetch(SAMPI_PVAR_COMM_LATE_RANK, c, &mode, 1);
    ck_assert_int_eq(mode, 3);
    sampi_stats_release(&c->stats);
    ck_assert_ptr_null(atomic_load(&c->stats.peer_late));
    free(c);
}
END_TEST

START_TEST(documentation_lookups)
{
    struct sampi_mpit_cvar_doc doc;
    char count[256];
    ck_assert_int_eq(sampi_mpit_cvar_doc("sampi_algorithm", &doc), 0);
    ck_assert_str_eq(doc.default_text, "auto");
    ck_assert_str_eq(doc.env, "SAMPI_ALGORITHM");
    ck_assert_int_eq(sampi_mpit_cvar_doc("sampi_comm_algorithm", &doc), 0);
    ck_assert_str_eq(doc.default_text, "inherit");
    ck_assert_str_eq(doc.env, "");
    ck_assert_int_ne(sampi_mpit_cvar_doc("mpi_param_check", &doc), 0);
    ck_assert_int_eq(sampi_mpit_pvar_doc("sampi_calls", count, sizeof(count)), 0);
    ck_assert_msg(strstr(count, "one per algorithm: auto, native"), "%s", count);
    ck_assert_int_eq(sampi_mpit_pvar_doc("sampi_bytes_sent", count, sizeof(count)), 0);
    ck_assert_str_eq(count, "1");
}
END_TEST

/* ------------------------------------------------------------ threads */

static void *hammer(void *arg)
{
    int idx = *(int *)arg;
    for (int i = 0; i < 2000; i++) {
        MPI_T_cvar_handle h;
        int count, v;
        if (sampi_mpit_cvar_handle_alloc(&fake, idx, NULL, &h, &count) != MPI_SUCCESS)
            return (void *)1;
        if (sampi_mpit_cvar_read(&fake, h, &v) != MPI_SUCCESS)
            return (void *)1;
        if (sampi_mpit_cvar_handle_free(&fake, &h) != MPI_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

START_TEST(handles_from_many_threads)
{
    setup();
    pthread_t t[4];
    int idx = SAMPI_CVAR_VERBOSE;
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &idx), 0);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ck_assert_ptr_null(r);
    }
}
END_TEST

Suite *sampi_mpit_suite(void)
{
    return UNIT_SUITE(
        "mpit", {.name = "registry",
                 UNIT_TESTS(every_cvar_has_mpit_metadata, every_variable_has_a_summary,
                            types_come_from_the_allowed_set, init_nesting,
                            cvar_indices_ours_first_native_shifted,
                            pvar_indices_ours_first_native_shifted, categories_shift_every_index,
                            cvar_read_write_and_refusals, per_comm_variant_sets_the_override,
                            handles_route_by_membership, enums_route_by_membership,
                            pvar_counters_per_handle_and_all_handles, process_pvars_and_info,
                            arrival_statistics, documentation_lookups, handles_from_many_threads)});
}
