/*
 * pin.c - keep SAMPI's progress threads inside the launcher's binding.
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

/* A list names PUs up to this number (a sanity bound, far above any node). */
#define SAMPI_PIN_MAX_PU 65535

int sampi_pin_parse_list(const char *text, hwloc_bitmap_t set, char *err, size_t errlen)
{
    const char *p = text;
    hwloc_bitmap_zero(set);
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
        if (lo < 0 || hi < lo || hi > SAMPI_PIN_MAX_PU)
            goto bad;
        hwloc_bitmap_set_range(set, (unsigned)lo, (int)hi);
        if (*p == ',')
            p++;
        else if (*p)
            goto bad;
    }
    return 0;
bad:
    snprintf(err, errlen, "sampi_pin: '%s' is not off, auto, or a PU list like 0,2-3 (PUs 0..%d)",
             text ? text : "", SAMPI_PIN_MAX_PU);
    return -EINVAL;
}

/* A topology and this process's binding; 0 or -ENODEV. */
static int load(hwloc_topology_t *topo, hwloc_bitmap_t bound)
{
    if (hwloc_topology_init(topo))
        return -ENODEV;
    if (hwloc_topology_load(*topo) || hwloc_get_cpubind(*topo, bound, HWLOC_CPUBIND_PROCESS)) {
        hwloc_topology_destroy(*topo);
        return -ENODEV;
    }
    return 0;
}

static int local_env(const char *name)
{
    const char *v = getenv(name);
    return v ? atoi(v) : 0;
}

int sampi_pin_progress_facts(struct sampi_progress_facts *f)
{
    *f = (struct sampi_progress_facts){0};
    hwloc_topology_t topo;
    hwloc_bitmap_t bound = hwloc_bitmap_alloc();
    if (!bound || load(&topo, bound)) {
        hwloc_bitmap_free(bound);
        return -ENODEV;
    }
    f->binding_pus = hwloc_bitmap_weight(bound);
    f->node_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    f->local_ranks = local_env("OMPI_COMM_WORLD_LOCAL_SIZE");
    hwloc_bitmap_free(bound);
    hwloc_topology_destroy(topo);
    return 0;
}

/* auto: the binding's last PU (the rank's main thread tends to run on the
 * first), or, unbound, the node's PU number (PUs - 1 - local rank), which no
 * other rank of the job picks. */
static int auto_pu(hwloc_topology_t topo, hwloc_const_bitmap_t bound, char *why, size_t len)
{
    int node_pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    int weight = hwloc_bitmap_weight(bound);
    if (weight >= 2 && weight < node_pus) {
        snprintf(why, len, "the last PU of the binding");
        return hwloc_bitmap_last(bound);
    }
    int local = local_env("OMPI_COMM_WORLD_LOCAL_RANK");
    int ranks = local_env("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (ranks > 0 && node_pus > ranks) {
        hwloc_obj_t pu =
            hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)(node_pus - 1 - local));
        if (pu) {
            snprintf(why, len, "unbound: the node's PU %d from the top, one per local rank",
                     local + 1);
            return (int)pu->os_index;
        }
    }
    snprintf(why, len, "no PU free of the rank's own work: left unpinned");
    return -1;
}

int sampi_pin_progress_pu(char *why, size_t len)
{
    char setting[SAMPI_CVAR_STRING_MAX], err[256];
    sampi_cvar_text(SAMPI_CVAR_PIN, setting, sizeof(setting));
    if (strcmp(setting, "off") == 0) {
        snprintf(why, len, "sampi_pin=off: the process's binding");
        return -1;
    }
    hwloc_topology_t topo;
    hwloc_bitmap_t bound = hwloc_bitmap_alloc(), wanted = hwloc_bitmap_alloc();
    int pu = -1;
    if (!bound || !wanted || load(&topo, bound)) {
        snprintf(why, len, "hwloc sees no topology: left unpinned");
        goto out_bitmaps;
    }
    if (strcmp(setting, "auto") == 0) {
        pu = auto_pu(topo, bound, why, len);
    } else if (sampi_pin_parse_list(setting, wanted, err, sizeof(err))) {
        snprintf(why, len, "%s: left unpinned", err);
    } else {
        hwloc_bitmap_and(wanted, wanted, bound);
        pu = hwloc_bitmap_first(wanted);
        if (pu < 0)
            snprintf(why, len,
                     "sampi_pin=%s: no PU of that list is in this process's binding: "
                     "left unpinned",
                     setting);
        else
            snprintf(why, len, "sampi_pin=%s", setting);
    }
    hwloc_topology_destroy(topo);
out_bitmaps:
    hwloc_bitmap_free(bound);
    hwloc_bitmap_free(wanted);
    return pu;
}

int sampi_pin_thread_to(int pu)
{
    hwloc_topology_t topo;
    if (pu < 0 || hwloc_topology_init(&topo))
        return -EINVAL;
    int rc = -ENODEV;
    hwloc_bitmap_t target = hwloc_bitmap_alloc();
    if (target && !hwloc_topology_load(topo)) {
        hwloc_bitmap_only(target, (unsigned)pu);
        rc = hwloc_set_cpubind(topo, target, HWLOC_CPUBIND_THREAD) ? -errno : 0;
    }
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
    if (strcmp(text, "off") == 0 || strcmp(text, "auto") == 0)
        return 0;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    if (!set)
        return -ENOMEM;
    int rc = sampi_pin_parse_list(text, set, err, errlen);
    hwloc_bitmap_free(set);
    return rc;
}
