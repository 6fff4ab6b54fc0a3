/* SPDX-License-Identifier: BSD-3-Clause */
/* ctl.h - the dataplane's control socket, served by the main lcore. */
#ifndef CTL_H
#define CTL_H

#include <stddef.h>

#include "crypto.h"

/*
 * 0 if path is free for this dataplane's socket: no file, or a socket file
 * no process listens on (left by one that died; ctl_open replaces it).  Else
 * -errno and why: e.g. -EADDRINUSE, "PATH: socket in use by pid N ...".
 */
int ctl_check(const char *path, char *why, size_t len);
/* Listen on path (0600); the socket is removed by ctl_close, unless another
 * process has replaced it by then. */
int ctl_open(const char *path, struct crypto_mgr *mgr);
/* Room for max routes of each family in SHOW_ROUTES' list (--max-routes). */
int ctl_routes_init(unsigned int max);
/* Wait up to timeout_ms for requests and answer them. */
void ctl_poll(int timeout_ms);
/* Also wait on fd (readable: drained here; the main lcore's wake-up eventfd). */
void ctl_set_wake_fd(int fd);
void ctl_close(void);

/* Requests with DPVPN_F_QUIET done, so not answered (the fuzz harness's check). */
uint64_t ctl_quiet_done(void);

#endif /* CTL_H */
