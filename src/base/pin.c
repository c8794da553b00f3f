/*
 * pin.c - keep SAMPI's helper threads inside the launcher's binding.
 *
 * mpirun binds each rank (by default to a core when np <= 2, to a socket
 * otherwise); a helper thread placed outside that set would steal another
 * rank's core, so every choice here is intersected with hwloc_get_cpubind's
 * answer and never widens it.
 */
#include "pin.h"
#include "sampi_internal.h"

#include <ctype.h>
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sampi_pin_parse_list(const char *text, unsigned long long *mask, char *err, size_t errlen)
{
    const char *p = text;
    *mask = 0;
    if (!text || !*text)
        goto bad;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            goto bad;
        long lo = strtol(p, &end, 10), hi = lo;
        p = end;
        if (*p == '-') {
            if (!isdigit((unsigned char)p[1]))
                goto bad;
            hi = strtol(p + 1, &end, 10);
            p = end;
        }
        if (lo < 0 || hi < lo || hi > 63)
            goto bad;
        for (long c = lo; c <= hi; c++)
            *mask |= 1ULL << c;
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    return 0;
bad:
    snprintf(err, errlen,
             "sampi_pin: '%s' is not off, auto, or a core list like 0,2-3 (cores 0..63)",
             text ? text : "");
    return -EINVAL;
}

int sampi_pin_current_thread(void)
{
    char setting[SAMPI_CVAR_STRING_MAX], err[256];
    unsigned long long wanted = 0;
    int rc = -1;
    sampi_cvar_text(SAMPI_CVAR_PIN, setting, sizeof(setting));
    if (strcmp(setting, "off") == 0)
        return -1;
    int is_auto = strcmp(setting, "auto") == 0;
    if (!is_auto && sampi_pin_parse_list(setting, &wanted, err, sizeof(err))) {
        sampi_log_warn("%s; helper thread left unpinned", err);
        return -EINVAL;
    }

    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) || hwloc_topology_load(topo))
        return -ENODEV;
    hwloc_bitmap_t allowed = hwloc_bitmap_alloc(), target = hwloc_bitmap_alloc();
    if (!allowed || !target || hwloc_get_cpubind(topo, allowed, HWLOC_CPUBIND_PROCESS)) {
        rc = -ENODEV;
        goto out;
    }
    int pu = -1;
    if (is_auto) {
        pu = hwloc_bitmap_last(allowed); /* the rank's main thread tends to run first */
    } else {
        for (int c = 0; c < 64; c++)
            if ((wanted >> c) & 1 && hwloc_bitmap_isset(allowed, (unsigned)c)) {
                pu = c;
                break;
            }
    }
    if (pu < 0) {
        sampi_log_warn("sampi_pin=%s: no core of that list is in this process's binding; helper "
                       "thread left unpinned",
                       setting);
        rc = -EINVAL;
        goto out;
    }
    hwloc_bitmap_only(target, (unsigned)pu);
    rc = hwloc_set_cpubind(topo, target, HWLOC_CPUBIND_THREAD) ? -errno : pu;
out:
    hwloc_bitmap_free(allowed);
    hwloc_bitmap_free(target);
    hwloc_topology_destroy(topo);
    return rc;
}

int sampi_pin_describe(char *detail, size_t len)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t bound = NULL;
    int rc = -ENODEV;
    unsigned api = hwloc_get_api_version();
    snprintf(detail, len, "API %u.%u loaded; no topology", api >> 16, (api >> 8) & 0xff);
    if (hwloc_topology_init(&topo))
        return rc;
    if (hwloc_topology_load(topo))
        goto fail;
    int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
    int pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    char set[128] = "?";
    if ((bound = hwloc_bitmap_alloc()) && !hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS))
        hwloc_bitmap_list_snprintf(set, sizeof(set), bound);
    snprintf(detail, len, "API %u.%u loaded; %d cores, %d PUs; this process may run on PUs %s",
             api >> 16, (api >> 8) & 0xff, cores, pus, set);
    rc = 0;
fail:
    hwloc_bitmap_free(bound);
    hwloc_topology_destroy(topo);
    return rc;
}

int sampi_pin_validate(const char *text, char *err, size_t errlen)
{
    unsigned long long mask;
    if (strcmp(text, "off") == 0 || strcmp(text, "auto") == 0)
        return 0;
    return sampi_pin_parse_list(text, &mask, err, errlen);
}
