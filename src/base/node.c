/*
 * node.c - the facts of the node (node.h) that decide how SAMPI waits.
 *
 * The CPUs are the launcher's bindings (sched_getaffinity: mpirun binds a
 * process before it starts, --bind-to core gives each rank its own core,
 * an oversubscribed launch binds none) united over the node's ranks: two
 * ranks bound to the same core count one CPU, so they yield.  Open MPI's own
 * decision is read too: mpirun sets mpi_yield_when_idle when it
 * oversubscribes a node, and a user may set it by hand.
 */
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */
#include "node.h"
#include "sampi_internal.h"

#include <mpi.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bindings are compared as bit masks of CPUs 0..MASK_CPUS-1; a CPU beyond
 * them is not counted (a node that large polls only if the rest suffice). */
enum { MASK_CPUS = CPU_SETSIZE, MASK_WORDS = MASK_CPUS / (8 * (int)sizeof(unsigned long)) };

/* This process's binding as a mask: 0, or -1 when it cannot be read. */
static int binding_mask(unsigned long mask[MASK_WORDS])
{
    cpu_set_t set;
    memset(mask, 0, MASK_WORDS * sizeof(unsigned long));
    if (sched_getaffinity(0, sizeof(set), &set))
        return -1;
    const int bits = 8 * (int)sizeof(unsigned long);
    for (int cpu = 0; cpu < CPU_SETSIZE && cpu < MASK_CPUS; cpu++)
        if (CPU_ISSET(cpu, &set))
            mask[cpu / bits] |= 1UL << (cpu % bits);
    return 0;
}

static int mask_count(const unsigned long mask[MASK_WORDS])
{
    int n = 0;
    for (int i = 0; i < MASK_WORDS; i++)
        n += __builtin_popcountl(mask[i]);
    return n;
}

/* Every rank of MPI_COMM_WORLD: the node's ranks and the union of their
 * bindings. */
static void count_collectively(struct sampi_node_facts *f)
{
    MPI_Comm node = MPI_COMM_NULL;
    unsigned long mask[MASK_WORDS];
    int bad = binding_mask(mask);
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) !=
        MPI_SUCCESS)
        return;
    PMPI_Comm_size(node, &f->local_ranks);
    /* one rank that cannot read its binding makes the CPUs unknown */
    PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MIN, node);
    PMPI_Allreduce(MPI_IN_PLACE, mask, MASK_WORDS, MPI_UNSIGNED_LONG, MPI_BOR, node);
    f->cpus = bad ? 0 : mask_count(mask);
    f->source = "the node's ranks and their bindings";
    PMPI_Comm_free(&node);
}

/* Without talking to anyone: Open MPI's count of the job's ranks on this
 * node, and the node's CPUs. */
static void count_locally(struct sampi_node_facts *f)
{
    const char *env = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    f->local_ranks = env ? atoi(env) : 0;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    f->cpus = online > 0 ? (int)online : 0;
    f->source = "OMPI_COMM_WORLD_LOCAL_SIZE and the online CPUs";
}

/* Open MPI's mpi_yield_when_idle through MPI_T: 1, 0, or -1 unknown. */
static int ompi_yield_when_idle(void)
{
    int provided, index = -1, count = 0, value = -1, verbosity, bind, scope;
    MPI_Datatype dt = MPI_DATATYPE_NULL;
    MPI_T_enum en;
    MPI_T_cvar_handle h;
    char name[64];
    int name_len = sizeof(name);
    if (sampi_t_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    if (PMPI_T_cvar_get_index("mpi_yield_when_idle", &index) == MPI_SUCCESS &&
        PMPI_T_cvar_get_info(index, name, &name_len, &verbosity, &dt, &en, NULL, NULL, &bind,
                             &scope) == MPI_SUCCESS &&
        (dt == MPI_C_BOOL || dt == MPI_INT) && bind == MPI_T_BIND_NO_OBJECT &&
        PMPI_T_cvar_handle_alloc(index, NULL, &h, &count) == MPI_SUCCESS) {
        /* Open MPI 4.1 gives MCA booleans as MPI_C_BOOL */
        union {
            _Bool b;
            int i;
        } v = {.i = 0};
        if (count == 1 && PMPI_T_cvar_read(h, &v) == MPI_SUCCESS)
            value = dt == MPI_C_BOOL ? v.b : v.i != 0;
        PMPI_T_cvar_handle_free(&h);
    }
    PMPI_T_finalize();
    return value;
}

void sampi_node_facts_gather(struct sampi_node_facts *f, int collective)
{
    *f = (struct sampi_node_facts){.local_ranks = 0, .cpus = 0, .ompi_yields = -1};
    if (collective)
        count_collectively(f);
    else
        count_locally(f);
    f->ompi_yields = ompi_yield_when_idle();
}

int sampi_node_job_spans_nodes(void)
{
    static _Atomic int spans = -1;
    int v = atomic_load_explicit(&spans, memory_order_relaxed);
    if (v < 0) {
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        const char *world = getenv("OMPI_COMM_WORLD_SIZE");
        v = local && world && atoi(local) > 0 && atoi(local) < atoi(world);
        atomic_store_explicit(&spans, v, memory_order_relaxed);
    }
    return v;
}
