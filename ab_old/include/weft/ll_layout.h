/*
 * weft/ll_layout.h — the sizes of the low-latency layouts of weft/ll.cuh, shared by device code
 * and the host C that allocates their areas (src/ops).
 *
 * LL: 16-byte lines {data0, flag, data1, flag}, 8 payload bytes a line.
 * LL128: 128-byte lines of 120 payload bytes and an 8-byte flag (weft/ll.cuh says why it holds).
 */
#ifndef WEFT_LL_LAYOUT_H
#define WEFT_LL_LAYOUT_H

/* Bytes of LL (16-byte line) buffer that carry n payload bytes. */
#define WEFT_LL_BYTES(n) ((((n) + 7) / 8) * 16)

#define WEFT_LL128_LINE 128
#define WEFT_LL128_PAYLOAD 120
/* Bytes of LL128 buffer that carry n payload bytes. */
#define WEFT_LL128_BYTES(n) ((((n) + WEFT_LL128_PAYLOAD - 1) / WEFT_LL128_PAYLOAD) * WEFT_LL128_LINE)

#endif
