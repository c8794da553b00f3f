/*
 * mpit_registry.c - SAMPI's variables seen through MPI_T (mpit_registry.h).
 *
 * Control variables are cvars.def's entries, in order, followed by the
 * per-communicator variant "sampi_comm_<name>" of each entry whose
 * SAMPI_CVAR_INFO names an override.  Performance variables are pvars.def's.
 *
 * Performance variables of kind SESSION are counters that every handle sees
 * from its own origin: a handle keeps, per element, what it has accumulated
 * while started (acc) and the raw value when it was last started or reset
 * (snap).  Raw counters only ever grow, so reading never disturbs other
 * handles, and readreset takes one raw sample for both halves, which is what
 * makes it atomic.  LIVE variables are read raw.
 */
#include "mpit_registry.h"
#include "comm.h"
#include "config.h"
#include "log.h"
#include "pvars.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CVARS      (2 * SAMPI_CVAR__COUNT)
#define MAX_ENUMS      (2 * SAMPI_CVAR__COUNT + 1)
#define NAME_MAX_LEN   64
#define DESC_MAX_LEN   1024
#define NUM_CATEGORIES 1

static const char category_name[] = "sampi";
static const char category_desc[] =
    "SAMPI (Straggler-Aware MPI): every control and performance variable of the "
    "MPI_Allreduce interposition library";

/* One of SAMPI's MPI_T enums: optional `extra` item with value -1 first, then
 * items[i] with value i. */
struct mpit_enum {
    char name[NAME_MAX_LEN];
    const char *extra;
    const char *const *items;
    int nitems;
};

struct mpit_cvar {
    char name[NAME_MAX_LEN];
    enum sampi_cvar_id id;
    int per_comm; /* the MPI_T_BIND_MPI_COMM variant */
    int enum_index;
    const char *desc;
};

struct cvar_handle {
    int index;
    MPI_Comm comm;
    struct cvar_handle *next;
};

struct pvar_handle {
    int index;
    MPI_T_pvar_session session;
    MPI_Comm comm;
    int count;
    int started;
    uint64_t *acc, *snap;
    struct pvar_handle *next;
};

struct session {
    MPI_T_pvar_session native;
    struct session *next;
};

static struct mpit_cvar cvars[MAX_CVARS];
static int num_cvars;
static char comm_descs[SAMPI_CVAR__COUNT][DESC_MAX_LEN];
static char comm_summaries[SAMPI_CVAR__COUNT][NAME_MAX_LEN * 2];
static struct mpit_enum enums[MAX_ENUMS];
static int num_enums;
static int algo_last_enum;
static pthread_once_t build_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int init_depth;
static struct cvar_handle *cvar_handles;
static struct pvar_handle *pvar_handles;
static struct session *sessions;

static int count_items(const char *const *items)
{
    int n = 0;
    while (items && items[n])
        n++;
    return n;
}

static int add_enum(const char *name, const char *extra, const char *const *items)
{
    struct mpit_enum *e = &enums[num_enums];
    snprintf(e->name, sizeof(e->name), "%s", name);
    e->extra = extra;
    e->items = items;
    e->nitems = count_items(items);
    return num_enums++;
}

static void add_cvar(enum sampi_cvar_id id, int per_comm)
{
    const struct sampi_cvar_desc *d = &sampi_cvar_descs[id];
    struct mpit_cvar *v = &cvars[num_cvars++];
    v->id = id;
    v->per_comm = per_comm;
    v->enum_index = -1;
    snprintf(v->name, sizeof(v->name), "sampi_%s%s", per_comm ? "comm_" : "", d->name);
    v->desc = d->description;
    if (per_comm) {
        snprintf(comm_descs[id], sizeof(comm_descs[id]),
                 "Per-communicator override of sampi_%s, bound to MPI_T_BIND_MPI_COMM%s; "
                 "'inherit' (-1) follows sampi_%s. Collective in meaning: every rank of the "
                 "communicator must write the same value before its next MPI_Allreduce on it. "
                 "%s",
                 d->name,
                 sampi_cvar_infos[id].comm == SAMPI_CVAR_COMM_BEFORE_USE
                     ? ", writable only before the communicator's first MPI_Allreduce"
                     : ", applied from the next MPI_Allreduce on the communicator",
                 d->name, d->description);
        v->desc = comm_descs[id];
        snprintf(comm_summaries[id], sizeof(comm_summaries[id]), "%s, for one communicator",
                 d->summary);
    }
    if (d->type == SAMPI_CVAR_TYPE_ENUM)
        v->enum_index = add_enum(v->name, per_comm ? "inherit" : NULL, d->items);
}

static void build(void)
{
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++)
        add_cvar(id, 0);
    for (int id = 0; id < SAMPI_CVAR__COUNT; id++)
        if (sampi_cvar_infos[id].comm != SAMPI_CVAR_COMM_NONE)
            add_cvar(id, 1);
    algo_last_enum = add_enum("sampi_algorithm_last", "none", sampi_algo_names);
}

static int ready(void)
{
    pthread_once(&build_once, build);
    return atomic_load(&init_depth) > 0;
}

/* The MPI_T string convention, as Open MPI implements it: *len in, the
 * buffer size (0: only ask for the length); *len out, the length used
 * including the terminator. */
static void copy_string(char *dest, int *len, const char *src)
{
    if (!len)
        return;
    int need = (int)strlen(src) + 1;
    if (*len > 0 && dest) {
        int n = need < *len ? need : *len;
        memcpy(dest, src, (size_t)n - 1);
        dest[n - 1] = '\0';
        *len = n;
        return;
    }
    *len = need;
}

#define SET(ptr, value)                                                                            \
    do {                                                                                           \
        if (ptr)                                                                                   \
            *(ptr) = (value);                                                                      \
    } while (0)

/* ------------------------------------------------------------ init */

int sampi_mpit_init_thread(const struct sampi_mpit_native *nt, int required, int *provided)
{
    pthread_once(&build_once, build);
    int rc = nt->init_thread(required, provided);
    if (rc == MPI_SUCCESS)
        atomic_fetch_add(&init_depth, 1);
    return rc;
}

/* The outermost MPI_T_finalize invalidates every handle and session. */
static void drop_all(void)
{
    while (cvar_handles) {
        struct cvar_handle *h = cvar_handles;
        cvar_handles = h->next;
        free(h);
    }
    while (pvar_handles) {
        struct pvar_handle *h = pvar_handles;
        pvar_handles = h->next;
        free(h->acc);
        free(h->snap);
        free(h);
    }
    while (sessions) {
        struct session *s = sessions;
        sessions = s->next;
        free(s);
    }
}

int sampi_mpit_finalize(const struct sampi_mpit_native *nt)
{
    pthread_mutex_lock(&lock);
    int depth = atomic_load(&init_depth);
    if (depth > 0) {
        atomic_store(&init_depth, depth - 1);
        if (depth == 1)
            drop_all();
    }
    pthread_mutex_unlock(&lock);
    if (depth == 0)
        return MPI_T_ERR_NOT_INITIALIZED;
    /* Open MPI 4.1 crashes in PMPI_T_finalize after MPI_Finalize (it closes
     * frameworks whose components are already unloaded); the process is ending
     * then, so the native layer is left as it is. */
    if (nt->mpi_finalized())
        return MPI_SUCCESS;
    return nt->finalize();
}

/* ------------------------------------------------------------ enums */

static struct mpit_enum *our_enum(MPI_T_enum e)
{
    for (int i = 0; i < num_enums; i++)
        if ((MPI_T_enum)(void *)&enums[i] == e)
            return &enums[i];
    return NULL;
}

static MPI_T_enum enum_handle(int i)
{
    return i >= 0 ? (MPI_T_enum)(void *)&enums[i] : MPI_T_ENUM_NULL;
}

int sampi_mpit_enum_get_info(const struct sampi_mpit_native *nt, MPI_T_enum enumtype, int *num,
                             char *name, int *name_len)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    struct mpit_enum *e = our_enum(enumtype);
    if (!e)
        return nt->enum_get_info(enumtype, num, name, name_len);
    SET(num, e->nitems + (e->extra ? 1 : 0));
    copy_string(name, name_len, e->name);
    return MPI_SUCCESS;
}

int sampi_mpit_enum_get_item(const struct sampi_mpit_native *nt, MPI_T_enum enumtype, int index,
                             int *value, char *name, int *name_len)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    struct mpit_enum *e = our_enum(enumtype);
    if (!e)
        return nt->enum_get_item(enumtype, index, value, name, name_len);
    int first = e->extra ? 1 : 0;
    if (index < 0 || index >= e->nitems + first)
        return MPI_T_ERR_INVALID_ITEM;
    SET(value, index - first);
    copy_string(name, name_len, index < first ? e->extra : e->items[index - first]);
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ cvars */

static MPI_Datatype cvar_datatype(const struct mpit_cvar *v)
{
    if (v->per_comm)
        return MPI_INT;
    switch (sampi_cvar_descs[v->id].type) {
    case SAMPI_CVAR_TYPE_SIZE:
        return MPI_UNSIGNED_LONG_LONG;
    case SAMPI_CVAR_TYPE_STRING:
        return MPI_CHAR;
    default:
        return MPI_INT;
    }
}

int sampi_mpit_cvar_get_num(const struct sampi_mpit_native *nt, int *num)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    int n = 0, rc = nt->cvar_get_num(&n);
    if (rc == MPI_SUCCESS)
        SET(num, n + num_cvars);
    return rc;
}

int sampi_mpit_cvar_get_info(const struct sampi_mpit_native *nt, int index, char *name,
                             int *name_len, int *verbosity, MPI_Datatype *datatype,
                             MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (index >= num_cvars)
        return nt->cvar_get_info(index - num_cvars, name, name_len, verbosity, datatype, enumtype,
                                 desc, desc_len, bind, scope);
    const struct mpit_cvar *v = &cvars[index];
    const struct sampi_cvar_info *info = &sampi_cvar_infos[v->id];
    copy_string(name, name_len, v->name);
    copy_string(desc, desc_len, v->desc);
    SET(verbosity, info->verbosity);
    SET(datatype, cvar_datatype(v));
    SET(enumtype, enum_handle(v->enum_index));
    SET(bind, v->per_comm ? MPI_T_BIND_MPI_COMM : MPI_T_BIND_NO_OBJECT);
    SET(scope, info->scope);
    return MPI_SUCCESS;
}

int sampi_mpit_cvar_get_index(const struct sampi_mpit_native *nt, const char *name, int *index)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!name || !index)
        return MPI_T_ERR_INVALID;
    for (int i = 0; i < num_cvars; i++)
        if (strcmp(cvars[i].name, name) == 0) {
            *index = i;
            return MPI_SUCCESS;
        }
    int rc = nt->cvar_get_index(name, index);
    if (rc == MPI_SUCCESS)
        *index += num_cvars;
    return rc;
}

static struct cvar_handle *our_cvar_handle(MPI_T_cvar_handle handle)
{
    for (struct cvar_handle *h = cvar_handles; h; h = h->next)
        if ((MPI_T_cvar_handle)(void *)h == handle)
            return h;
    return NULL;
}

int sampi_mpit_cvar_handle_alloc(const struct sampi_mpit_native *nt, int index, void *obj,
                                 MPI_T_cvar_handle *handle, int *count)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (index >= num_cvars)
        return nt->cvar_handle_alloc(index - num_cvars, obj, handle, count);
    if (!handle || !count)
        return MPI_T_ERR_INVALID;
    const struct mpit_cvar *v = &cvars[index];
    struct sampi_comm *c = NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    if (v->per_comm) {
        int rc = obj ? nt->comm_state(obj, &c) : MPI_T_ERR_INVALID_HANDLE;
        if (rc != MPI_SUCCESS)
            return rc;
        comm = *(MPI_Comm *)obj;
    }
    struct cvar_handle *h = calloc(1, sizeof(*h));
    if (!h)
        return MPI_T_ERR_MEMORY;
    h->index = index;
    h->comm = comm;
    pthread_mutex_lock(&lock);
    h->next = cvar_handles;
    cvar_handles = h;
    pthread_mutex_unlock(&lock);
    *handle = (MPI_T_cvar_handle)(void *)h;
    *count = cvar_datatype(v) == MPI_CHAR ? SAMPI_CVAR_STRING_MAX : 1;
    return MPI_SUCCESS;
}

int sampi_mpit_cvar_handle_free(const struct sampi_mpit_native *nt, MPI_T_cvar_handle *handle)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!handle)
        return MPI_T_ERR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    struct cvar_handle **p = &cvar_handles;
    while (*p && (MPI_T_cvar_handle)(void *)*p != *handle)
        p = &(*p)->next;
    struct cvar_handle *h = *p;
    if (h)
        *p = h->next;
    pthread_mutex_unlock(&lock);
    if (!h)
        return nt->cvar_handle_free(handle);
    free(h);
    *handle = MPI_T_CVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

/* Copy out what an access needs under the lock, so that the access itself
 * runs unlocked; 0 when the handle is not ours. */
static int cvar_lookup(MPI_T_cvar_handle handle, struct cvar_handle *out)
{
    pthread_mutex_lock(&lock);
    struct cvar_handle *h = our_cvar_handle(handle);
    if (h)
        *out = *h;
    pthread_mutex_unlock(&lock);
    return h != NULL;
}

int sampi_mpit_cvar_read(const struct sampi_mpit_native *nt, MPI_T_cvar_handle handle, void *buf)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    struct cvar_handle h;
    if (!cvar_lookup(handle, &h))
        return nt->cvar_read(handle, buf);
    if (!buf)
        return MPI_T_ERR_INVALID;
    const struct mpit_cvar *v = &cvars[h.index];
    if (v->per_comm) {
        struct sampi_comm *c = NULL;
        int rc = nt->comm_state(&h.comm, &c);
        if (rc != MPI_SUCCESS)
            return rc;
        *(int *)buf = __atomic_load_n(sampi_comm_override(c, v->id), __ATOMIC_RELAXED);
        return MPI_SUCCESS;
    }
    MPI_Datatype dt = cvar_datatype(v);
    if (dt == MPI_CHAR)
        sampi_cvar_text(v->id, buf, SAMPI_CVAR_STRING_MAX);
    else if (dt == MPI_UNSIGNED_LONG_LONG)
        *(unsigned long long *)buf = (unsigned long long)sampi_cvar_int(v->id);
    else
        *(int *)buf = (int)sampi_cvar_int(v->id);
    return MPI_SUCCESS;
}

static int write_per_comm(const struct sampi_mpit_native *nt, const struct cvar_handle *h,
                          const struct mpit_cvar *v, int value)
{
    const struct sampi_cvar_desc *d = &sampi_cvar_descs[v->id];
    struct sampi_comm *c = NULL;
    int rc = nt->comm_state((void *)&h->comm, &c);
    if (rc != MPI_SUCCESS)
        return rc;
    if (value < -1 || value >= count_items(d->items)) {
        sampi_log(SAMPI_LOG_INFO, "MPI_T write of %s refused: %d is not an item of enum %s",
                  v->name, value, v->name);
        return MPI_T_ERR_INVALID;
    }
    /* The data path, once open, stays: nothing could apply a later choice. */
    if (sampi_cvar_infos[v->id].comm == SAMPI_CVAR_COMM_BEFORE_USE && c->nd_tried)
        return MPI_T_ERR_CVAR_SET_NOT_NOW;
    __atomic_store_n(sampi_comm_override(c, v->id), value, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

int sampi_mpit_cvar_write(const struct sampi_mpit_native *nt, MPI_T_cvar_handle handle,
                          const void *buf)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    struct cvar_handle h;
    if (!cvar_lookup(handle, &h))
        return nt->cvar_write(handle, buf);
    if (!buf)
        return MPI_T_ERR_INVALID;
    const struct mpit_cvar *v = &cvars[h.index];
    if (v->per_comm)
        return write_per_comm(nt, &h, v, *(const int *)buf);

    /* Every write goes through the text parser, so MPI_T and the environment
     * accept exactly the same values. */
    const struct sampi_cvar_desc *d = &sampi_cvar_descs[v->id];
    char text[SAMPI_CVAR_STRING_MAX], err[600];
    MPI_Datatype dt = cvar_datatype(v);
    if (dt == MPI_CHAR) {
        if (strnlen(buf, SAMPI_CVAR_STRING_MAX) == SAMPI_CVAR_STRING_MAX)
            return MPI_T_ERR_INVALID;
        memcpy(text, buf, strlen(buf) + 1);
    } else if (dt == MPI_UNSIGNED_LONG_LONG) {
        unsigned long long x = *(const unsigned long long *)buf;
        if (x > (unsigned long long)LLONG_MAX)
            return MPI_T_ERR_INVALID;
        snprintf(text, sizeof(text), "%llu", x);
    } else if (d->type == SAMPI_CVAR_TYPE_ENUM) {
        int x = *(const int *)buf;
        if (x < 0 || x >= count_items(d->items)) {
            sampi_log(SAMPI_LOG_INFO, "MPI_T write of %s refused: %d is not an item of enum %s",
                      v->name, x, v->name);
            return MPI_T_ERR_INVALID;
        }
        snprintf(text, sizeof(text), "%s", d->items[x]);
    } else {
        snprintf(text, sizeof(text), "%d", *(const int *)buf);
    }
    if (sampi_cvar_set(v->id, text, err, sizeof(err))) {
        sampi_log(SAMPI_LOG_INFO, "MPI_T write refused: %s", err);
        return MPI_T_ERR_INVALID;
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------ categories */

int sampi_mpit_category_get_num(const struct sampi_mpit_native *nt, int *num)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    int n = 0, rc = nt->category_get_num(&n);
    if (rc == MPI_SUCCESS)
        SET(num, n + NUM_CATEGORIES);
    return rc;
}

int sampi_mpit_category_get_info(const struct sampi_mpit_native *nt, int index, char *name,
                                 int *name_len, char *desc, int *desc_len, int *num_cvars_out,
                                 int *num_pvars_out, int *num_categories)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (index >= NUM_CATEGORIES)
        return nt->category_get_info(index - NUM_CATEGORIES, name, name_len, desc, desc_len,
                                     num_cvars_out, num_pvars_out, num_categories);
    copy_string(name, name_len, category_name);
    copy_string(desc, desc_len, category_desc);
    SET(num_cvars_out, num_cvars);
    SET(num_pvars_out, SAMPI_PVAR__COUNT);
    SET(num_categories, 0);
    return MPI_SUCCESS;
}

int sampi_mpit_category_get_index(const struct sampi_mpit_native *nt, const char *name, int *index)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!name || !index)
        return MPI_T_ERR_INVALID;
    if (strcmp(name, category_name) == 0) {
        *index = 0;
        return MPI_SUCCESS;
    }
    int rc = nt->category_get_index(name, index);
    if (rc == MPI_SUCCESS)
        *index += NUM_CATEGORIES;
    return rc;
}

enum member_kind { MEMBER_CVARS, MEMBER_PVARS, MEMBER_CATEGORIES };

/* category_get_cvars/pvars/categories: SAMPI's category lists all of SAMPI's
 * variables; a native category's list is the native one, shifted. */
static int category_members(const struct sampi_mpit_native *nt, enum member_kind kind, int index,
                            int len, int indices[])
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (len < 0 || (len > 0 && !indices))
        return MPI_T_ERR_INVALID;
    const int ours[] = {
        [MEMBER_CVARS] = num_cvars, [MEMBER_PVARS] = SAMPI_PVAR__COUNT, [MEMBER_CATEGORIES] = 0};
    const int shift[] = {[MEMBER_CVARS] = num_cvars,
                         [MEMBER_PVARS] = SAMPI_PVAR__COUNT,
                         [MEMBER_CATEGORIES] = NUM_CATEGORIES};
    if (index < NUM_CATEGORIES) {
        for (int i = 0; i < len && i < ours[kind]; i++)
            indices[i] = i;
        return MPI_SUCCESS;
    }
    int (*const fetch[])(int, int, int[]) = {[MEMBER_CVARS] = nt->category_get_cvars,
                                             [MEMBER_PVARS] = nt->category_get_pvars,
                                             [MEMBER_CATEGORIES] = nt->category_get_categories};
    int native = index - NUM_CATEGORIES;
    int counts[3] = {0, 0, 0};
    int rc = nt->category_get_info(native, NULL, NULL, NULL, NULL, &counts[MEMBER_CVARS],
                                   &counts[MEMBER_PVARS], &counts[MEMBER_CATEGORIES]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = fetch[kind](native, len, indices);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < len && i < counts[kind]; i++)
        indices[i] += shift[kind];
    return MPI_SUCCESS;
}

int sampi_mpit_category_get_cvars(const struct sampi_mpit_native *nt, int index, int len,
                                  int indices[])
{
    return category_members(nt, MEMBER_CVARS, index, len, indices);
}

int sampi_mpit_category_get_pvars(const struct sampi_mpit_native *nt, int index, int len,
                                  int indices[])
{
    return category_members(nt, MEMBER_PVARS, index, len, indices);
}

int sampi_mpit_category_get_categories(const struct sampi_mpit_native *nt, int index, int len,
                                       int indices[])
{
    return category_members(nt, MEMBER_CATEGORIES, index, len, indices);
}

/* SAMPI's category never changes, so the native stamp is the whole answer. */
int sampi_mpit_category_changed(const struct sampi_mpit_native *nt, int *stamp)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    return nt->category_changed(stamp);
}

/* ------------------------------------------------------------ pvars */

static MPI_Datatype pvar_datatype(const struct sampi_pvar_desc *d)
{
    return d->type == SAMPI_PVAR_TYPE_INT ? MPI_INT : MPI_UNSIGNED_LONG_LONG;
}

int sampi_mpit_pvar_get_num(const struct sampi_mpit_native *nt, int *num)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    int n = 0, rc = nt->pvar_get_num(&n);
    if (rc == MPI_SUCCESS)
        SET(num, n + SAMPI_PVAR__COUNT);
    return rc;
}

int sampi_mpit_pvar_get_info(const struct sampi_mpit_native *nt, int index, char *name,
                             int *name_len, int *verbosity, int *var_class, MPI_Datatype *datatype,
                             MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind,
                             int *readonly, int *continuous, int *atomic)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (index >= SAMPI_PVAR__COUNT)
        return nt->pvar_get_info(index - SAMPI_PVAR__COUNT, name, name_len, verbosity, var_class,
                                 datatype, enumtype, desc, desc_len, bind, readonly, continuous,
                                 atomic);
    const struct sampi_pvar_desc *d = &sampi_pvar_descs[index];
    int live = d->kind == SAMPI_PVAR_LIVE;
    copy_string(name, name_len, d->name);
    copy_string(desc, desc_len, d->description);
    SET(verbosity, d->verbosity);
    SET(var_class, d->var_class);
    SET(datatype, pvar_datatype(d));
    SET(enumtype,
        d->var_class == MPI_T_PVAR_CLASS_STATE ? enum_handle(algo_last_enum) : MPI_T_ENUM_NULL);
    SET(bind, d->bind);
    SET(readonly, live);
    SET(continuous, live);
    SET(atomic, !live);
    return MPI_SUCCESS;
}

int sampi_mpit_pvar_get_index(const struct sampi_mpit_native *nt, const char *name, int var_class,
                              int *index)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!name || !index)
        return MPI_T_ERR_INVALID;
    for (int i = 0; i < SAMPI_PVAR__COUNT; i++)
        if (sampi_pvar_descs[i].var_class == var_class &&
            strcmp(sampi_pvar_descs[i].name, name) == 0) {
            *index = i;
            return MPI_SUCCESS;
        }
    int rc = nt->pvar_get_index(name, var_class, index);
    if (rc == MPI_SUCCESS)
        *index += SAMPI_PVAR__COUNT;
    return rc;
}

static struct session *our_session(MPI_T_pvar_session s)
{
    for (struct session *r = sessions; r; r = r->next)
        if (r->native == s)
            return r;
    return NULL;
}

int sampi_mpit_pvar_session_create(const struct sampi_mpit_native *nt, MPI_T_pvar_session *session)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!session)
        return MPI_T_ERR_INVALID;
    struct session *r = calloc(1, sizeof(*r));
    if (!r)
        return MPI_T_ERR_MEMORY;
    int rc = nt->pvar_session_create(session);
    if (rc != MPI_SUCCESS) {
        free(r);
        return rc;
    }
    r->native = *session;
    pthread_mutex_lock(&lock);
    r->next = sessions;
    sessions = r;
    pthread_mutex_unlock(&lock);
    return MPI_SUCCESS;
}

static void free_pvar_handle(struct pvar_handle *h)
{
    free(h->acc);
    free(h->snap);
    free(h);
}

int sampi_mpit_pvar_session_free(const struct sampi_mpit_native *nt, MPI_T_pvar_session *session)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!session)
        return MPI_T_ERR_INVALID_SESSION;
    pthread_mutex_lock(&lock);
    for (struct session **p = &sessions; *p; p = &(*p)->next)
        if ((*p)->native == *session) {
            struct session *r = *p;
            *p = r->next;
            free(r);
            break;
        }
    for (struct pvar_handle **p = &pvar_handles; *p;) {
        struct pvar_handle *h = *p;
        if (h->session != *session) {
            p = &h->next;
            continue;
        }
        *p = h->next;
        free_pvar_handle(h);
    }
    pthread_mutex_unlock(&lock);
    return nt->pvar_session_free(session);
}

int sampi_mpit_pvar_handle_alloc(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                                 int index, void *obj, MPI_T_pvar_handle *handle, int *count)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (index < 0)
        return MPI_T_ERR_INVALID_INDEX;
    if (index >= SAMPI_PVAR__COUNT)
        return nt->pvar_handle_alloc(session, index - SAMPI_PVAR__COUNT, obj, handle, count);
    if (!handle || !count)
        return MPI_T_ERR_INVALID;
    const struct sampi_pvar_desc *d = &sampi_pvar_descs[index];
    struct sampi_comm *c = NULL;
    MPI_Comm comm = MPI_COMM_NULL;
    int rc = MPI_SUCCESS;
    if (d->bind == MPI_T_BIND_MPI_COMM) {
        rc = obj ? nt->comm_state(obj, &c) : MPI_T_ERR_INVALID_HANDLE;
        if (rc != MPI_SUCCESS)
            return rc;
        comm = *(MPI_Comm *)obj;
    }
    int n = sampi_pvar_count(index, c);
    struct pvar_handle *h = calloc(1, sizeof(*h));
    if (!h)
        return MPI_T_ERR_MEMORY;
    h->index = index;
    h->session = session;
    h->comm = comm;
    h->count = n;
    if (d->kind == SAMPI_PVAR_SESSION) {
        h->acc = calloc((size_t)n + 1, sizeof(uint64_t));
        h->snap = calloc((size_t)n + 1, sizeof(uint64_t));
        if (!h->acc || !h->snap) {
            rc = MPI_T_ERR_MEMORY;
            goto fail;
        }
    }
    pthread_mutex_lock(&lock);
    if (!our_session(session)) {
        pthread_mutex_unlock(&lock);
        rc = MPI_T_ERR_INVALID_SESSION;
        goto fail;
    }
    h->next = pvar_handles;
    pvar_handles = h;
    pthread_mutex_unlock(&lock);
    *handle = (MPI_T_pvar_handle)(void *)h;
    *count = n;
    return MPI_SUCCESS;
fail:
    free_pvar_handle(h);
    return rc;
}

static struct pvar_handle *our_pvar_handle(MPI_T_pvar_handle handle)
{
    for (struct pvar_handle *h = pvar_handles; h; h = h->next)
        if ((MPI_T_pvar_handle)(void *)h == handle)
            return h;
    return NULL;
}

int sampi_mpit_pvar_handle_free(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                                MPI_T_pvar_handle *handle)
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    if (!handle)
        return MPI_T_ERR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    struct pvar_handle **p = &pvar_handles;
    while (*p && (MPI_T_pvar_handle)(void *)*p != *handle)
        p = &(*p)->next;
    struct pvar_handle *h = *p;
    int rc = MPI_SUCCESS;
    if (h && h->session != session)
        rc = MPI_T_ERR_INVALID_SESSION;
    else if (h)
        *p = h->next;
    pthread_mutex_unlock(&lock);
    if (!h)
        return nt->pvar_handle_free(session, handle);
    if (rc != MPI_SUCCESS)
        return rc;
    free_pvar_handle(h);
    *handle = MPI_T_PVAR_HANDLE_NULL;
    return MPI_SUCCESS;
}

/* The raw value of h's variable now, as uint64_t elements (SESSION kinds are
 * all ULL).  Called with the lock held; comm_state does not call back. */
static int raw_value(const struct sampi_mpit_native *nt, struct pvar_handle *h, void *out)
{
    struct sampi_comm *c = NULL;
    if (sampi_pvar_descs[h->index].bind == MPI_T_BIND_MPI_COMM) {
        int rc = nt->comm_state(&h->comm, &c);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    sampi_pvar_fetch(h->index, c, out, h->count);
    return MPI_SUCCESS;
}

enum pvar_op { OP_START, OP_STOP, OP_READ, OP_WRITE, OP_RESET, OP_READRESET };

/* pvar_op's answer for a handle that is not ours (MPI error codes are >= 0). */
#define NOT_OURS (-1)

/* One operation on one of our handles, with the lock held.  `cur` has room
 * for h->count elements. */
static int apply(const struct sampi_mpit_native *nt, struct pvar_handle *h, enum pvar_op op,
                 void *buf, uint64_t *cur)
{
    const struct sampi_pvar_desc *d = &sampi_pvar_descs[h->index];
    if (d->kind == SAMPI_PVAR_LIVE) {
        static const int live_refusal[] = {
            [OP_START] = MPI_T_ERR_PVAR_NO_STARTSTOP,
            [OP_STOP] = MPI_T_ERR_PVAR_NO_STARTSTOP,
            [OP_READ] = MPI_SUCCESS,
            [OP_WRITE] = MPI_T_ERR_PVAR_NO_WRITE,
            [OP_RESET] = MPI_T_ERR_PVAR_NO_WRITE,
            [OP_READRESET] = MPI_T_ERR_PVAR_NO_WRITE,
        };
        if (live_refusal[op] != MPI_SUCCESS)
            return live_refusal[op];
        return raw_value(nt, h, buf);
    }
    int rc = raw_value(nt, h, cur);
    if (rc != MPI_SUCCESS)
        return rc;
    uint64_t *out = buf;
    for (int i = 0; i < h->count; i++) {
        uint64_t running = h->started ? cur[i] - h->snap[i] : 0;
        switch (op) {
        case OP_START:
            if (!h->started)
                h->snap[i] = cur[i];
            break;
        case OP_STOP:
            h->acc[i] += running;
            break;
        case OP_READ:
            out[i] = h->acc[i] + running;
            break;
        case OP_WRITE:
            h->acc[i] = ((const uint64_t *)buf)[i];
            h->snap[i] = cur[i];
            break;
        case OP_READRESET:
            out[i] = h->acc[i] + running;
            /* fall through */
        case OP_RESET:
            h->acc[i] = 0;
            h->snap[i] = cur[i];
            break;
        }
    }
    if (op == OP_START || op == OP_STOP)
        h->started = op == OP_START;
    return MPI_SUCCESS;
}

/* Route one pvar operation: MPI_T_PVAR_ALL_HANDLES (start, stop, reset) hits
 * our handles of the session that the operation applies to, then the native
 * ones; one of our handles is handled here; anything else goes below. */
static int pvar_op(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                   MPI_T_pvar_handle handle, enum pvar_op op, void *buf,
                   int (*native)(MPI_T_pvar_session, MPI_T_pvar_handle))
{
    if (!ready())
        return MPI_T_ERR_NOT_INITIALIZED;
    int rc = MPI_SUCCESS;
    uint64_t *cur = NULL;
    pthread_mutex_lock(&lock);
    if (handle == MPI_T_PVAR_ALL_HANDLES && native) {
        for (struct pvar_handle *h = pvar_handles; h; h = h->next) {
            const struct sampi_pvar_desc *d = &sampi_pvar_descs[h->index];
            if (h->session != session || d->kind == SAMPI_PVAR_LIVE)
                continue; /* ALL_HANDLES skips what cannot be started or written */
            free(cur);
            cur = malloc(((size_t)h->count + 1) * sizeof(*cur));
            int one = cur ? apply(nt, h, op, NULL, cur) : MPI_T_ERR_MEMORY;
            if (rc == MPI_SUCCESS)
                rc = one;
        }
        pthread_mutex_unlock(&lock);
        free(cur);
        int nrc = native(session, handle);
        return rc != MPI_SUCCESS ? rc : nrc;
    }
    struct pvar_handle *h = our_pvar_handle(handle);
    if (!h) {
        pthread_mutex_unlock(&lock);
        return NOT_OURS;
    }
    if (h->session != session)
        rc = MPI_T_ERR_INVALID_SESSION;
    else if ((op == OP_READ || op == OP_WRITE || op == OP_READRESET) && !buf)
        rc = MPI_T_ERR_INVALID;
    else if (!(cur = malloc(((size_t)h->count + 1) * sizeof(*cur))))
        rc = MPI_T_ERR_MEMORY;
    else
        rc = apply(nt, h, op, buf, cur);
    pthread_mutex_unlock(&lock);
    free(cur);
    return rc;
}

int sampi_mpit_pvar_start(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                          MPI_T_pvar_handle handle)
{
    int rc = pvar_op(nt, session, handle, OP_START, NULL, nt->pvar_start);
    return rc == NOT_OURS ? nt->pvar_start(session, handle) : rc;
}

int sampi_mpit_pvar_stop(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                         MPI_T_pvar_handle handle)
{
    int rc = pvar_op(nt, session, handle, OP_STOP, NULL, nt->pvar_stop);
    return rc == NOT_OURS ? nt->pvar_stop(session, handle) : rc;
}

int sampi_mpit_pvar_reset(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                          MPI_T_pvar_handle handle)
{
    int rc = pvar_op(nt, session, handle, OP_RESET, NULL, nt->pvar_reset);
    return rc == NOT_OURS ? nt->pvar_reset(session, handle) : rc;
}

int sampi_mpit_pvar_read(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                         MPI_T_pvar_handle handle, void *buf)
{
    int rc = pvar_op(nt, session, handle, OP_READ, buf, NULL);
    return rc == NOT_OURS ? nt->pvar_read(session, handle, buf) : rc;
}

int sampi_mpit_pvar_write(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                          MPI_T_pvar_handle handle, const void *buf)
{
    int rc = pvar_op(nt, session, handle, OP_WRITE, (void *)buf, NULL);
    return rc == NOT_OURS ? nt->pvar_write(session, handle, buf) : rc;
}

/* Open MPI 4.1's own readreset always fails (open-mpi/ompi#14016); ours works. */
int sampi_mpit_pvar_readreset(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                              MPI_T_pvar_handle handle, void *buf)
{
    int rc = pvar_op(nt, session, handle, OP_READRESET, buf, NULL);
    return rc == NOT_OURS ? nt->pvar_readreset(session, handle, buf) : rc;
}

/* ------------------------------------------------------------ documentation */

int sampi_mpit_num_cvars(void)
{
    pthread_once(&build_once, build);
    return num_cvars;
}

int sampi_mpit_num_pvars(void)
{
    return SAMPI_PVAR__COUNT;
}

const char *sampi_mpit_cvar_name(int i)
{
    pthread_once(&build_once, build);
    return i >= 0 && i < num_cvars ? cvars[i].name : NULL;
}

int sampi_mpit_cvar_doc(const char *name, struct sampi_mpit_cvar_doc *doc)
{
    pthread_once(&build_once, build);
    for (int i = 0; i < num_cvars; i++) {
        const struct mpit_cvar *v = &cvars[i];
        if (strcmp(v->name, name) != 0)
            continue;
        doc->env[0] = '\0';
        doc->default_text = "inherit";
        doc->summary = comm_summaries[v->id];
        doc->writable = sampi_cvar_infos[v->id].comm == SAMPI_CVAR_COMM_BEFORE_USE
                            ? "before the communicator's first MPI_Allreduce"
                            : "any time; applies from the next MPI_Allreduce on the communicator";
        if (!v->per_comm) {
            doc->default_text = sampi_cvar_descs[v->id].default_text;
            sampi_cvar_env_name(v->id, doc->env, sizeof(doc->env));
            doc->writable = "any time; applies from the next MPI_Allreduce";
            doc->summary = sampi_cvar_descs[v->id].summary;
        }
        return 0;
    }
    return -ENOENT;
}

int sampi_mpit_pvar_doc(const char *name, char *count_text, size_t len)
{
    for (int i = 0; i < SAMPI_PVAR__COUNT; i++) {
        if (strcmp(sampi_pvar_descs[i].name, name) != 0)
            continue;
        static const char *const what[] = {
            [SAMPI_PVAR_COUNT_ONE] = "1",
            [SAMPI_PVAR_COUNT_ALGOS] = "one per algorithm:",
            [SAMPI_PVAR_COUNT_FALLBACKS] = "one per fallback reason:",
            [SAMPI_PVAR_COUNT_PEERS] = "one per rank of the communicator",
        };
        size_t used = (size_t)snprintf(count_text, len, "%s", what[sampi_pvar_descs[i].count]);
        const char *el;
        for (int e = 0; (el = sampi_pvar_element_name(i, e)) && used < len; e++)
            used += (size_t)snprintf(count_text + used, len - used, "%s %s", e ? "," : "", el);
        return 0;
    }
    return -ENOENT;
}

const char *sampi_mpit_pvar_summary(const char *name)
{
    for (int i = 0; i < SAMPI_PVAR__COUNT; i++)
        if (strcmp(sampi_pvar_descs[i].name, name) == 0)
            return sampi_pvar_summaries[i];
    return NULL;
}
