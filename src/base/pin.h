/*
 * pin.h - where SAMPI's progress threads run (sampi_pin), and what the
 * node says about room for them (progress_mode.h).
 *
 * Threads are kept inside the binding the launcher gave the process
 * (hwloc_get_cpubind); sampi_pin never widens it.  PU sets are hwloc
 * bitmaps, so a node of any size is covered.
 */
#ifndef SAMPI_PIN_H
#define SAMPI_PIN_H

#include "progress_mode.h"

#include <hwloc.h>
#include <stddef.h>

/* Parse a PU list such as "0,2-3" (operating-system PU numbers) into `set`.
 * 0 on success, -EINVAL (and a message naming sampi_pin in err) otherwise. */
int sampi_pin_parse_list(const char *text, hwloc_bitmap_t set, char *err, size_t errlen);

/* This process's binding, the node's PUs and the job's ranks on the node,
 * before MPI starts.  0, or -ENODEV when hwloc cannot load a topology (then
 * the facts are zero: unknown). */
int sampi_pin_progress_facts(struct sampi_progress_facts *f);

/* The PU (operating-system number) the progress threads take under
 * sampi_pin: 'auto' the binding's last PU when the binding holds two or
 * more, else, unbound, one of the node's last PUs beyond its ranks; a list
 * its first PU inside the binding.  -1 when left unpinned ('off', no such
 * PU: a warning says why), with the reason in `why`. */
int sampi_pin_progress_pu(char *why, size_t len);

/* Pin the calling thread to PU `pu` (operating-system number).  0, or a
 * negative errno (the thread then keeps the process binding). */
int sampi_pin_thread_to(int pu);

/* For sampi_info: the hwloc loaded, the machine it sees and this process's
 * binding, in one line.  0, or -ENODEV when hwloc cannot load a topology. */
int sampi_pin_describe(char *detail, size_t len);

#endif
