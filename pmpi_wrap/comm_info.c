/*
 * comm_info.c - per-communicator choice by MPI info hints.
 *
 * An unmodified program cannot call sampi_comm_set_algorithm, but it can
 * attach hints to a communicator:
 *
 *   MPI_Info_set(info, "sampi_algorithm", "optireduce");
 *   MPI_Comm_set_info(comm, info);          (or MPI_Comm_dup_with_info)
 *
 * Keys: sampi_algorithm (an algorithm name, or "default" to return to
 * sampi_algorithm) and sampi_netdev (a data path name, or "default"); names
 * as SAMPI_ALGORITHM takes them, case ignored.  An empty value also clears,
 * where the MPI library lets one through (Open MPI's MPI_Info_set refuses it).
 * They go through the same setters as the C API, so a hint and a call of
 * sampi_comm_set_algorithm / sampi_comm_set_netdev are one setting.  The PMPI
 * call runs first and its result is returned unchanged: the MPI standard has
 * implementations ignore hints they do not understand, so a bad value is
 * reported (one warning, from rank 0 of the communicator) and leaves the
 * setting as it was.  Intercommunicators are left alone (SAMPI never runs on
 * them).  Plain MPI_Comm_dup is not wrapped: SAMPI's choices are not carried
 * to duplicates (comm.c), whatever MPI_Comm_get_info reports for them.
 */
#include "comm.h"
#include "lane.h"
#include "sampi.h"
#include "sampi_internal.h"
#include "wrap.h"

#include <string.h>
#include <strings.h>

static const struct hint {
    const char *key;
    enum sampi_cvar_id var; /* its names and the parser's message */
    int (*set)(MPI_Comm comm, const char *value);
} hints[] = {
    {"sampi_algorithm", SAMPI_CVAR_ALGORITHM, sampi_comm_set_algorithm},
    {"sampi_netdev", SAMPI_CVAR_NETDEV, sampi_comm_set_netdev},
};

/* Only rank 0 of the communicator warns: the hint is collective, and one line
 * per rank would bury the message on a large job.  The others keep it at
 * sampi_verbose >= 2, for a value given on some ranks only. */
static void apply_one(MPI_Comm comm, int rank, const struct hint *h, const char *value)
{
    const int level = rank == 0 ? SAMPI_LOG_WARN : SAMPI_LOG_SETUP;
    const char *name = "";
    char err[640];
    long long v = 0;
    if (*value && strcasecmp(value, "default") != 0) {
        if (sampi_cvar_parse(h->var, value, &v, err, sizeof err)) {
            sampi_log(level, "MPI info hint ignored: %s (or 'default' to clear)", err);
            return;
        }
        name = sampi_cvar_descs[h->var].items[v]; /* the canonical spelling */
    }
    int rc = h->set(comm, name);
    if (rc == MPI_ERR_OTHER)
        sampi_log(level,
                  "MPI info hint %s='%s' ignored: the communicator's data path was opened at its "
                  "first MPI_Allreduce; give it to MPI_Comm_dup_with_info or before that call",
                  h->key, value);
    else if (rc != MPI_SUCCESS)
        sampi_log(level, "MPI info hint %s='%s' ignored: SAMPI could not apply it (error %d)",
                  h->key, value, rc);
}

static void apply_hints(MPI_Comm comm, MPI_Info info)
{
    int inter = 1, rank = 0;
    if (info == MPI_INFO_NULL || comm == MPI_COMM_NULL || !sampi_runtime_mpi_ready())
        return;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return;
    PMPI_Comm_rank(comm, &rank);
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        char value[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        if (PMPI_Info_get(info, hints[i].key, MPI_MAX_INFO_VAL, value, &flag) == MPI_SUCCESS &&
            flag)
            apply_one(comm, rank, &hints[i], value);
    }
}

int MPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    int rc = PMPI_Comm_set_info(comm, info);
    if (rc != MPI_SUCCESS || !sampi_runtime_mpi_ready())
        return rc;
    /* The call is collective, so every rank gets here whatever its keys: have
     * the next eligible MPI_Allreduce check again that all ranks agree, or a
     * mismatch set after the first call would make ranks run different
     * patterns (sampi_comm_agree ran only once). */
    struct sampi_comm *c = NULL;
    if (sampi_comm_get(comm, 0, &c) == 0) {
        c->agreed = 0;
        c->mismatch = 0;
    }
    apply_hints(comm, info);
    sampi_lane_close_all(); /* the next calls decide again */
    return rc;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc == MPI_SUCCESS)
        apply_hints(*newcomm, info);
    return rc;
}
