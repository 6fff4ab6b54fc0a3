/* SPDX-License-Identifier: BSD-3-Clause */
/* ctl.h - the dataplane's control socket, served by the main lcore. */
#ifndef CTL_H
#define CTL_H

#include "crypto.h"

int ctl_open(const char *path, struct crypto_mgr *mgr);
/* Wait up to timeout_ms for requests and answer them. */
void ctl_poll(int timeout_ms);
void ctl_close(void);

#endif /* CTL_H */
