/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dp_client.c - requests to the dataplane over its SOCK_SEQPACKET socket.
 *
 * A request goes out with sendmsg() from the caller's own buffer, so an
 * SA_ADD's key is never copied here: the caller wipes its one copy.  Replies
 * are checked (size, flags, type, seq, exact payload length) before a single
 * field is trusted; a reply with an older seq is the late answer to a call
 * that timed out and is skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "dp_client.h"
#include "mono.h"

#define DP_DUMP_MAX	(1u << 20)	/* entries: more means a confused dataplane */

static uint8_t rxbuf[DPVPN_MSG_MAX + 1];

__attribute__((format(printf, 2, 3)))
static int fail(struct dp_client *dp, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dp->err, sizeof(dp->err), fmt, ap);
	va_end(ap);
	return -1;
}

static int try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	int e = errno;

	close(fd);
	errno = e;
	return -1;
}

int dp_connect(struct dp_client *dp, const char *path, unsigned wait_s)
{
	uint64_t deadline = mono_ms() + (uint64_t)wait_s * 1000;
	struct timespec pause = { 0, DP_RETRY_MS * 1000000L };

	memset(dp, 0, sizeof(*dp));
	dp->fd = -1;
	if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return fail(dp, "%s: path too long for a UNIX socket", path);
	for (;;) {
		dp->fd = try_connect(path);
		if (dp->fd >= 0)
			return 0;
		/* Not there yet, or not listening yet: the dataplane is starting. */
		if ((errno != ENOENT && errno != ECONNREFUSED) || mono_ms() >= deadline) {
			int e = errno;

			fail(dp, "%s: %s%s", path, strerror(e), wait_s ? " (gave up waiting)" : "");
			errno = e;	/* the caller may tell "not there yet" apart */
			return -1;
		}
		nanosleep(&pause, NULL);
	}
}

void dp_close(struct dp_client *dp)
{
	if (dp->fd >= 0)
		close(dp->fd);
	dp->fd = -1;
}

static int send_req(struct dp_client *dp, uint16_t type, const void *req, uint32_t len)
{
	struct dpvpn_msg_hdr h = { .type = type, .seq = ++dp->seq, .len = len };
	struct iovec iov[2] = {
		{ .iov_base = &h, .iov_len = sizeof(h) },
		{ .iov_base = (void *)req, .iov_len = len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };

	if (sendmsg(dp->fd, &mh, MSG_NOSIGNAL) == (ssize_t)(sizeof(h) + len))
		return 0;
	if (errno == EPIPE || errno == ECONNRESET)
		dp->lost = 1;
	return fail(dp, "sending to the dataplane: %s", strerror(errno));
}

/* Receive one datagram into rxbuf within timeout_ms; returns its size or -1. */
static ssize_t recv_one(struct dp_client *dp, int timeout_ms)
{
	struct pollfd pfd = { .fd = dp->fd, .events = POLLIN };
	ssize_t n;
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0 && dp->skipped)
		return fail(dp, "no reply from the dataplane within %d ms (skipped %u reply(s) "
			    "with a wrong seq, last %u, expected %u)", DP_REPLY_TIMEOUT_MS,
			    dp->skipped, dp->skipped_seq, dp->seq);
	if (r == 0)
		return fail(dp, "no reply from the dataplane within %d ms", DP_REPLY_TIMEOUT_MS);
	n = recv(dp->fd, rxbuf, sizeof(rxbuf), MSG_TRUNC);
	if (n == 0 || (n < 0 && errno == ECONNRESET)) {
		dp->lost = 1;
		return fail(dp, "dataplane connection lost");
	}
	if (n < 0)
		return fail(dp, "receiving from the dataplane: %s", strerror(errno));
	if ((size_t)n > DPVPN_MSG_MAX)
		return fail(dp, "reply of %zd bytes exceeds DPVPN_MSG_MAX", n);
	return n;
}

/* Copy the NUL-terminated error text, replacing anything unprintable. */
static void error_text(struct dp_client *dp, const struct dpvpn_msg_hdr *h)
{
	const char *msg = (const char *)(h + 1);
	size_t i, n = strnlen(msg, h->len);

	if (n == 0) {
		fail(dp, "%s (no message)", strerror(-h->status));
		return;
	}
	if (n >= sizeof(dp->err))
		n = sizeof(dp->err) - 1;
	for (i = 0; i < n; i++)
		dp->err[i] = (msg[i] >= 0x20 && msg[i] < 0x7f) ? msg[i] : '?';
	dp->err[n] = '\0';
}

/* 1: the reply to seq, 0: a stale reply to skip, -1: bad reply. */
static int check_reply(struct dp_client *dp, size_t n, uint16_t type)
{
	const struct dpvpn_msg_hdr *h = (const void *)rxbuf;

	if (n < sizeof(*h) || h->len != n - sizeof(*h))
		return fail(dp, "malformed reply: %zu bytes, hdr.len %u", n,
			    n < sizeof(*h) ? 0 : h->len);
	if (!(h->flags & DPVPN_F_REPLY))
		return fail(dp, "unexpected request %u from the dataplane", h->type);
	if (h->seq != dp->seq) {
		dp->skipped++;
		dp->skipped_seq = h->seq;
		return 0;
	}
	if (h->type != type)
		return fail(dp, "reply type %u to a request of type %u", h->type, type);
	if (h->status > 0)
		return fail(dp, "reply status %d is not 0 or -errno", h->status);
	if (h->status < 0) {
		dp->status = h->status;
		error_text(dp, h);
		return -1;
	}
	return 1;
}

/* Receive the reply to the last request; returns its payload length or -1. */
static ssize_t recv_reply(struct dp_client *dp, uint16_t type)
{
	uint64_t deadline = mono_ms() + DP_REPLY_TIMEOUT_MS;

	dp->skipped = 0;
	dp->status = 0;
	for (;;) {
		uint64_t now = mono_ms();
		ssize_t n = recv_one(dp, now >= deadline ? 0 : (int)(deadline - now));
		int r;

		if (n < 0)
			return -1;
		r = check_reply(dp, (size_t)n, type);
		if (r < 0)
			return -1;
		if (r > 0)
			return n - (ssize_t)sizeof(struct dpvpn_msg_hdr);
	}
}

/* Send the request, take its reply: the reply's payload length (in rxbuf), or -1. */
static ssize_t request(struct dp_client *dp, uint16_t type, const void *req, uint32_t req_len)
{
	if (send_req(dp, type, req, req_len))
		return -1;
	return recv_reply(dp, type);
}

int dp_call(struct dp_client *dp, uint16_t type, const void *req, uint32_t req_len,
	    void *reply, uint32_t reply_len)
{
	ssize_t n = request(dp, type, req, req_len);

	if (n < 0)
		return -1;
	if ((size_t)n != reply_len)
		return fail(dp, "reply payload of %zd bytes, expected %u", n, reply_len);
	if (reply_len)
		memcpy(reply, rxbuf + sizeof(struct dpvpn_msg_hdr), reply_len);
	return 0;
}

int dp_call_var(struct dp_client *dp, uint16_t type, const void *req, uint32_t req_len,
		void *reply, uint32_t cap, uint32_t *got)
{
	ssize_t n = request(dp, type, req, req_len);

	if (n < 0)
		return -1;
	if ((size_t)n > cap)
		return fail(dp, "reply payload of %zd bytes, room for %u", n, cap);
	memcpy(reply, rxbuf + sizeof(struct dpvpn_msg_hdr), (size_t)n);
	explicit_bzero(rxbuf, sizeof(struct dpvpn_msg_hdr) + (size_t)n);	/* (records: keys) */
	*got = (uint32_t)n;
	return 0;
}

/* One reply of entries from index start, appended to the have in *entries. */
static int dump_page(struct dp_client *dp, uint16_t type, size_t esize, uint8_t **entries,
		     uint32_t have, uint32_t start, uint32_t *total)
{
	struct dpvpn_dump_req req = { .start = start };
	struct dpvpn_dump_hdr dh;
	uint8_t *payload = rxbuf + sizeof(struct dpvpn_msg_hdr), *a;
	ssize_t n;

	if (send_req(dp, type, &req, sizeof(req)) || (n = recv_reply(dp, type)) < 0)
		return -1;
	if ((size_t)n < sizeof(dh))
		return fail(dp, "dump reply of %zd bytes has no header", n);
	memcpy(&dh, payload, sizeof(dh));
	if ((size_t)n != sizeof(dh) + (size_t)dh.count * esize)
		return fail(dp, "dump reply of %zd bytes for %u entries of %zu", n, dh.count,
			    esize);
	if (dh.total > DP_DUMP_MAX || dh.count > (dh.total > start ? dh.total - start : 0) ||
	    (!dh.count && start < dh.total))
		return fail(dp, "dump reply: %u entries at %u of %u", dh.count, start, dh.total);
	a = realloc(*entries, ((size_t)have + dh.count) * esize + 1);
	if (!a)
		return fail(dp, "out of memory");
	*entries = a;
	memcpy(a + (size_t)have * esize, payload + sizeof(dh), (size_t)dh.count * esize);
	*total = dh.total;
	return (int)dh.count;
}

int dp_dump(struct dp_client *dp, uint16_t type, size_t entry_size, void **entries,
	    uint32_t *n)
{
	uint8_t *a = NULL;
	uint32_t got = 0, total = 0;
	int r;

	do {
		r = dump_page(dp, type, entry_size, &a, got, got, &total);
		if (r < 0) {
			free(a);
			return -1;
		}
		got += (uint32_t)r;
	} while (got < total);
	*entries = a;
	*n = got;
	return 0;
}

int dp_dump_range(struct dp_client *dp, uint16_t type, size_t entry_size, uint32_t start,
		  uint32_t max, void **entries, uint32_t *n, uint32_t *total)
{
	uint8_t *a = NULL;
	uint32_t got = 0, t = 0;
	int r;

	do {
		r = dump_page(dp, type, entry_size, &a, got, start + got, &t);
		if (r < 0) {
			free(a);
			return -1;
		}
		got += (uint32_t)r;
	} while (r > 0 && got < max && start + got < t);
	*entries = a;
	*n = got < max ? got : max;
	*total = t;
	return 0;
}

int dp_drain(struct dp_client *dp)
{
	ssize_t n = recv(dp->fd, rxbuf, sizeof(rxbuf), MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		dp->lost = 1;
		return fail(dp, "dataplane connection lost");
	}
	return 0;	/* a late reply to a call that timed out: nothing to do */
}
