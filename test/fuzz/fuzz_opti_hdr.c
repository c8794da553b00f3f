/*
 * fuzz_opti_hdr.c - libFuzzer target for optireduce's datagram header parser
 * (netdev/opti_hdr.c).  The input is a datagram as the wire delivers it;
 * its last byte also varies what the receiver has armed.  Beyond not
 * crashing (AddressSanitizer and UBSan watch every read), an accepted
 * datagram must satisfy what the receive path relies on before it writes:
 * the payload lies inside the flow, on the packet grid, and the datagram
 * length is exactly header + payload.
 */
#include "opti_hdr.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t flows[8] = {0, 1000, 256, 257, 1, 65535, 100000, 3};
    uint8_t knob = size ? data[size - 1] : 0;
    struct sampi_opti_expect e = {
        .job_key = 0x01020304u,
        .comm_id = 5,
        .seq = 9,
        .gather = knob & 1,
        .size = 8,
        .self = (knob >> 1) & 7,
        .per_pkt = (knob & 0x10) ? 256 : 1,
        .flow_nelem = flows,
    };
    /* copy so that the sanitiser sees reads past `size` as overflows */
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    struct sampi_opti_hdr h;
    enum sampi_opti_verdict v = sampi_opti_hdr_accept(buf, size, &e, &h);
    if (v == SAMPI_OPTI_OK) {
        if (size != SAMPI_OPTI_HDR_BYTES + 4u * h.nelem || h.src >= e.size || h.src == e.self ||
            h.flow_nelem != flows[h.src] || (uint64_t)h.elem_off + h.nelem > h.flow_nelem ||
            h.elem_off % e.per_pkt || h.nelem == 0 || h.seq != e.seq)
            abort();
        /* re-packing what was accepted gives the same header bytes back */
        uint8_t again[SAMPI_OPTI_HDR_BYTES];
        sampi_opti_hdr_pack(&h, again);
        if (memcmp(again, buf, SAMPI_OPTI_HDR_BYTES) != 0)
            abort();
    } else if (v >= SAMPI_OPTI_VERDICT__COUNT || !sampi_opti_verdict_names[v]) {
        abort();
    }
    free(buf);
    return 0;
}
