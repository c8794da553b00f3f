/*
 * config.h - SAMPI's control-variable registry (values and parsing).
 *
 * The variables themselves are listed once, each in its owner's .def file,
 * merged by the build into one table (cvars.def).  Values start at
 * their defaults, are overridden from SAMPI_* environment variables when the
 * library starts, and can be changed later by sampi_cvar_set (the MPI_T write
 * path).  Precedence: later writes win, so MPI_T > environment > default.
 */
#ifndef SAMPI_CONFIG_H
#define SAMPI_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum sampi_cvar_id {
#define SAMPI_CVAR(id, ...) SAMPI_CVAR_##id,
#include "cvars.def"
#undef SAMPI_CVAR
    SAMPI_CVAR__COUNT
};

enum sampi_cvar_type {
    SAMPI_CVAR_TYPE_INT,    /* signed integer in [min, max] */
    SAMPI_CVAR_TYPE_SIZE,   /* byte count, k/m/g suffixes */
    SAMPI_CVAR_TYPE_BOOL,   /* 0/1, also true/false/yes/no/on/off */
    SAMPI_CVAR_TYPE_ENUM,   /* one of `items`; the value is the item's index */
    SAMPI_CVAR_TYPE_STRING, /* free text, checked by its user */
};

struct sampi_cvar_desc {
    const char *name; /* without the sampi_ prefix */
    enum sampi_cvar_type type;
    const char *default_text;
    const char *const *items; /* ENUM only, NULL-terminated */
    long long min, max;
    const char *summary;
    const char *description;
};

#define SAMPI_CVAR_STRING_MAX 256

extern const struct sampi_cvar_desc sampi_cvar_descs[SAMPI_CVAR__COUNT];

/* Whether a variable has a per-communicator override (the MPI_T variant
 * "sampi_comm_<name>" bound to MPI_T_BIND_MPI_COMM), and when it may be set. */
enum sampi_cvar_comm_override {
    SAMPI_CVAR_COMM_NONE,
    SAMPI_CVAR_COMM_ANYTIME,    /* applies from the next call on the communicator */
    SAMPI_CVAR_COMM_BEFORE_USE, /* only before the communicator's first call */
};

/* MPI_T metadata of a variable (SAMPI_CVAR_INFO in cvars.def). */
struct sampi_cvar_info {
    int present;   /* the entry has a SAMPI_CVAR_INFO line */
    int verbosity; /* MPI_T_VERBOSITY_* */
    int scope;     /* MPI_T_SCOPE_* */
    enum sampi_cvar_comm_override comm;
};

extern const struct sampi_cvar_info sampi_cvar_infos[SAMPI_CVAR__COUNT];

/* A STRING variable's own grammar (SAMPI_CVAR_PARSE in its .def): 0, or
 * -EINVAL with a message naming the variable in err. */
typedef int sampi_cvar_parse_fn(const char *text, char *err, size_t errlen);

/* The enum item lists (SAMPI_CVAR_ITEMS) and checks (SAMPI_CVAR_PARSE) that
 * the variables' owners define. */
#define SAMPI_CVAR(...)
#define SAMPI_CVAR_ITEMS(names)  extern const char *const names[];
#define SAMPI_CVAR_PARSE(id, fn) sampi_cvar_parse_fn fn;
#include "cvars.def"
#undef SAMPI_CVAR_PARSE
#undef SAMPI_CVAR_ITEMS
#undef SAMPI_CVAR

enum sampi_fallback_policy { SAMPI_FALLBACK_SILENT, SAMPI_FALLBACK_WARN, SAMPI_FALLBACK_ERROR };

/* Parse `text` for variable `id` without changing anything.  0 and *value
 * (the integer value, or the enum index) on success; -EINVAL and a message
 * naming the variable and the accepted values in `err` otherwise. */
int sampi_cvar_parse(enum sampi_cvar_id id, const char *text, long long *value, char *err,
                     size_t errlen);
/* Parse and store.  Same return as sampi_cvar_parse; on error nothing changes. */
int sampi_cvar_set(enum sampi_cvar_id id, const char *text, char *err, size_t errlen);
/* Current value: integer / bool / enum index.  For a STRING variable, a number
 * that changes at every write (a generation), so that code deriving something
 * from the text can cache it and re-derive only when this changes. */
long long sampi_cvar_int(enum sampi_cvar_id id);
/* How many times sampi_cvar_set succeeded so far (any variable). */
uint64_t sampi_cvar_writes(void);
/* Current value as text (enum item name, string, or decimal integer) into buf. */
const char *sampi_cvar_text(enum sampi_cvar_id id, char *buf, size_t len);
/* "SAMPI_ALGORITHM" for SAMPI_CVAR_ALGORITHM. */
const char *sampi_cvar_env_name(enum sampi_cvar_id id, char *buf, size_t len);
/* Index of an enum item by name, or -1. */
int sampi_cvar_enum_index(enum sampi_cvar_id id, const char *item);

/* Reset every variable to its default, then apply SAMPI_* from the environment
 * (each bad value: one warning naming the variable and accepted values, and the
 * default kept).  Returns how many environment values were rejected. */
int sampi_config_load(void);
/* A hash of every value that changes the communication pattern, used to check
 * at communicator set-up that all ranks were configured alike. */
uint32_t sampi_config_pattern_hash(void);

#endif
