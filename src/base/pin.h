/*
 * pin.h - where SAMPI's helper threads may run.
 *
 * Helper threads are kept inside the binding the launcher gave the process
 * (hwloc_get_cpubind); sampi_pin never widens it.
 */
#ifndef SAMPI_PIN_H
#define SAMPI_PIN_H

#include <stddef.h>

/* Parse a core list such as "0,2-3" into a bitmask of at most 64 cores.
 * 0 on success, -EINVAL (and a message in err) otherwise. */
int sampi_pin_parse_list(const char *text, unsigned long long *mask, char *err, size_t errlen);

/* Pin the calling thread according to sampi_pin (off | auto | list).  Returns
 * the logical PU index it was pinned to, -1 when left alone, or a negative
 * errno on failure (the thread then keeps the process binding). */
int sampi_pin_current_thread(void);

/* For sampi_info: the hwloc loaded, the machine it sees and this process's
 * binding, in one line.  0, or -ENODEV when hwloc cannot load a topology. */
int sampi_pin_describe(char *detail, size_t len);

#endif
