/*
 * module.h - data paths built as loadable modules, and how the core loads
 * them.
 *
 * libsampi keeps only the `mpi` netdev inside.  The data paths that need
 * libfabric or DPDK (`ofi`, `ofi-udp`, `dpdk`) are shared objects of their
 * own, opened with dlopen the first time a communicator asks for one, so a
 * program that never uses them never maps libfabric, DPDK, psm or ibverbs
 * (the way Open MPI loads its components and libfabric its DL providers).
 *
 * A module exports one symbol, `sampi_module` (struct sampi_module): the
 * ABI it was built for, the names of the registry's variables in the order
 * it was compiled with, and its ops table.  It defines no registry of its
 * own and calls no symbol of the core by name: the loader hands it a table
 * of the core's services (struct sampi_module_host) and netdev/module_glue.c,
 * built into every module, turns the usual calls (sampi_cvar_int, sampi_log,
 * sampi_waiter_allreduce, ...) into calls through that table.  So a module
 * works whether the core it serves is libsampi.so (linked or LD_PRELOADed)
 * or libsampi_core linked into a program, and it never binds to a second
 * copy of the registry.
 *
 * Where modules are looked for, in order, taking the first that loads:
 *  - sampi_module_path (SAMPI_MODULE_PATH), a colon-separated list of
 *    directories, when it is set: only those;
 *  - otherwise DIR/sampi and DIR, where DIR holds libsampi.so (found with
 *    dladdr: the build tree's .libs, or an installation moved elsewhere; not
 *    when libsampi_core is linked into the program), then the configured
 *    $(pkglibdir).
 * Loading is local to a process; the callers agree on the outcome across
 * the ranks of a communicator before anyone opens the data path
 * (sampi_netdev_load_agreed, sampi_dgram_open).  Modules are never
 * unloaded: libfabric and DPDK keep threads and handlers of their own.
 */
#ifndef SAMPI_MODULE_H
#define SAMPI_MODULE_H

#include "config.h"
#include "wait_mode.h"

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct sampi_netdev_ops;
struct sampi_dgram_ops;
struct sampi_waiter;

/* Bump whenever struct sampi_module, struct sampi_module_host, the netdev
 * or datagram ops and their instance structs (netdev.h, dgram.h) change
 * shape: the loader refuses a module built for another value. */
#define SAMPI_MODULE_ABI 4

/* The one symbol a module exports. */
#define SAMPI_MODULE_SYMBOL "sampi_module"
#define SAMPI_MODULE_EXPORT __attribute__((visibility("default")))

/* What the core offers its modules (the loader fills it; see module_glue.c
 * for the functions each entry stands for). */
struct sampi_module_host {
    long long (*cvar_int)(enum sampi_cvar_id id);
    const char *(*cvar_text)(enum sampi_cvar_id id, char *buf, size_t len);
    void (*vlog)(int level, const char *fmt, va_list ap);
    int (*log_enabled)(int level);
    int64_t (*now_ns)(void);
    void (*wait_pause)(unsigned *spins);
    enum sampi_wait_mode (*wait_mode_now)(void);
    void (*wait_count_sleep)(void);
    int (*waiter_allreduce)(struct sampi_waiter *w, const void *in, void *out, int count,
                            MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
    int (*waiter_allgather)(struct sampi_waiter *w, const void *in, int count, MPI_Datatype dt,
                            void *out, MPI_Comm comm);
    int (*pin_progress_pu)(char *why, size_t len);
};

struct sampi_module {
    unsigned abi;      /* SAMPI_MODULE_ABI */
    const char *cvars; /* sampi_module_glue_cvars: the registry it was built against */
    const char *name;  /* the transport's name: "ofi", "ofi-udp", "dpdk" */
    const struct sampi_netdev_ops *netdev; /* a netdev backend, or NULL */
    const struct sampi_dgram_ops *dgram;   /* a datagram backend, or NULL */
    /* Called once, before anything else: 0, or a negative errno. */
    int (*init)(const struct sampi_module_host *host);
    /* Release process-wide state (DPDK's EAL) after every instance was
     * closed; NULL when there is none.  A module that had such state cannot
     * be opened again afterwards. */
    void (*finalize)(void);
    /* For sampi_info, NULL when absent: whether the transport is usable here
     * (`what`: a provider name, or NULL for the module's own choice) - 0
     * usable, 1 only an open can tell, a negative errno not usable - with a
     * line of detail; and the version of the library it wraps. */
    int (*probe)(const char *what, char *detail, size_t len);
    const char *(*version)(char *buf, size_t len);
};

/* module_glue.c, in every module: its `init` and its `cvars`. */
int sampi_module_glue_init(const struct sampi_module_host *host);
extern const char sampi_module_glue_cvars[];

/* A module's descriptor: SAMPI_MODULE_DEFINE("ofi", &ofi_ops, NULL, NULL);
 * SAMPI_MODULE_DEFINE_INFO adds sampi_info's probe and version hooks. */
#define SAMPI_MODULE_DEFINE_INFO(NAME, NETDEV, DGRAM, FINALIZE, PROBE, VERSION)                    \
    SAMPI_MODULE_EXPORT const struct sampi_module sampi_module = {                                 \
        .abi = SAMPI_MODULE_ABI,                                                                   \
        .cvars = sampi_module_glue_cvars,                                                          \
        .name = NAME,                                                                              \
        .netdev = NETDEV,                                                                          \
        .dgram = DGRAM,                                                                            \
        .init = sampi_module_glue_init,                                                            \
        .finalize = FINALIZE,                                                                      \
        .probe = PROBE,                                                                            \
        .version = VERSION,                                                                        \
    }
#define SAMPI_MODULE_DEFINE(NAME, NETDEV, DGRAM, FINALIZE)                                         \
    SAMPI_MODULE_DEFINE_INFO(NAME, NETDEV, DGRAM, FINALIZE, NULL, NULL)

/* --- core side (module.c) --- */

/* The module in file FILE.so ("sampi_netdev_ofi"), which must carry the
 * transport `name`: loaded on first use, then remembered (a failure too,
 * until sampi_module_path changes).  Local to this process.  NULL on
 * failure, with one line in err naming the module, every path tried and
 * dlerror() (or what was wrong with the module). */
const struct sampi_module *sampi_module_load(const char *file, const char *name, char *err,
                                             size_t errlen);

/* Call the finalize of every module loaded (from MPI_Finalize, after every
 * data path was closed). */
void sampi_module_finalize_all(void);

/* The directories searched now, ':'-separated, into buf. */
const char *sampi_module_search_path(char *buf, size_t len);

#endif
