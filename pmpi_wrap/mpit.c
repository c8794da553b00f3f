/*
 * mpit.c - the MPI_T entry points: SAMPI's variables first, Open MPI's after.
 *
 * Every MPI_T function is defined here, so that no call can reach Open MPI
 * with an index, handle, enum or session that means something else to it;
 * mpit_registry.c does the work, with Open MPI's PMPI_T_* as the layer below.
 * Tools that call PMPI_T_* directly bypass SAMPI and see Open MPI's own
 * indices only.
 */
#include "comm.h"
#include "mpit_registry.h"
#include "sampi_internal.h"
#include "sampi_internal.h"
#include "wrap.h"

#include <errno.h>

static int comm_state(void *obj, struct sampi_comm **c)
{
    MPI_Comm comm = *(MPI_Comm *)obj;
    int inter = 0;
    /* SAMPI keeps state only for intracommunicators, and only once MPI is up. */
    if (comm == MPI_COMM_NULL || !sampi_runtime_mpi_ready())
        return MPI_T_ERR_INVALID_HANDLE;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return MPI_T_ERR_INVALID_HANDLE;
    int rc = sampi_comm_get(comm, 1, c);
    return rc == 0 ? MPI_SUCCESS : rc == -ENOMEM ? MPI_T_ERR_MEMORY : MPI_T_ERR_INVALID_HANDLE;
}

static int mpi_finalized(void)
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    return finalized;
}

static const struct sampi_mpit_native pmpi = {
    .init_thread = sampi_t_init_thread, /* never lowers MPI's thread level */
    .finalize = PMPI_T_finalize,
    .cvar_get_num = PMPI_T_cvar_get_num,
    .cvar_get_info = PMPI_T_cvar_get_info,
    .cvar_get_index = PMPI_T_cvar_get_index,
    .cvar_handle_alloc = PMPI_T_cvar_handle_alloc,
    .cvar_handle_free = PMPI_T_cvar_handle_free,
    .cvar_read = PMPI_T_cvar_read,
    .cvar_write = PMPI_T_cvar_write,
    .category_get_num = PMPI_T_category_get_num,
    .category_get_info = PMPI_T_category_get_info,
    .category_get_index = PMPI_T_category_get_index,
    .category_get_cvars = PMPI_T_category_get_cvars,
    .category_get_pvars = PMPI_T_category_get_pvars,
    .category_get_categories = PMPI_T_category_get_categories,
    .category_changed = PMPI_T_category_changed,
    .pvar_get_num = PMPI_T_pvar_get_num,
    .pvar_get_info = PMPI_T_pvar_get_info,
    .pvar_get_index = PMPI_T_pvar_get_index,
    .pvar_session_create = PMPI_T_pvar_session_create,
    .pvar_session_free = PMPI_T_pvar_session_free,
    .pvar_handle_alloc = PMPI_T_pvar_handle_alloc,
    .pvar_handle_free = PMPI_T_pvar_handle_free,
    .pvar_start = PMPI_T_pvar_start,
    .pvar_stop = PMPI_T_pvar_stop,
    .pvar_read = PMPI_T_pvar_read,
    .pvar_write = PMPI_T_pvar_write,
    .pvar_reset = PMPI_T_pvar_reset,
    .pvar_readreset = PMPI_T_pvar_readreset,
    .enum_get_info = PMPI_T_enum_get_info,
    .enum_get_item = PMPI_T_enum_get_item,
    .comm_state = comm_state,
    .mpi_finalized = mpi_finalized,
};

/* Tools start MPI_T before MPI_Init: the registry (and the environment's
 * values) must be in place by then. */
int MPI_T_init_thread(int required, int *provided)
{
    sampi_runtime_init();
    return sampi_mpit_init_thread(&pmpi, required, provided);
}

int MPI_T_finalize(void)
{
    return sampi_mpit_finalize(&pmpi);
}

int MPI_T_cvar_get_num(int *num_cvar)
{
    return sampi_mpit_cvar_get_num(&pmpi, num_cvar);
}

int MPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                        MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                        int *bind, int *scope)
{
    return sampi_mpit_cvar_get_info(&pmpi, cvar_index, name, name_len, verbosity, datatype,
                                    enumtype, desc, desc_len, bind, scope);
}

int MPI_T_cvar_get_index(const char *name, int *cvar_index)
{
    return sampi_mpit_cvar_get_index(&pmpi, name, cvar_index);
}

int MPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count)
{
    return sampi_mpit_cvar_handle_alloc(&pmpi, cvar_index, obj_handle, handle, count);
}

int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    return sampi_mpit_cvar_handle_free(&pmpi, handle);
}

int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    return sampi_mpit_cvar_read(&pmpi, handle, buf);
}

int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    return sampi_mpit_cvar_write(&pmpi, handle, buf);
}

int MPI_T_category_get_num(int *num_cat)
{
    return sampi_mpit_category_get_num(&pmpi, num_cat);
}

int MPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                            int *num_cvars, int *num_pvars, int *num_categories)
{
    return sampi_mpit_category_get_info(&pmpi, cat_index, name, name_len, desc, desc_len, num_cvars,
                                        num_pvars, num_categories);
}

int MPI_T_category_get_index(const char *name, int *category_index)
{
    return sampi_mpit_category_get_index(&pmpi, name, category_index);
}

int MPI_T_category_get_cvars(int cat_index, int len, int indices[])
{
    return sampi_mpit_category_get_cvars(&pmpi, cat_index, len, indices);
}

int MPI_T_category_get_pvars(int cat_index, int len, int indices[])
{
    return sampi_mpit_category_get_pvars(&pmpi, cat_index, len, indices);
}

int MPI_T_category_get_categories(int cat_index, int len, int indices[])
{
    return sampi_mpit_category_get_categories(&pmpi, cat_index, len, indices);
}

int MPI_T_category_changed(int *stamp)
{
    return sampi_mpit_category_changed(&pmpi, stamp);
}

int MPI_T_pvar_get_num(int *num_pvar)
{
    return sampi_mpit_pvar_get_num(&pmpi, num_pvar);
}

int MPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                        MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                        int *bind, int *readonly, int *continuous, int *atomic)
{
    return sampi_mpit_pvar_get_info(&pmpi, pvar_index, name, name_len, verbosity, var_class,
                                    datatype, enumtype, desc, desc_len, bind, readonly, continuous,
                                    atomic);
}

int MPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    return sampi_mpit_pvar_get_index(&pmpi, name, var_class, pvar_index);
}

int MPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
    return sampi_mpit_pvar_session_create(&pmpi, session);
}

int MPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    return sampi_mpit_pvar_session_free(&pmpi, session);
}

int MPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                            MPI_T_pvar_handle *handle, int *count)
{
    return sampi_mpit_pvar_handle_alloc(&pmpi, session, pvar_index, obj_handle, handle, count);
}

int MPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    return sampi_mpit_pvar_handle_free(&pmpi, session, handle);
}

int MPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return sampi_mpit_pvar_start(&pmpi, session, handle);
}

int MPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return sampi_mpit_pvar_stop(&pmpi, session, handle);
}

int MPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    return sampi_mpit_pvar_read(&pmpi, session, handle, buf);
}

int MPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    return sampi_mpit_pvar_write(&pmpi, session, handle, buf);
}

int MPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return sampi_mpit_pvar_reset(&pmpi, session, handle);
}

int MPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    return sampi_mpit_pvar_readreset(&pmpi, session, handle, buf);
}

int MPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    return sampi_mpit_enum_get_info(&pmpi, enumtype, num, name, name_len);
}

int MPI_T_enum_get_item(MPI_T_enum enumtype, int index, int *value, char *name, int *name_len)
{
    return sampi_mpit_enum_get_item(&pmpi, enumtype, index, value, name, name_len);
}
