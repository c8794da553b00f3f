/*
 * node.h - what the node this process runs on says about waiting: how many
 * ranks of the job share it, on how many CPUs, and whether Open MPI itself
 * yields when idle (struct sampi_node_facts, wait_mode.h).
 */
#ifndef SAMPI_NODE_H
#define SAMPI_NODE_H

#include "wait_mode.h"

/* Fill *f.  With `collective` (every rank of MPI_COMM_WORLD calls it, as in
 * MPI_Init), the ranks are counted with MPI_Comm_split_type(SHARED) and the
 * CPUs are the union of their bindings; otherwise from Open MPI's
 * OMPI_COMM_WORLD_LOCAL_SIZE and the node's online CPUs, without talking to
 * anyone.  Open MPI's mpi_yield_when_idle is read through MPI_T. */
void sampi_node_facts_gather(struct sampi_node_facts *f, int collective);

/* 1 when Open MPI started this job's ranks on more than one node
 * (OMPI_COMM_WORLD_LOCAL_SIZE below OMPI_COMM_WORLD_SIZE), 0 otherwise or
 * when it does not say.  Read once; no communication. */
int sampi_node_job_spans_nodes(void);

#endif
