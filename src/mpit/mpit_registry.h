/*
 * mpit_registry.h - SAMPI's side of the MPI_T interface: index mapping,
 * handles, enums and pvar sessions.
 *
 * SAMPI's K control variables take MPI_T indices 0..K-1, its pvars 0..P-1 and
 * its one category ("sampi") index 0; Open MPI's own are shifted up by K, P
 * and 1 in every call that takes or returns an index.  K and P are fixed when
 * the library is loaded, so indices are stable for the whole run even though
 * Open MPI's count changes around MPI_Init (open-mpi/ompi#11492).  Handles,
 * enums and sessions that SAMPI hands out live in lists here and calls are
 * routed by membership: a pointer not in a list is never dereferenced, only
 * passed on to the layer below.
 *
 * Nothing here calls MPI.  The layer below (Open MPI's PMPI_T_* in the
 * library, a fake in the unit tests) and the two questions about MPI state
 * that SAMPI's own variables need are passed in as a struct sampi_mpit_native.
 * Every function is safe from any thread.
 */
#ifndef SAMPI_MPIT_REGISTRY_H
#define SAMPI_MPIT_REGISTRY_H

#include <mpi.h>
#include <stddef.h>

struct sampi_comm;

struct sampi_mpit_native {
    int (*init_thread)(int required, int *provided);
    int (*finalize)(void);
    int (*cvar_get_num)(int *num);
    int (*cvar_get_info)(int index, char *name, int *name_len, int *verbosity,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *scope);
    int (*cvar_get_index)(const char *name, int *index);
    int (*cvar_handle_alloc)(int index, void *obj, MPI_T_cvar_handle *handle, int *count);
    int (*cvar_handle_free)(MPI_T_cvar_handle *handle);
    int (*cvar_read)(MPI_T_cvar_handle handle, void *buf);
    int (*cvar_write)(MPI_T_cvar_handle handle, const void *buf);
    int (*category_get_num)(int *num);
    int (*category_get_info)(int index, char *name, int *name_len, char *desc, int *desc_len,
                             int *num_cvars, int *num_pvars, int *num_categories);
    int (*category_get_index)(const char *name, int *index);
    int (*category_get_cvars)(int index, int len, int indices[]);
    int (*category_get_pvars)(int index, int len, int indices[]);
    int (*category_get_categories)(int index, int len, int indices[]);
    int (*category_changed)(int *stamp);
    int (*pvar_get_num)(int *num);
    int (*pvar_get_info)(int index, char *name, int *name_len, int *verbosity, int *var_class,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *readonly, int *continuous, int *atomic);
    int (*pvar_get_index)(const char *name, int var_class, int *index);
    int (*pvar_session_create)(MPI_T_pvar_session *session);
    int (*pvar_session_free)(MPI_T_pvar_session *session);
    int (*pvar_handle_alloc)(MPI_T_pvar_session session, int index, void *obj,
                             MPI_T_pvar_handle *handle, int *count);
    int (*pvar_handle_free)(MPI_T_pvar_session session, MPI_T_pvar_handle *handle);
    int (*pvar_start)(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
    int (*pvar_stop)(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
    int (*pvar_read)(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
    int (*pvar_write)(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf);
    int (*pvar_reset)(MPI_T_pvar_session session, MPI_T_pvar_handle handle);
    int (*pvar_readreset)(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf);
    int (*enum_get_info)(MPI_T_enum enumtype, int *num, char *name, int *name_len);
    int (*enum_get_item)(MPI_T_enum enumtype, int index, int *value, char *name, int *name_len);
    /* SAMPI's state for the communicator obj points to (an MPI_Comm *),
     * created if needed: MPI_SUCCESS, or an MPI_T error class. */
    int (*comm_state)(void *obj, struct sampi_comm **c);
    /* Whether MPI_Finalize has completed. */
    int (*mpi_finalized)(void);
};

/* The MPI_T functions, with the layer below as first argument.  Same
 * arguments and return codes as the standard's; SAMPI's variables behave as
 * sampi(7) documents. */
int sampi_mpit_init_thread(const struct sampi_mpit_native *nt, int required, int *provided);
int sampi_mpit_finalize(const struct sampi_mpit_native *nt);
int sampi_mpit_cvar_get_num(const struct sampi_mpit_native *nt, int *num);
int sampi_mpit_cvar_get_info(const struct sampi_mpit_native *nt, int index, char *name,
                             int *name_len, int *verbosity, MPI_Datatype *datatype,
                             MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind,
                             int *scope);
int sampi_mpit_cvar_get_index(const struct sampi_mpit_native *nt, const char *name, int *index);
int sampi_mpit_cvar_handle_alloc(const struct sampi_mpit_native *nt, int index, void *obj,
                                 MPI_T_cvar_handle *handle, int *count);
int sampi_mpit_cvar_handle_free(const struct sampi_mpit_native *nt, MPI_T_cvar_handle *handle);
int sampi_mpit_cvar_read(const struct sampi_mpit_native *nt, MPI_T_cvar_handle handle, void *buf);
int sampi_mpit_cvar_write(const struct sampi_mpit_native *nt, MPI_T_cvar_handle handle,
                          const void *buf);
int sampi_mpit_category_get_num(const struct sampi_mpit_native *nt, int *num);
int sampi_mpit_category_get_info(const struct sampi_mpit_native *nt, int index, char *name,
                                 int *name_len, char *desc, int *desc_len, int *num_cvars,
                                 int *num_pvars, int *num_categories);
int sampi_mpit_category_get_index(const struct sampi_mpit_native *nt, const char *name, int *index);
int sampi_mpit_category_get_cvars(const struct sampi_mpit_native *nt, int index, int len,
                                  int indices[]);
int sampi_mpit_category_get_pvars(const struct sampi_mpit_native *nt, int index, int len,
                                  int indices[]);
int sampi_mpit_category_get_categories(const struct sampi_mpit_native *nt, int index, int len,
                                       int indices[]);
int sampi_mpit_category_changed(const struct sampi_mpit_native *nt, int *stamp);
int sampi_mpit_pvar_get_num(const struct sampi_mpit_native *nt, int *num);
int sampi_mpit_pvar_get_info(const struct sampi_mpit_native *nt, int index, char *name,
                             int *name_len, int *verbosity, int *var_class, MPI_Datatype *datatype,
                             MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind,
                             int *readonly, int *continuous, int *atomic);
int sampi_mpit_pvar_get_index(const struct sampi_mpit_native *nt, const char *name, int var_class,
                              int *index);
int sampi_mpit_pvar_session_create(const struct sampi_mpit_native *nt, MPI_T_pvar_session *session);
int sampi_mpit_pvar_session_free(const struct sampi_mpit_native *nt, MPI_T_pvar_session *session);
int sampi_mpit_pvar_handle_alloc(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                                 int index, void *obj, MPI_T_pvar_handle *handle, int *count);
int sampi_mpit_pvar_handle_free(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                                MPI_T_pvar_handle *handle);
int sampi_mpit_pvar_start(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                          MPI_T_pvar_handle handle);
int sampi_mpit_pvar_stop(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                         MPI_T_pvar_handle handle);
int sampi_mpit_pvar_read(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                         MPI_T_pvar_handle handle, void *buf);
int sampi_mpit_pvar_write(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                          MPI_T_pvar_handle handle, const void *buf);
int sampi_mpit_pvar_reset(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                          MPI_T_pvar_handle handle);
int sampi_mpit_pvar_readreset(const struct sampi_mpit_native *nt, MPI_T_pvar_session session,
                              MPI_T_pvar_handle handle, void *buf);
int sampi_mpit_enum_get_info(const struct sampi_mpit_native *nt, MPI_T_enum enumtype, int *num,
                             char *name, int *name_len);
int sampi_mpit_enum_get_item(const struct sampi_mpit_native *nt, MPI_T_enum enumtype, int index,
                             int *value, char *name, int *name_len);

/* SAMPI's own variable counts (K and P above), and the MPI_T name of its
 * control variable i < K (NULL otherwise). */
int sampi_mpit_num_cvars(void);
int sampi_mpit_num_pvars(void);
const char *sampi_mpit_cvar_name(int i);

/* What MPI_T has no query for, for sampi_info and the man page: by the MPI_T
 * name of one of SAMPI's variables.  0, or -ENOENT for other names. */
struct sampi_mpit_cvar_doc {
    const char *default_text; /* as the environment variable takes it */
    char env[64];             /* "SAMPI_ALGORITHM", or "" for per-communicator variants */
    const char *writable;     /* when an MPI_T write is accepted */
    const char *summary;      /* its meaning in one line (cvars.def) */
};
int sampi_mpit_cvar_doc(const char *name, struct sampi_mpit_cvar_doc *doc);
/* A pvar's meaning in one line (pvars.def), or NULL for other names. */
const char *sampi_mpit_pvar_summary(const char *name);
/* The pvar's element count in words ("1", "one per algorithm: auto, ..."). */
int sampi_mpit_pvar_doc(const char *name, char *count_text, size_t len);

#endif
