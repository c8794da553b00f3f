/*
 * ofi_bind.c - the grammar of sampi_ofi_bind_base, apart from the `ofi`
 * module (ofi.c) that uses it: the registry checks every value written to
 * the variable with it (SAMPI_CVAR_PARSE in ofi.def), in a core that does not
 * load libfabric.  Pure: built into both the core and the module.
 */
#include "netdev.h"
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>

/*
 * sampi_ofi_bind_base: "" or A.B.C.D with D in 1..254; *base is the address in
 * host order, 0 for "".  MPI_COMM_WORLD rank r binds base + r (bind_node()).
 * Why bind at all: on one host every rank's traffic crosses the same `lo`,
 * and the testbed's tc filters can tell ranks apart only by address.  The
 * tcp provider binds a connecting socket to the fi_info's src_addr when it is
 * not the any-address, and listens on it, so with FI_SOURCE both directions
 * of every connection carry the rank's own address (checked with ss).
 */
int sampi_ofi_bind_parse(const char *text, unsigned long *base, char *err, size_t errlen)
{
    struct in_addr a;
    *base = 0;
    if (!text || !*text)
        return 0;
    if (inet_pton(AF_INET, text, &a) == 1) {
        unsigned long v = ntohl(a.s_addr);
        if ((v & 0xff) >= 1 && (v & 0xff) <= 254) {
            *base = v;
            return 0;
        }
    }
    snprintf(err, errlen,
             "sampi_ofi_bind_base: '%s' is not an IPv4 address A.B.C.D with D in 1..254 "
             "(MPI_COMM_WORLD rank r binds A.B.C.(D+r)), e.g. '127.0.0.10'",
             text);
    return -EINVAL;
}

int sampi_ofi_bind_validate(const char *text, char *err, size_t errlen)
{
    unsigned long base;
    return sampi_ofi_bind_parse(text, &base, err, errlen);
}
