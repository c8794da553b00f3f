/*
 * partial.c - sampi_partial_allreduce(), the public selective-reduce call
 * (include/sampi.h; the work is in src/selective/selective_client.c).
 */
#include "sampi.h"
#include "sampi_internal.h"
#include "selective_client.h"
#include "wrap.h"

#include <errno.h>

static void copy_out(const struct sampi_sel_result *r, sampi_partial_info_t *info)
{
    if (!info)
        return;
    info->group = r->group;
    info->kind = r->outcome;
    info->size = r->size;
    info->weight = r->weight;
    info->iteration = r->iteration;
    info->seconds = r->seconds;
}

int sampi_partial_allreduce(void *buf, int count, MPI_Datatype datatype, MPI_Comm comm,
                            sampi_partial_info_t *info)
{
    int inter = 0;
    if (!sampi_runtime_mpi_ready())
        return MPI_ERR_OTHER;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return MPI_ERR_COMM;
    if (count < 0)
        return MPI_ERR_COUNT;
    if (count > 0 && !buf)
        return MPI_ERR_BUFFER;
    if (datatype != MPI_FLOAT && datatype != MPI_DOUBLE)
        return MPI_ERR_TYPE;
    struct sampi_sel_result r = {0};
    if (info) {
        r.members = info->members;
        r.weights = info->weights;
        r.capacity = info->capacity;
    }
    int rc = sampi_selective_partial(buf, (size_t)count, datatype, comm, 1.0, &r);
    if (rc)
        return sampi_report_error(comm, rc);
    copy_out(&r, info);
    return MPI_SUCCESS;
}

int sampi_partial_last(MPI_Comm comm, sampi_partial_info_t *info)
{
    if (!info)
        return MPI_ERR_ARG;
    struct sampi_sel_result r = {
        .members = info->members, .weights = info->weights, .capacity = info->capacity};
    if (sampi_selective_last(&r))
        return MPI_ERR_OTHER;
    copy_out(&r, info);
    return MPI_SUCCESS;
}

int sampi_partial_finish(MPI_Comm comm)
{
    int inter = 0;
    if (!sampi_runtime_mpi_ready())
        return MPI_ERR_OTHER;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return MPI_ERR_COMM;
    sampi_selective_finish();
    return MPI_SUCCESS;
}
