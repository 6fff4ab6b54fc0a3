/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ctl_dp.c - the dataplane's control socket (dataplane/ctl.c), fed the
 * way dpvpnd feeds it: datagrams on a connected SOCK_SEQPACKET socket, served
 * by ctl_poll() as the main lcore does.  That covers the transport checks
 * (size, MSG_TRUNC, hdr.len, flags, type, exact payload size) and every
 * handler behind them: ports, neighbours, routes, SAs (every field check,
 * key expansion), policies and batches, dumps and their paging, counters,
 * events, sequence grants, traces, dpvpnd's kept records (KEEP_*).
 *
 * An input is a list of messages, each sent as one datagram:
 *
 *   flags (1) | length (2, big endian) | datagram
 *
 *   flags & 1: hdr.len set to the datagram's payload length (so a mutated
 *              message still gets past the transport checks)
 *   flags & 2: the datagram made longer than DPVPN_MSG_MAX (zeros appended)
 *   flags & 4: an empty datagram is sent (else an empty record is skipped)
 *
 * Every request must get exactly one reply (no more by the end of the input)
 * that keeps the contract of
 * include/dpvpn_proto.h (abort otherwise): flags REPLY, type and seq echoed,
 * hdr.len the payload's length, status 0 or -errno, an error's payload a
 * NUL-terminated message, a dump's payload its header and count entries.
 * An empty datagram ends the connection, as the protocol says: the target
 * connects again.
 *
 * Between inputs every SA, policy and kept record is removed, a running trace stopped,
 * routes the messages added deleted (each route SHOW_ROUTES lists must be
 * one ROUTE_DEL deletes), ports set back and events taken.
 * Neighbour entries are only ever forgotten (route.c never frees them), so
 * their table fills over a long run; that state carries over.  TRACE_START
 * with an absolute path writes to a file of the target's own directory
 * instead of the path given.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "ctl.h"
#include "dp.h"
#include "ctl_steps.h"
#include "fuzz_dp.h"
#include "keep.h"
#include "sa.h"
#include "spd.h"
#include "trace.h"
#include "tunif.h"

#define HDR	sizeof(struct dpvpn_msg_hdr)

static char dir[64], sock_path[108], trace_path[128];
static int cfd = -1;
static struct dp_port ports0[DP_MAX_PORTS];
static uint8_t reply[DPVPN_MSG_MAX + 1];
static uint32_t seq;
static bool debug, routes_changed;

static __attribute__((noreturn)) void
die(const char *what, const uint8_t *req, size_t len)
{
	fprintf(stderr, "fuzz_ctl_dp: %s (request of %zu bytes, type %u)\n", what, len,
		req != NULL && len >= 2 ? req[0] | req[1] << 8 : 0);
	abort();
}

static void
connect_client(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (cfd >= 0)
		close(cfd);
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	cfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (cfd < 0 || connect(cfd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("fuzz_ctl_dp: connect");
		abort();
	}
	ctl_poll(0);	/* accept */
}

/* Payload size of one entry of a dump reply, 0 if the type is no dump. */
static size_t
dump_entry(uint16_t type)
{
	switch (type) {
	case DPVPN_MSG_SHOW_PORTS: return sizeof(struct dpvpn_port_info);
	case DPVPN_MSG_SHOW_SA: return sizeof(struct dpvpn_sa_info);
	case DPVPN_MSG_SHOW_POLICIES: return sizeof(struct dpvpn_policy);
	case DPVPN_MSG_EVENTS: return sizeof(struct dpvpn_event);
	case DPVPN_MSG_SHOW_LCORES: return sizeof(struct dpvpn_lcore_info);
	case DPVPN_MSG_SHOW_ROUTES: return sizeof(struct dpvpn_route);
	case DPVPN_MSG_SHOW_NEIGHS: return sizeof(struct dpvpn_neigh_info);
	default: return 0;
	}
}

/*
 * Serve what was sent, as the main lcore does, and take the answer: a reply
 * (its size), or 0 once the dataplane closed the connection.  Polled again
 * while there is none yet: a signal (libFuzzer's timer) can cut a poll short.
 */
static uint64_t ike_out0, quiet0;	/* before the request: IKE messages sent, quiet ones done */
static bool quiet_req;		/* it carries DPVPN_F_QUIET */

/* A quiet request that was done: no reply is due (dpvpn_proto.h). */
static bool
sent_quietly(void)
{
	return quiet_req && ctl_quiet_done() > quiet0;
}

static ssize_t
answer(void)
{
	ssize_t got = -1;

	for (int i = 0; i < 1000 && got < 0; i++) {
		ctl_poll(0);
		got = recv(cfd, reply, sizeof(reply), MSG_TRUNC | MSG_DONTWAIT);
		if (got < 0 && (sent_quietly() || (errno != EAGAIN && errno != EINTR)))
			break;
	}
	return got;
}

/* KEEP_LIST's reply: count records, each its header and len bytes, filling it. */
static void
check_records(const uint8_t *req, size_t len)
{
	const struct dpvpn_msg_hdr *h = (const struct dpvpn_msg_hdr *)reply;
	const struct dpvpn_dump_hdr *d = (const struct dpvpn_dump_hdr *)(reply + HDR);
	size_t at = sizeof(*d);

	if (h->len < sizeof(*d) || d->count > d->total)
		die("keep list: count and total disagree", req, len);
	for (uint32_t i = 0; i < d->count; i++) {
		struct dpvpn_keep k;

		if (at + sizeof(k) > h->len)
			die("keep list: a record past the reply", req, len);
		memcpy(&k, reply + HDR + at, sizeof(k));
		if (k.len == 0 || k.len > DPVPN_KEEP_MAX || k.reserved != 0 ||
		    at + sizeof(k) + k.len > h->len)
			die("keep list: a record's length", req, len);
		at += sizeof(k) + k.len;
	}
	if (at != h->len)
		die("keep list: bytes after the records", req, len);
}

/*
 * The reply to req: there, and as the protocol header says.  (One too many
 * would be taken for the next request's, whose type and seq it lacks, or is
 * found at the end of the input.)
 */
static ssize_t
check_reply(const uint8_t *req, size_t len)
{
	const struct dpvpn_msg_hdr *q = (const struct dpvpn_msg_hdr *)req;
	const struct dpvpn_msg_hdr *h = (const struct dpvpn_msg_hdr *)reply;
	ssize_t got = answer();
	size_t esize;

	if (got < 0 && sent_quietly()) {
		if (((const struct dpvpn_msg_hdr *)req)->type == DPVPN_MSG_IKE_TX &&
		    main_stats()->ike_out == ike_out0)
			die("a quiet IKE_TX done without a message sent", req, len);
		return 0;
	}
	if (got >= 0 && sent_quietly())
		die("a quiet IKE_TX that was sent got a reply", req, len);
	if (got < (ssize_t)HDR || got > DPVPN_MSG_MAX)
		die("no reply, or one of a bad size", req, len);
	if (h->flags != DPVPN_F_REPLY || h->len != got - HDR || h->status > 0)
		die("reply header: flags, len or status", req, len);
	if (len >= HDR && (h->type != q->type || h->seq != q->seq))
		die("reply type or seq not echoed", req, len);
	if (h->status < 0 && (h->len == 0 || memchr(reply + HDR, '\0', h->len) == NULL))
		die("error reply without a NUL-terminated message", req, len);
	if (h->status == 0 && (h->type == DPVPN_MSG_ROUTE_ADD || h->type == DPVPN_MSG_PORT_SET))
		routes_changed = true;
	esize = dump_entry(h->type);
	if (h->status == 0 && esize != 0) {
		const struct dpvpn_dump_hdr *d = (const struct dpvpn_dump_hdr *)(reply + HDR);

		if (h->len < sizeof(*d) || h->len != sizeof(*d) + d->count * esize ||
		    (h->type != DPVPN_MSG_EVENTS && d->count > d->total))
			die("dump reply: length, count and total disagree", req, len);
	}
	if (h->status == 0 && h->type == DPVPN_MSG_KEEP_LIST)
		check_records(req, len);
	if (debug)	/* FUZZ_DEBUG=1: each answer, for writing seeds */
		fprintf(stderr, "fuzz_ctl_dp: type %u: %d %s\n", h->type, h->status,
			h->status < 0 ? (const char *)reply + HDR : "");
	return got;
}

/* A trace goes to our own file, whatever absolute path the request names. */
static void
redirect_trace(uint8_t *msg, size_t len)
{
	struct dpvpn_trace_req *t = (struct dpvpn_trace_req *)(msg + HDR);

	if (len != HDR + sizeof(*t) || ((struct dpvpn_msg_hdr *)msg)->type != DPVPN_MSG_TRACE_START)
		return;
	if (t->path[0] == '/' && memchr(t->path, '\0', sizeof(t->path)) != NULL)
		snprintf(t->path, sizeof(t->path), "%s", trace_path);
}

static ssize_t
request(const uint8_t *req, size_t len)
{
	sa_lifetimes_tick(rte_get_timer_cycles());	/* as the main loop does */
	quiet_req = len >= HDR && ((const struct dpvpn_msg_hdr *)req)->flags == DPVPN_F_QUIET;
	ike_out0 = main_stats()->ike_out;
	quiet0 = ctl_quiet_done();
	if (send(cfd, req, len, MSG_NOSIGNAL) != (ssize_t)len) {
		perror("fuzz_ctl_dp: send");
		abort();
	}
	if (len == 0) {		/* the end of the connection, to the dataplane */
		ssize_t got = answer();

		if (got != 0) {
			fprintf(stderr, "fuzz_ctl_dp: after an empty datagram: %zd (%s)\n", got,
				got < 0 ? strerror(errno) : "a datagram");
			die("empty datagram did not close the connection", req, len);
		}
		connect_client();
		return 0;
	}
	return check_reply(req, len);
}

/* A request the target itself makes (resets); its reply, or NULL if it failed. */
static const uint8_t *
call(uint16_t type, const void *payload, uint32_t plen)
{
	uint8_t msg[HDR + sizeof(struct dpvpn_route)];
	struct dpvpn_msg_hdr *h = (struct dpvpn_msg_hdr *)msg;

	memset(h, 0, HDR);
	h->type = type;
	h->seq = ++seq;
	h->len = plen;
	memcpy(msg + HDR, payload, plen);
	request(msg, HDR + plen);
	return ((const struct dpvpn_msg_hdr *)reply)->status == 0 ? reply + HDR : NULL;
}

static void
delete_routes(void)
{
	struct dpvpn_dump_req q = { .start = 0 };
	struct dpvpn_route del[64];
	const uint8_t *r;
	uint32_t n;

	/* A delete moves the last entry into the hole: page 0 again, until empty. */
	for (;;) {
		r = call(DPVPN_MSG_SHOW_ROUTES, &q, sizeof(q));
		if (r == NULL)
			die("SHOW_ROUTES refused", NULL, 0);
		n = RTE_MIN(((const struct dpvpn_dump_hdr *)r)->count, (uint32_t)RTE_DIM(del));
		if (n == 0)
			return;
		memcpy(del, r + sizeof(struct dpvpn_dump_hdr), n * sizeof(del[0]));
		for (uint32_t i = 0; i < n; i++)	/* what is listed is installed */
			if (call(DPVPN_MSG_ROUTE_DEL, &del[i], sizeof(del[i])) == NULL)
				die("SHOW_ROUTES lists a route ROUTE_DEL cannot delete", NULL, 0);
	}
}

static void
reset(void)
{
	struct dpvpn_event ev[16];
	char err[256];

	if (recv(cfd, reply, 1, MSG_DONTWAIT | MSG_TRUNC) >= 0)
		die("a reply more than requests", NULL, 0);
	step_sa_flush();
	keep_flush();
	if (spd_in_batch())
		spd_commit(err, sizeof(err));
	if (routes_changed)
		delete_routes();
	routes_changed = false;
	step_tunif_flush();	/* (after the routes that named them) */
	trace_stop();
	unlink(trace_path);
	while (sa_events_take(ev, RTE_DIM(ev)) > 0)
		;
	memcpy(dp.ports, ports0, sizeof(dp.ports));
}

static void
cleanup(void)
{
	ctl_close();
	unlink(trace_path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int rc;

	(void)argc;
	(void)argv;
	fuzz_dp_init("fuzz_ctl_dp");
	debug = getenv("FUZZ_DEBUG") != NULL;
	memcpy(ports0, dp.ports, sizeof(ports0));
	snprintf(dir, sizeof(dir), "%s/fuzz_ctl_dp.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (mkdtemp(dir) == NULL) {
		perror("fuzz_ctl_dp: mkdtemp");
		abort();
	}
	snprintf(sock_path, sizeof(sock_path), "%s/dp.sock", dir);
	snprintf(trace_path, sizeof(trace_path), "%s/trace.pcapng", dir);
	rc = ctl_open(sock_path, fuzz_w->esp.mb);
	if (rc != 0) {
		fprintf(stderr, "fuzz_ctl_dp: %s: %s\n", sock_path, strerror(-rc));
		abort();
	}
	atexit(cleanup);
	connect_client();
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t msg[DPVPN_MSG_MAX + 256];
	struct fuzz_in in = { data, size };

	fuzz_dp_reset();
	while (in.n >= 3) {
		uint8_t flags = fuzz_u8(&in);
		size_t want = (size_t)fuzz_u8(&in) << 8, len;
		const uint8_t *body;

		want |= fuzz_u8(&in);
		body = fuzz_bytes(&in, want, &len);
		memcpy(msg, body, len);
		if (flags & 2) {	/* over DPVPN_MSG_MAX: the dataplane gets it cut */
			size_t big = DPVPN_MSG_MAX + 1 + (want & 0xff);

			memset(msg + len, 0, big - len);
			len = big;
		}
		if ((flags & 1) && len >= HDR)
			((struct dpvpn_msg_hdr *)msg)->len = (uint32_t)(len - HDR);
		if (len == 0 && !(flags & 4))
			continue;	/* the end of the connection only when asked for */
		redirect_trace(msg, len);
		request(msg, len);
	}
	reset();
	fuzz_dp_finish();
	return 0;
}
