/* SPDX-License-Identifier: BSD-3-Clause */
/* telem.h - /dpvpn/... DPDK telemetry commands (telem.c). */
#ifndef TELEM_H
#define TELEM_H

void telem_init(void);

#endif /* TELEM_H */
