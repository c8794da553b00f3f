/*
 * sampi_info.c - what SAMPI was built with, what it finds on this host, and
 * its control and performance variables.
 *
 * Everything shown about a variable comes from the standard MPI_T interface
 * (SAMPI's variables are the members of the MPI_T category "sampi"), so a
 * correct listing also shows that the interposition works; only what MPI_T
 * has no query for (the default, the environment variable, a pvar's element
 * names, the one-line summary) is looked up in SAMPI's registry by name.
 * Runs as a singleton (no mpirun needed): MPI is initialised only to show the
 * MPI_COMM_WORLD values of the communicator-bound variables, and not at all
 * for --man or --version.
 */
#define _GNU_SOURCE /* dladdr */
#include "sampi_autoconf.h"

#include "dgram.h"
#include "module.h"
#include "mpit_registry.h"
#include "netdev.h"
#include "pin.h"
#include "sampi.h"
#include "progress_mode.h"
#include "wait_mode.h"

#include <mpi.h>

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SAMPI_PREFIX
#define SAMPI_PREFIX "unknown"
#endif
#ifndef SAMPI_LIBDIR
#define SAMPI_LIBDIR SAMPI_PREFIX "/lib"
#endif

/* FORMAT_LIST: one line per variable (the default); FORMAT_FULL: every
 * attribute of each (--all, or a NAME). */
enum format { FORMAT_LIST, FORMAT_FULL, FORMAT_PARSABLE, FORMAT_MAN };

struct options {
    enum format format;
    int ompi; /* also Open MPI's own variables */
    const char *only;
};

static const char usage[] =
    "usage: sampi_info [-a | --all | --parsable | --man] [--ompi] [NAME]\n"
    "       sampi_info -v | --version\n"
    "What SAMPI was built with and finds here, then its MPI_T control and performance\n"
    "variables, one line each: name, value, default, meaning (see sampi_info(1)).\n"
    "  NAME           show every attribute of the variable NAME only\n"
    "  -a, --all      every attribute of every variable\n"
    "  --ompi         also list Open MPI's own variables\n"
    "  --parsable     one KIND:NAME:FIELD:VALUE line per attribute\n"
    "  --man          the variable sections of sampi(7), in Markdown\n"
    "  -v, --version  the version, in one line\n"
    "  -h, --help     this text\n";

static const char *const verbosity_names[] = {
    "MPI_T_VERBOSITY_USER_BASIC",   "MPI_T_VERBOSITY_USER_DETAIL",   "MPI_T_VERBOSITY_USER_ALL",
    "MPI_T_VERBOSITY_TUNER_BASIC",  "MPI_T_VERBOSITY_TUNER_DETAIL",  "MPI_T_VERBOSITY_TUNER_ALL",
    "MPI_T_VERBOSITY_MPIDEV_BASIC", "MPI_T_VERBOSITY_MPIDEV_DETAIL", "MPI_T_VERBOSITY_MPIDEV_ALL",
};
static const char *const scope_names[] = {
    "MPI_T_SCOPE_CONSTANT", "MPI_T_SCOPE_READONLY", "MPI_T_SCOPE_LOCAL",  "MPI_T_SCOPE_GROUP",
    "MPI_T_SCOPE_GROUP_EQ", "MPI_T_SCOPE_ALL",      "MPI_T_SCOPE_ALL_EQ",
};
static const char *const bind_names[] = {
    "MPI_T_BIND_NO_OBJECT",      "MPI_T_BIND_MPI_COMM",    "MPI_T_BIND_MPI_DATATYPE",
    "MPI_T_BIND_MPI_ERRHANDLER", "MPI_T_BIND_MPI_FILE",    "MPI_T_BIND_MPI_GROUP",
    "MPI_T_BIND_MPI_OP",         "MPI_T_BIND_MPI_REQUEST", "MPI_T_BIND_MPI_WIN",
    "MPI_T_BIND_MPI_MESSAGE",    "MPI_T_BIND_MPI_INFO",
};
static const char *const class_names[] = {
    "MPI_T_PVAR_CLASS_STATE",         "MPI_T_PVAR_CLASS_LEVEL",
    "MPI_T_PVAR_CLASS_SIZE",          "MPI_T_PVAR_CLASS_PERCENTAGE",
    "MPI_T_PVAR_CLASS_HIGHWATERMARK", "MPI_T_PVAR_CLASS_LOWWATERMARK",
    "MPI_T_PVAR_CLASS_COUNTER",       "MPI_T_PVAR_CLASS_AGGREGATE",
    "MPI_T_PVAR_CLASS_TIMER",         "MPI_T_PVAR_CLASS_GENERIC",
};

#define NAME_OF(table, i)                                                                          \
    ((i) >= 0 && (size_t)(i) < sizeof(table) / sizeof(table[0]) ? table[i] : "unknown")

struct dtype_name {
    MPI_Datatype dt;
    const char *name;
    size_t size;
};

static const char *dtype_name(MPI_Datatype dt, size_t *size)
{
    const struct dtype_name table[] = {
        {MPI_INT, "MPI_INT", sizeof(int)},
        {MPI_UNSIGNED, "MPI_UNSIGNED", sizeof(unsigned)},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG", sizeof(unsigned long)},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG", sizeof(unsigned long long)},
        {MPI_COUNT, "MPI_COUNT", sizeof(MPI_Count)},
        {MPI_CHAR, "MPI_CHAR", 1},
        {MPI_DOUBLE, "MPI_DOUBLE", sizeof(double)},
        /* outside the standard's set, but Open MPI uses them for its own */
        {MPI_C_BOOL, "MPI_C_BOOL", sizeof(_Bool)},
        {MPI_LONG_LONG, "MPI_LONG_LONG", sizeof(long long)},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].dt == dt) {
            if (size)
                *size = table[i].size;
            return table[i].name;
        }
    if (size)
        *size = 8;
    return "other";
}

/* One variable, as far as MPI_T (and the registry, for ours) describes it. */
struct var {
    int is_pvar;
    int index;
    char name[256];
    char desc[4096];
    int verbosity, bind, scope, var_class, readonly, continuous, atomic;
    MPI_Datatype dt;
    MPI_T_enum en;
    char enum_text[1024]; /* "sampi_algorithm: auto, native, ..." */
    char value[512];      /* "" when not shown */
    int ours;
};

static void enum_text(MPI_T_enum en, char *out, size_t len)
{
    int num = 0, nlen;
    char name[128];
    out[0] = '\0';
    nlen = sizeof(name);
    if (en == MPI_T_ENUM_NULL || MPI_T_enum_get_info(en, &num, name, &nlen) != MPI_SUCCESS)
        return;
    size_t used = (size_t)snprintf(out, len, "%s:", name);
    for (int i = 0; i < num && used < len; i++) {
        int value;
        nlen = sizeof(name);
        if (MPI_T_enum_get_item(en, i, &value, name, &nlen) == MPI_SUCCESS)
            used += (size_t)snprintf(out + used, len - used, "%s %s", i ? "," : "", name);
    }
}

static const char *enum_item_of(MPI_T_enum en, int value, char *buf, size_t len)
{
    int num = 0;
    snprintf(buf, len, "%d", value);
    if (en == MPI_T_ENUM_NULL || MPI_T_enum_get_info(en, &num, NULL, NULL) != MPI_SUCCESS)
        return buf;
    for (int i = 0; i < num; i++) {
        int v, nlen;
        char name[128];
        nlen = sizeof(name);
        if (MPI_T_enum_get_item(en, i, &v, name, &nlen) == MPI_SUCCESS && v == value) {
            snprintf(buf, len, "%s", name);
            break;
        }
    }
    return buf;
}

/* Text of `count` elements of type dt in buf. */
static void format_value(MPI_Datatype dt, MPI_T_enum en, const void *buf, int count, char *out,
                         size_t len)
{
    if (dt == MPI_CHAR) {
        snprintf(out, len, "%.*s", count, (const char *)buf);
        return;
    }
    size_t used = 0, size = 0;
    dtype_name(dt, &size);
    for (int i = 0; i < count && used < len; i++) {
        const char *p = (const char *)buf + (size_t)i * size;
        char item[128];
        const char *sep = i ? " " : "";
        if (dt == MPI_INT && en != MPI_T_ENUM_NULL)
            used += (size_t)snprintf(out + used, len - used, "%s%s", sep,
                                     enum_item_of(en, *(const int *)p, item, sizeof(item)));
        else if (dt == MPI_INT)
            used += (size_t)snprintf(out + used, len - used, "%s%d", sep, *(const int *)p);
        else if (dt == MPI_UNSIGNED)
            used += (size_t)snprintf(out + used, len - used, "%s%u", sep, *(const unsigned *)p);
        else if (dt == MPI_UNSIGNED_LONG)
            used +=
                (size_t)snprintf(out + used, len - used, "%s%lu", sep, *(const unsigned long *)p);
        else if (dt == MPI_DOUBLE)
            used += (size_t)snprintf(out + used, len - used, "%s%g", sep, *(const double *)p);
        else if (dt == MPI_COUNT)
            used += (size_t)snprintf(out + used, len - used, "%s%lld", sep,
                                     (long long)*(const MPI_Count *)p);
        else
            used += (size_t)snprintf(out + used, len - used, "%s%llu", sep,
                                     *(const unsigned long long *)p);
    }
}

/* The object a bound variable is read on: MPI_COMM_WORLD when MPI is up. */
static void *object_for(int bind, MPI_Comm *world)
{
    int up = 0;
    MPI_Initialized(&up);
    if (bind == MPI_T_BIND_NO_OBJECT)
        return NULL;
    if (bind == MPI_T_BIND_MPI_COMM && up) {
        *world = MPI_COMM_WORLD;
        return world;
    }
    return (void *)-1;
}

/* Only SAMPI's values are read: Open MPI 4.1 crashes reading some of its own
 * (variables of components it has unloaded, e.g. opal_common_ofi_verbose);
 * ompi_info shows those. */
static void read_cvar(struct var *v)
{
    MPI_Comm world;
    void *obj = object_for(v->bind, &world);
    MPI_T_cvar_handle h;
    int count = 0;
    if (!v->ours || obj == (void *)-1 ||
        MPI_T_cvar_handle_alloc(v->index, obj, &h, &count) != MPI_SUCCESS)
        return;
    size_t size = 0;
    dtype_name(v->dt, &size);
    void *buf = calloc((size_t)(count > 0 ? count : 1) + 1, size);
    if (buf && MPI_T_cvar_read(h, buf) == MPI_SUCCESS)
        format_value(v->dt, v->en, buf, count, v->value, sizeof(v->value));
    free(buf);
    MPI_T_cvar_handle_free(&h);
}

/* Only SAMPI's continuous pvars have a value worth showing outside a
 * session; Open MPI's are not read (as above, and allocating some of their
 * handles is known to crash). */
static void read_pvar(struct var *v, MPI_T_pvar_session session)
{
    MPI_Comm world;
    void *obj = object_for(v->bind, &world);
    MPI_T_pvar_handle h;
    int count = 0;
    if (!v->ours || !v->continuous || obj == (void *)-1 ||
        MPI_T_pvar_handle_alloc(session, v->index, obj, &h, &count) != MPI_SUCCESS)
        return;
    size_t size = 0;
    dtype_name(v->dt, &size);
    void *buf = calloc((size_t)(count > 0 ? count : 1), size);
    if (buf && MPI_T_pvar_read(session, h, buf) == MPI_SUCCESS)
        format_value(v->dt, v->en, buf, count, v->value, sizeof(v->value));
    free(buf);
    MPI_T_pvar_handle_free(session, &h);
}

static int get_var(int is_pvar, int index, struct var *v)
{
    memset(v, 0, sizeof(*v));
    v->is_pvar = is_pvar;
    v->index = index;
    int nlen = sizeof(v->name), dlen = sizeof(v->desc);
    int rc = is_pvar ? MPI_T_pvar_get_info(index, v->name, &nlen, &v->verbosity, &v->var_class,
                                           &v->dt, &v->en, v->desc, &dlen, &v->bind, &v->readonly,
                                           &v->continuous, &v->atomic)
                     : MPI_T_cvar_get_info(index, v->name, &nlen, &v->verbosity, &v->dt, &v->en,
                                           v->desc, &dlen, &v->bind, &v->scope);
    if (rc != MPI_SUCCESS)
        return rc;
    enum_text(v->en, v->enum_text, sizeof(v->enum_text));
    return MPI_SUCCESS;
}

static void print_human(const struct var *v)
{
    struct sampi_mpit_cvar_doc doc;
    char count[512];
    printf("%s (%s %d)\n", v->name, v->is_pvar ? "pvar" : "cvar", v->index);
    if (v->value[0] || (!v->is_pvar && v->dt == MPI_CHAR))
        printf("  value:       %s\n", v->value);
    if (!v->is_pvar && sampi_mpit_cvar_doc(v->name, &doc) == 0) {
        printf("  default:     %s\n", doc.default_text);
        if (doc.env[0])
            printf("  environment: %s\n", doc.env);
        printf("  writable:    %s\n", doc.writable);
    }
    if (v->is_pvar)
        printf("  class:       %s\n", NAME_OF(class_names, v->var_class));
    printf("  datatype:    %s\n", dtype_name(v->dt, NULL));
    if (v->is_pvar && sampi_mpit_pvar_doc(v->name, count, sizeof(count)) == 0)
        printf("  count:       %s\n", count);
    if (v->enum_text[0])
        printf("  enum:        %s\n", v->enum_text);
    printf("  verbosity:   %s\n", NAME_OF(verbosity_names, v->verbosity));
    if (!v->is_pvar)
        printf("  scope:       %s\n", NAME_OF(scope_names, v->scope));
    printf("  binding:     %s\n", NAME_OF(bind_names, v->bind));
    if (v->is_pvar)
        printf("  flags:       readonly=%d continuous=%d atomic=%d\n", v->readonly, v->continuous,
               v->atomic);
    printf("  description: %s\n\n", v->desc);
}

static void print_parsable(const struct var *v)
{
    struct sampi_mpit_cvar_doc doc;
    char count[512];
    const char *k = v->is_pvar ? "pvar" : "cvar";
    printf("%s:%s:index:%d\n", k, v->name, v->index);
    printf("%s:%s:value:%s\n", k, v->name, v->value);
    if (!v->is_pvar && sampi_mpit_cvar_doc(v->name, &doc) == 0) {
        printf("%s:%s:default:%s\n", k, v->name, doc.default_text);
        printf("%s:%s:environment:%s\n", k, v->name, doc.env);
    }
    if (v->is_pvar) {
        printf("%s:%s:class:%s\n", k, v->name, NAME_OF(class_names, v->var_class));
        if (sampi_mpit_pvar_doc(v->name, count, sizeof(count)) == 0)
            printf("%s:%s:count:%s\n", k, v->name, count);
        printf("%s:%s:readonly:%d\n%s:%s:continuous:%d\n%s:%s:atomic:%d\n", k, v->name, v->readonly,
               k, v->name, v->continuous, k, v->name, v->atomic);
    } else {
        printf("%s:%s:scope:%s\n", k, v->name, NAME_OF(scope_names, v->scope));
    }
    printf("%s:%s:datatype:%s\n", k, v->name, dtype_name(v->dt, NULL));
    printf("%s:%s:enum:%s\n", k, v->name, v->enum_text);
    printf("%s:%s:verbosity:%s\n", k, v->name, NAME_OF(verbosity_names, v->verbosity));
    printf("%s:%s:binding:%s\n", k, v->name, NAME_OF(bind_names, v->bind));
    printf("%s:%s:description:%s\n", k, v->name, v->desc);
}

/* The first paragraph is one line, so that man.test can find it again in
 * the nroff pandoc makes of it. */
static void print_man(const struct var *v)
{
    struct sampi_mpit_cvar_doc doc;
    char count[512];
    printf("**%s**\n:   ", v->name);
    if (v->is_pvar) {
        sampi_mpit_pvar_doc(v->name, count, sizeof(count));
        printf("Class %s, datatype %s", NAME_OF(class_names, v->var_class),
               dtype_name(v->dt, NULL));
        if (v->enum_text[0])
            printf(" (enum %s)", v->enum_text);
        printf(", count %s. Binding %s; readonly %d, continuous %d, atomic %d; verbosity %s.\n",
               count, NAME_OF(bind_names, v->bind), v->readonly, v->continuous, v->atomic,
               NAME_OF(verbosity_names, v->verbosity));
    } else {
        sampi_mpit_cvar_doc(v->name, &doc);
        printf("Datatype %s", dtype_name(v->dt, NULL));
        if (v->enum_text[0])
            printf(" (enum %s)", v->enum_text);
        printf(", default %s", doc.default_text[0] ? doc.default_text : "(empty)");
        if (doc.env[0])
            printf(", environment %s", doc.env);
        printf(". Scope %s, binding %s, verbosity %s. Writable %s.\n",
               NAME_OF(scope_names, v->scope), NAME_OF(bind_names, v->bind),
               NAME_OF(verbosity_names, v->verbosity), doc.writable);
    }
    printf("\n    %s\n\n", v->desc);
}

/* ------------------------------------------------------------ the one-line listing */

/* One line of the default listing, kept until the column widths are known. */
struct row {
    char *name, *value, *dflt, *summary;
};

struct rows {
    struct row *r;
    size_t n, cap;
};

static char *dup_or_dash(const char *text)
{
    return strdup(text ? text : "-");
}

static void free_row(struct row *r)
{
    free(r->name);
    free(r->value);
    free(r->dflt);
    free(r->summary);
}

/* A value set from the environment may hold a newline or a tab: the listing
 * keeps one line per variable. */
static void one_line(char *text)
{
    for (; *text; text++)
        if ((unsigned char)*text < ' ')
            *text = ' ';
}

/* Open MPI's variables have no summary: their description's first sentence,
 * cut to a line. */
static void first_sentence(const char *desc, char *out, size_t len)
{
    enum { MAX_CHARS = 70 };
    size_t n = 0;
    while (desc[n] && desc[n] != '\n' && !(desc[n] == '.' && (desc[n + 1] == ' ' || !desc[n + 1])))
        n++;
    if (n > MAX_CHARS)
        snprintf(out, len, "%.*s...", MAX_CHARS - 3, desc);
    else
        snprintf(out, len, "%.*s", (int)n, desc);
}

static void add_row(struct rows *rows, const struct var *v)
{
    struct sampi_mpit_cvar_doc doc;
    char value[sizeof(v->value) + 2], summary[128];
    const char *dflt = NULL, *sum = NULL;
    if (rows->n == rows->cap) {
        size_t cap = rows->cap ? 2 * rows->cap : 64;
        struct row *grown = realloc(rows->r, cap * sizeof(*grown));
        if (!grown)
            return;
        rows->r = grown;
        rows->cap = cap;
    }
    /* Text variables may be empty: show that, so it is not taken for "not read". */
    if (v->value[0])
        snprintf(value, sizeof(value), "%s", v->value);
    else
        snprintf(value, sizeof(value), "%s", v->ours && !v->is_pvar ? "\"\"" : "-");
    if (v->ours && !v->is_pvar && sampi_mpit_cvar_doc(v->name, &doc) == 0) {
        dflt = doc.default_text[0] ? doc.default_text : "\"\"";
        sum = doc.summary;
    } else if (v->ours && v->is_pvar) {
        sum = sampi_mpit_pvar_summary(v->name);
    }
    if (!sum) {
        first_sentence(v->desc, summary, sizeof(summary));
        sum = summary;
    }
    struct row r = {strdup(v->name), strdup(value), dup_or_dash(dflt), strdup(sum)};
    if (!r.name || !r.value || !r.dflt || !r.summary) {
        free_row(&r);
        return;
    }
    one_line(r.value);
    one_line(r.summary);
    rows->r[rows->n++] = r;
}

static int fit(int width, const char *text, int cap)
{
    int len = (int)strlen(text);
    return len > width && len <= cap ? len : width;
}

/* Columns as wide as their longest entry (at least their heading), value and
 * default at most 16: a longer one pushes only the rest of its own line. */
static void print_rows(struct rows *rows, const char *title)
{
    int wn = (int)strlen(title), wv = 5, wd = 7;
    for (size_t i = 0; i < rows->n; i++) {
        wn = fit(wn, rows->r[i].name, 64);
        wv = fit(wv, rows->r[i].value, 16);
        wd = fit(wd, rows->r[i].dflt, 16);
    }
    printf("\n%-*s %-*s %-*s %s\n", wn, title, wv, "VALUE", wd, "DEFAULT", "MEANING");
    for (size_t i = 0; i < rows->n; i++) {
        struct row *r = &rows->r[i];
        printf("%-*s %-*s %-*s %s\n", wn, r->name, wv, r->value, wd, r->dflt, r->summary);
        free_row(r);
    }
    free(rows->r);
    *rows = (struct rows){0};
}

static void print_var(const struct options *o, const struct var *v, struct rows *rows)
{
    static void (*const printers[])(const struct var *) = {
        [FORMAT_FULL] = print_human,
        [FORMAT_PARSABLE] = print_parsable,
        [FORMAT_MAN] = print_man,
    };
    if (o->format == FORMAT_LIST)
        add_row(rows, v);
    else
        printers[o->format](v);
}

/* Indices to list: SAMPI's category's members, or every index with --ompi. */
static int *indices_of(const struct options *o, int is_pvar, int *n)
{
    int cat = -1, nc = 0, np = 0, ncat = 0, num = 0;
    if (MPI_T_category_get_index("sampi", &cat) != MPI_SUCCESS ||
        MPI_T_category_get_info(cat, NULL, NULL, NULL, NULL, &nc, &np, &ncat) != MPI_SUCCESS)
        return NULL;
    if (o->ompi && (is_pvar ? MPI_T_pvar_get_num(&num) : MPI_T_cvar_get_num(&num)) != MPI_SUCCESS)
        return NULL;
    int ours = is_pvar ? np : nc;
    *n = o->ompi ? num : ours;
    int *idx = calloc((size_t)*n + 1, sizeof(int));
    if (!idx)
        return NULL;
    if (o->ompi) {
        for (int i = 0; i < *n; i++)
            idx[i] = i;
    } else if ((is_pvar ? MPI_T_category_get_pvars(cat, ours, idx)
                        : MPI_T_category_get_cvars(cat, ours, idx)) != MPI_SUCCESS) {
        free(idx);
        return NULL;
    }
    return idx;
}

static int list(const struct options *o, int is_pvar, MPI_T_pvar_session session, int *shown)
{
    int n = 0, cat = -1, nc = 0;
    int *idx = indices_of(o, is_pvar, &n);
    if (!idx)
        return -1;
    MPI_T_category_get_index("sampi", &cat);
    MPI_T_category_get_info(cat, NULL, NULL, NULL, NULL, is_pvar ? NULL : &nc, is_pvar ? &nc : NULL,
                            NULL);
    struct var *v = malloc(sizeof(*v));
    struct rows rows = {0};
    for (int i = 0; v && i < n; i++) {
        /* Open MPI counts variables it cannot describe (open-mpi/ompi#11492). */
        if (get_var(is_pvar, idx[i], v) != MPI_SUCCESS)
            continue;
        if (o->only && strcmp(o->only, v->name) != 0)
            continue;
        v->ours = idx[i] < nc;
        if (o->format != FORMAT_MAN) {
            if (is_pvar)
                read_pvar(v, session);
            else
                read_cvar(v);
        }
        print_var(o, v, &rows);
        (*shown)++;
    }
    if (o->format == FORMAT_LIST)
        print_rows(&rows, is_pvar ? "PERFORMANCE VARIABLE" : "CONTROL VARIABLE");
    free(v);
    free(idx);
    return 0;
}

/* ------------------------------------------------------------ the header */

static void field(const char *label, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void field(const char *label, const char *fmt, ...)
{
    va_list ap;
    printf("%24s: ", label);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

/* A probe's answer: 0 usable, 1 only an open can tell, < 0 not usable. */
static void path(const char *label, int rc, const char *detail)
{
    const char *state = rc == 0 ? "usable" : rc > 0 ? "not checked" : "not usable here";
    field(label, "%s (%s)", state, detail);
}

/* What ompi_info shows first, for SAMPI: versions, where it lives, which data
 * paths were built and whether each can work on this host. */
static void print_header(int mpi_up)
{
    char text[MPI_MAX_LIBRARY_VERSION_STRING + 32], detail[512];
    int len = 0, major = 0, minor = 0;
    Dl_info dl;

    field("SAMPI", "%s", PACKAGE_VERSION);
    /* The library this process loaded may not be the one it was built with. */
    field("SAMPI library", "%s, %s", sampi_version(),
          dladdr((void *)sampi_version, &dl) && dl.dli_fname ? dl.dli_fname : "location unknown");
    field("Install prefix", "%s", SAMPI_PREFIX);
    field("Link with", "mpicc app.c -L%s -Wl,-rpath,%s -lsampi", SAMPI_LIBDIR, SAMPI_LIBDIR);
#ifdef OPEN_MPI
    field("Open MPI (built with)", "%d.%d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
          OMPI_RELEASE_VERSION);
#else
    field("MPI (built with)", "not Open MPI: MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
#endif
    text[0] = '\0';
    MPI_Get_library_version(text, &len);
    text[strcspn(text, "\n")] = '\0';
    MPI_Get_version(&major, &minor);
    field("MPI library (running)", "%s (MPI %d.%d)", text, major, minor);
    int hw = sampi_pin_describe(detail, sizeof(detail));
    field("hwloc", "built with %s; %s%s", SAMPI_HWLOC_VERSION, hw ? "not usable here: " : "",
          detail);
    /* this process's: under mpirun, rank 0's view of its node */
    field("Wait mode", "%s",
          mpi_up ? sampi_wait_mode_describe(detail, sizeof(detail)) : "not decided (no MPI)");
    field("Progress", "%s",
          mpi_up ? sampi_progress_mode_describe(detail, sizeof(detail)) : "not decided (no MPI)");

    path("Data path mpi", mpi_up ? 0 : -1,
         mpi_up ? "PMPI point-to-point on a private communicator; always built"
                : "MPI_Init failed");
    /* ofi, ofi-udp and dpdk are modules (netdev/module.h): probed through
     * them, as a communicator would load them */
    char err[512], loaded[32];
    const struct sampi_module *ofi = sampi_module_load("sampi_netdev_ofi", "ofi", err, sizeof(err));
    if (!ofi) {
        field("Data path ofi", "built with libfabric %s; module not loadable here: %s",
              SAMPI_FABRIC_VERSION, err);
    } else {
        field("Data path ofi", "built with libfabric %s, %s loaded", SAMPI_FABRIC_VERSION,
              ofi->version ? ofi->version(loaded, sizeof(loaded)) : "?");
        const char *providers[] = {"shm", "tcp;ofi_rxm", NULL};
        for (int i = 0; providers[i] && ofi->probe; i++) {
            char label[64];
            snprintf(label, sizeof(label), "ofi %s", providers[i]);
            path(label, ofi->probe(providers[i], detail, sizeof(detail)), detail);
        }
        /* A provider the user named (sampi_ofi_provider) is probed too. */
        char *configured = NULL;
        int idx = -1, count = 0;
        MPI_T_cvar_handle h;
        if (MPI_T_cvar_get_index("sampi_ofi_provider", &idx) == MPI_SUCCESS &&
            MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) == MPI_SUCCESS) {
            if (count > 0 && (configured = calloc((size_t)count + 1, 1)) &&
                MPI_T_cvar_read(h, configured) != MPI_SUCCESS)
                configured[0] = '\0';
            MPI_T_cvar_handle_free(&h);
        }
        if (ofi->probe && configured && configured[0] && strcmp(configured, "shm") != 0 &&
            strcmp(configured, "tcp;ofi_rxm") != 0) {
            char label[64];
            snprintf(label, sizeof(label), "ofi %.50s", configured);
            one_line(label);
            path(label, ofi->probe(configured, detail, sizeof(detail)), detail);
        }
        free(configured);
    }
#ifdef SAMPI_DPDK_VERSION
    field("DPDK", "built with %s", SAMPI_DPDK_VERSION);
#endif
    static const char *const datagram[] = {"ofi-udp", "dpdk", NULL};
    for (int i = 0; datagram[i]; i++) {
        char label[64];
        snprintf(label, sizeof(label), "Datagram path %s", datagram[i]);
        const struct sampi_dgram_ops *ops = sampi_dgram_load(datagram[i], err, sizeof(err));
        if (!ops)
            field(label, "not available: %s", err);
        else if (ops->probe)
            path(label, ops->probe(detail, sizeof(detail)), detail);
        else
            field(label, "built (no probe)");
    }
}

static const char man_cvar_intro[] =
    "# CONTROL VARIABLES\n\n"
    "Every variable is an MPI_T control variable of the category **sampi** (MPI_T indices 0 to "
    "K-1; Open MPI's own follow) and, unless it is bound to a communicator, is also read from "
    "the environment variable named below. A value that does not parse is refused: by "
    "MPI_T_cvar_write with MPI_T_ERR_INVALID, and from the environment with one warning naming "
    "the variable and the accepted values, keeping the default.\n\n";
static const char man_pvar_intro[] =
    "# PERFORMANCE VARIABLES\n\n"
    "Counters (readonly 0, continuous 0) count per handle from MPI_T_pvar_start and can be "
    "written, reset and read-and-reset atomically (MPI_T_pvar_readreset); the others show the "
    "current state. Variables bound to MPI_T_BIND_MPI_COMM describe one communicator; the "
    "others the whole process.\n\n";

int main(int argc, char **argv)
{
    struct options o = {FORMAT_LIST, 0, NULL};
    int provided = 0, shown = 0, rc = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0 || strcmp(argv[i], "-a") == 0)
            o.format = FORMAT_FULL;
        else if (strcmp(argv[i], "--ompi") == 0)
            o.ompi = 1;
        else if (strcmp(argv[i], "--parsable") == 0 || strcmp(argv[i], "--parseable") == 0)
            o.format = FORMAT_PARSABLE;
        else if (strcmp(argv[i], "--man") == 0)
            o.format = FORMAT_MAN;
        else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--version") == 0) {
            printf("sampi_info (SAMPI) %s\n", PACKAGE_VERSION);
            return 0;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if (argv[i][0] != '-' && !o.only)
            o.only = argv[i];
        else {
            fputs(usage, stderr);
            return 2;
        }
    }
    /* One variable: all there is to say about it, and nothing else. */
    if (o.only && o.format == FORMAT_LIST)
        o.format = FORMAT_FULL;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "sampi_info: MPI_T_init_thread failed\n");
        return 1;
    }
    int mpi_up = o.format != FORMAT_MAN && MPI_Init(NULL, NULL) == MPI_SUCCESS;
    MPI_T_pvar_session session = MPI_T_PVAR_SESSION_NULL;
    if (o.format != FORMAT_MAN && MPI_T_pvar_session_create(&session) != MPI_SUCCESS)
        session = MPI_T_PVAR_SESSION_NULL;

    if ((o.format == FORMAT_LIST || o.format == FORMAT_FULL) && !o.only) {
        print_header(mpi_up);
        if (o.format == FORMAT_FULL)
            putchar('\n');
    }
    if (o.format == FORMAT_MAN)
        fputs(man_cvar_intro, stdout);
    if (list(&o, 0, session, &shown))
        goto fail;
    if (o.format == FORMAT_MAN)
        fputs(man_pvar_intro, stdout);
    if (list(&o, 1, session, &shown))
        goto fail;
    if (o.only && !shown) {
        fprintf(stderr, "sampi_info: no variable named '%s'%s\n", o.only,
                o.ompi ? "" : " among SAMPI's (try --ompi)");
        goto fail;
    }
    rc = 0;
fail:
    if (rc && !shown && !o.only)
        fprintf(stderr, "sampi_info: MPI_T has no category 'sampi': is libsampi interposed?\n");
    if (session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&session);
    /* MPI_T first: Open MPI 4.1 crashes in MPI_T_finalize after MPI_Finalize. */
    MPI_T_finalize();
    if (mpi_up)
        MPI_Finalize();
    return rc;
}
