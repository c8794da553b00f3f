/*
 * fake_module.c - modules the loader must refuse, for check_module.c: built
 * three times, with FAKE_ABI (another module ABI), FAKE_CVARS (another list
 * of control variables) or FAKE_INIT (an init that fails).  Each carries the
 * transport "ofi" and is linked into a temporary directory as
 * sampi_netdev_ofi.so.
 */
#include "module.h"
#include "netdev.h"

#include <errno.h>

static int fake_init(const struct sampi_module_host *host)
{
#ifdef FAKE_INIT
    (void)host;
    return -EPROTO;
#else
    return sampi_module_glue_init(host);
#endif
}

static const struct sampi_netdev_ops fake_ops = {.name = "ofi", .description = "refused"};

SAMPI_MODULE_EXPORT const struct sampi_module sampi_module = {
#ifdef FAKE_ABI
    .abi = SAMPI_MODULE_ABI + 1,
#else
    .abi = SAMPI_MODULE_ABI,
#endif
#ifdef FAKE_CVARS
    .cvars = "algorithm,netdev,",
#else
    .cvars = sampi_module_glue_cvars,
#endif
    .name = "ofi",
    .netdev = &fake_ops,
    .init = fake_init,
};
