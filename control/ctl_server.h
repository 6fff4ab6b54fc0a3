/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_server.h - dpvpnd's operator socket (protocol: ctl_proto.h).
 */
#ifndef DPVPN_CONTROL_CTL_SERVER_H
#define DPVPN_CONTROL_CTL_SERVER_H

#include <jansson.h>
#include <sys/types.h>

#include "ctl_show.h"

/*
 * Create the listening socket at PATH: parent directory made if missing,
 * stale socket removed, mode 0600 (or 0660 and group gid when has_group).
 * Returns the fd or -1 after printing why.
 */
int ctl_listen(const char *path, int has_group, gid_t gid);
/* Remove the socket ctl_listen made at PATH (not one another process put there since). */
void ctl_unlink(const char *path);

/* Accept one client; -1 if none or refused (refused ones get an error reply). */
int ctl_accept(struct ctl_ctx *ctx, int lfd);

/* Answer one request on client fd; -1 when the client is gone. */
int ctl_serve(struct ctl_ctx *ctx, int cfd);

/* Validate a request object and answer it: a full reply object. */
json_t *ctl_dispatch(struct ctl_ctx *ctx, json_t *req);

#endif /* DPVPN_CONTROL_CTL_SERVER_H */
