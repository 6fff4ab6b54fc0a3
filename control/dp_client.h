/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dp_client.h - dpvpnd's side of the dataplane socket (include/dpvpn_proto.h).
 *
 * Requests are synchronous: one request, then wait for the reply with the
 * same seq.  On failure dp->err holds a message fit for "dpvpnd: WHAT: ERR":
 * the dataplane's own message for an error reply, or what went wrong with the
 * socket.  dp->lost is set once the dataplane has closed the connection.
 */
#ifndef DPVPN_CONTROL_DP_CLIENT_H
#define DPVPN_CONTROL_DP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "dpvpn_proto.h"

#define DP_REPLY_TIMEOUT_MS	10000
#define DP_RETRY_MS		100

struct dp_client {
	int fd;
	uint32_t seq;
	int lost;
	unsigned skipped;	/* replies of the current call with another seq */
	int status;		/* the last error reply's -errno, 0 if none */
	uint32_t skipped_seq;
	char err[256];
};

/*
 * Connect to PATH, retrying every DP_RETRY_MS for up to wait_s seconds.  On
 * failure errno says why: ENOENT or ECONNREFUSED, nobody serves PATH (yet).
 */
int dp_connect(struct dp_client *dp, const char *path, unsigned wait_s);
void dp_close(struct dp_client *dp);

/*
 * Send TYPE with payload req[req_len], wait for the reply; its payload must be
 * exactly reply_len bytes (0 for none).  Returns 0 or -1 (dp->err set).
 */
int dp_call(struct dp_client *dp, uint16_t type, const void *req, uint32_t req_len,
	    void *reply, uint32_t reply_len);

/*
 * The same with a reply of any length up to cap bytes (KEEP_LIST): its
 * length in *got; the receive buffer is wiped after the copy.
 */
int dp_call_var(struct dp_client *dp, uint16_t type, const void *req, uint32_t req_len,
		void *reply, uint32_t cap, uint32_t *got);

/*
 * Read a whole paged table (SHOW_PORTS, SHOW_SA, SHOW_POLICIES) into a new
 * array of *n entries of entry_size bytes; free() it.  Returns 0 or -1.
 */
int dp_dump(struct dp_client *dp, uint16_t type, size_t entry_size, void **entries,
	    uint32_t *n);
/*
 * Entries start.. of the same table, at most max of them (fewer past its end:
 * none if start is), and the table's total: one page of an operator's
 * listing costs that page, not the whole table.  0 or -1 with dp->err.
 */
int dp_dump_range(struct dp_client *dp, uint16_t type, size_t entry_size, uint32_t start,
		  uint32_t max, void **entries, uint32_t *n, uint32_t *total);

/* The connection became readable outside of a call: 0 if still usable. */
int dp_drain(struct dp_client *dp);

#endif /* DPVPN_CONTROL_DP_CLIENT_H */
