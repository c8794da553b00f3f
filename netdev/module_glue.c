/*
 * module_glue.c - built into every data-path module (module.h), never into
 * the core.
 *
 * The backends call the core's functions by their usual names; here each of
 * them forwards through the table the loader handed to init.  Modules are
 * compiled with -fvisibility=hidden, so these definitions bind inside the
 * module only: a module has no undefined sampi_* symbol, exports nothing but
 * sampi_module, and reads the one registry of the core that loaded it.
 */
#include "module.h"
#include "netdev.h"
#include "pin.h"
#include "sampi_internal.h"
#include "wait.h"

#include <errno.h>

static const struct sampi_module_host *host;

/* The registry's variable names in enum order, as this module was built:
 * every module's descriptor points here (its `cvars`), and the loader
 * compares them with its own, so that a module built against another
 * cvars.def is refused instead of reading the wrong variables. */
const char sampi_module_glue_cvars[] =
#define SAMPI_CVAR(id, name, ...) name ","
#include "cvars.def"
#undef SAMPI_CVAR
    "";

int sampi_module_glue_init(const struct sampi_module_host *h)
{
    if (!h)
        return -EINVAL;
    host = h;
    return 0;
}

long long sampi_cvar_int(enum sampi_cvar_id id)
{
    return host->cvar_int(id);
}

const char *sampi_cvar_text(enum sampi_cvar_id id, char *buf, size_t len)
{
    return host->cvar_text(id, buf, len);
}

void sampi_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host->vlog(level, fmt, ap);
    va_end(ap);
}

int sampi_log_enabled(int level)
{
    return host->log_enabled(level);
}

int64_t sampi_now_ns(void)
{
    return host->now_ns();
}

void sampi_wait_pause(unsigned *spins)
{
    host->wait_pause(spins);
}

enum sampi_wait_mode sampi_wait_mode_now(void)
{
    return host->wait_mode_now();
}

void sampi_wait_count_sleep(void)
{
    host->wait_count_sleep();
}

int sampi_waiter_allreduce(struct sampi_waiter *w, const void *in, void *out, int count,
                           MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return host->waiter_allreduce(w, in, out, count, dt, op, comm);
}

int sampi_waiter_allgather(struct sampi_waiter *w, const void *in, int count, MPI_Datatype dt,
                           void *out, MPI_Comm comm)
{
    return host->waiter_allgather(w, in, count, dt, out, comm);
}

int sampi_pin_progress_pu(char *why, size_t len)
{
    return host->pin_progress_pu(why, len);
}
