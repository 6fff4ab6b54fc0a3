/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_ctl_d.c - dpvpnd's operator socket (control/ctl_server.c and the
 * request handlers of ctl_show.c): the input is one datagram as dpvpnctl
 * would send it, served by ctl_serve() on a connected SOCK_SEQPACKET pair:
 * size, JSON syntax, object, "cmd"/"what", unknown members, privileges, and
 * each command's own parsing (prefixes, addresses, ports, MACs, SPIs,
 * priorities, trace points and files) down to the dataplane request it makes.
 * The same request is dispatched again as from an unprivileged peer.
 *
 * The dataplane is a stand-in thread on a socket pair (dp_client.c talks to
 * it as to the real one): it answers every request with a well-formed reply
 * -- dumps of one zeroed and one garbage entry (no NUL in names, unknown
 * families and transforms, huge counters), refusals for some changes -- so
 * the conversion of answers to JSON runs too, and nothing is changed or
 * created anywhere (a trace's file is never opened).
 *
 * Every reply must be one JSON object {"ok":true,"result":...} or
 * {"ok":false,"error":"..."} of at most CTL_REPLY_MAX bytes (abort otherwise).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "ctl_proto.h"
#include "ctl_server.h"
#include "dp_client.h"
#include "dpvpn_proto.h"

#define HDR	sizeof(struct dpvpn_msg_hdr)

static int op_pair[2] = { -1, -1 };	/* [0] dpvpnctl, [1] dpvpnd */
static int dp_pair[2] = { -1, -1 };	/* [0] dpvpnd's dp_client, [1] the stand-in */
static struct dp_client dpc;
static struct ctl_ctx ctx;
static char reply[CTL_REPLY_MAX + 2];

static __attribute__((noreturn)) void
die(const char *what)
{
	fprintf(stderr, "fuzz_ctl_d: %s\n", what);
	abort();
}

/* ---- the stand-in dataplane ---- */

static size_t
entry_size(uint16_t type)
{
	switch (type) {
	case DPVPN_MSG_SHOW_PORTS: return sizeof(struct dpvpn_port_info);
	case DPVPN_MSG_SHOW_SA: return sizeof(struct dpvpn_sa_info);
	case DPVPN_MSG_SHOW_POLICIES: return sizeof(struct dpvpn_policy);
	case DPVPN_MSG_SHOW_LCORES: return sizeof(struct dpvpn_lcore_info);
	case DPVPN_MSG_SHOW_ROUTES: return sizeof(struct dpvpn_route);
	case DPVPN_MSG_SHOW_NEIGHS: return sizeof(struct dpvpn_neigh_info);
	case DPVPN_MSG_SHOW_TUNIFS: return sizeof(struct dpvpn_tunif_info);
	case DPVPN_MSG_EVENTS: return sizeof(struct dpvpn_event);
	default: return 0;
	}
}

/* Bytes no sane dataplane sends, but a confused one might. */
static void
garbage(uint8_t *p, size_t n, unsigned int salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 37 + salt * 101 + 0x9b);
}

/* The reply payload to req; status set for a refusal. */
static uint32_t
answer(uint16_t type, const uint8_t *req, uint32_t len, uint8_t *out, int32_t *status)
{
	size_t esize = entry_size(type);
	unsigned int sum = 0;

	*status = 0;
	for (uint32_t i = 0; i < len; i++)
		sum += req[i];
	switch (type) {
	case DPVPN_MSG_HELLO:
		garbage(out, sizeof(struct dpvpn_status), 1);
		((struct dpvpn_status *)out)->proto_version = DPVPN_PROTO_VERSION;
		return sizeof(struct dpvpn_status);
	case DPVPN_MSG_SHOW_COUNTERS:
		garbage(out, sizeof(struct dpvpn_counters), 2);
		return sizeof(struct dpvpn_counters);
	case DPVPN_MSG_TRACE_STATUS:
		garbage(out, sizeof(struct dpvpn_trace_status), 3);
		return sizeof(struct dpvpn_trace_status);
	default:
		break;
	}
	if (esize != 0 && len == sizeof(struct dpvpn_dump_req)) {
		struct dpvpn_dump_hdr *h = (struct dpvpn_dump_hdr *)out;
		uint32_t start = ((const struct dpvpn_dump_req *)req)->start;

		h->total = type == DPVPN_MSG_EVENTS ? 0 : 2;
		h->count = start < h->total ? h->total - start : 0;
		for (uint32_t i = 0; i < h->count; i++) {
			uint8_t *e = out + sizeof(*h) + i * esize;

			if (start + i == 0)
				memset(e, 0, esize);
			else
				garbage(e, esize, type);
		}
		return (uint32_t)(sizeof(*h) + h->count * esize);
	}
	if (sum % 4 == 0) {	/* some changes are refused */
		static const char msg[] = "fuzz: refused by the stand-in dataplane";

		*status = -EINVAL;
		memcpy(out, msg, sizeof(msg));
		return sizeof(msg);
	}
	return 0;
}

static void *
stand_in(void *arg)
{
	static uint8_t req[DPVPN_MSG_MAX + 1], rep[DPVPN_MSG_MAX];
	struct dpvpn_msg_hdr *q = (struct dpvpn_msg_hdr *)req, *r = (struct dpvpn_msg_hdr *)rep;

	(void)arg;
	for (;;) {
		ssize_t n = recv(dp_pair[1], req, sizeof(req), 0);

		if (n < 0 && errno == EINTR)	/* libFuzzer's timer signal */
			continue;
		if (n <= 0)
			return NULL;
		if ((size_t)n < HDR || q->len != (size_t)n - HDR)
			die("dp_client sent a malformed request");
		memset(r, 0, HDR);
		r->type = q->type;
		r->seq = q->seq;
		r->flags = DPVPN_F_REPLY;
		r->len = answer(q->type, req + HDR, q->len, rep + HDR, &r->status);
		if (send(dp_pair[1], rep, HDR + r->len, MSG_NOSIGNAL) < 0)
			return NULL;
	}
}

/* ---- dpvpnd's callbacks (dpvpnd.c's need the config and a dataplane) ---- */

static int
fake_reload(char *msg, size_t len)
{
	snprintf(msg, len, "reload: nothing changed (fuzz)");
	return 0;
}

static int
fake_tunnel_state(const char *name, int up, char *msg, size_t len)
{
	snprintf(msg, len, "tunnel %s: %s", name, up ? "up" : "down");
	return strlen(name) % 2 ? -1 : 0;
}

/* show tunnels: [0] static, named "" as the zeroed SA; [1] IKE; [2] refused. */
static struct cfg_tunnel fake_tun[3];

static void
fake_tunnels(ctl_tunnel_fn fn, void *arg)
{
	fn(arg, &(struct ctl_tunnel){ .name = fake_tun[0].name, .cfg = &fake_tun[0] });
	fn(arg, &(struct ctl_tunnel){ .name = fake_tun[1].name, .cfg = &fake_tun[1] });
	fn(arg, &(struct ctl_tunnel){ .name = "gone", .operator_down = 1 });
}

static int
fake_ike_tunnel(const char *name, char *state, size_t slen, char *detail, size_t dlen)
{
	snprintf(state, slen, "init-sent");
	snprintf(detail, dlen, "IKE not established (fuzz)");
	return name[0] ? CTL_IKE_DOWN : CTL_IKE_UP;
}

static void
fake_refusal(void)
{
	static char err[] = "/etc/dpvpn/fuzz.conf:9: [tunnel late] out-key: fuzz";
	static char *errs[] = { err };
	static struct cfg_tunnel *tuns[] = { &fake_tun[1], &fake_tun[2] };
	static struct cfg bad = { .tunnels = tuns, .n_tunnels = 2, .errors = errs, .n_errors = 1 };

	fake_tun[1].ike.on = 1;
	fake_tun[1].alg = DPVPN_ALG_AES128_GCM;
	fake_tun[1].remote.family = DPVPN_AF_INET6;
	fake_tun[1].local_ts.addr.family = DPVPN_AF_INET;
	fake_tun[1].local_ts.len = 24;
	snprintf(fake_tun[1].name, sizeof(fake_tun[1].name), "to-b");
	snprintf(fake_tun[2].name, sizeof(fake_tun[2].name), "late");
	ctl_tunnels_refused(&bad, NULL);
}

/* ---- checks ---- */

static void
check_result(json_t *r)
{
	json_t *ok = json_object_get(r, "ok");

	if (!json_is_object(r) || !json_is_boolean(ok))
		die("reply is not an object with a boolean \"ok\"");
	if (json_is_true(ok) ? json_object_get(r, "result") == NULL :
	    !json_is_string(json_object_get(r, "error")))
		die("reply without its \"result\" or \"error\"");
}

static void
check_reply(void)
{
	ssize_t n = recv(op_pair[0], reply, sizeof(reply), MSG_DONTWAIT | MSG_TRUNC);
	json_t *r;

	if (n <= 0 || n > CTL_REPLY_MAX)
		die("no reply, or one over CTL_REPLY_MAX");
	r = json_loadb(reply, (size_t)n, 0, NULL);
	if (r == NULL)
		die("reply is not JSON");
	check_result(r);
	json_decref(r);
	if (recv(op_pair[0], reply, 1, MSG_DONTWAIT | MSG_TRUNC) >= 0)
		die("a second reply");
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int sndbuf = CTL_REPLY_MAX + 4096;
	pthread_t t;

	(void)argc;
	(void)argv;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, op_pair) != 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, dp_pair) != 0)
		die("socketpair failed");
	if (setsockopt(op_pair[1], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) != 0)
		setsockopt(op_pair[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	memset(&dpc, 0, sizeof(dpc));
	dpc.fd = dp_pair[0];
	ctx.dp = &dpc;
	ctx.config_path = "/etc/dpvpn/fuzz.conf";
	ctx.euid = geteuid();
	ctx.reload = fake_reload;
	ctx.tunnel_state = fake_tunnel_state;
	ctx.tunnels = fake_tunnels;
	ctx.ike_tunnel = fake_ike_tunnel;
	fake_refusal();
	if (pthread_create(&t, NULL, stand_in, NULL) != 0)
		die("cannot start the stand-in dataplane");
	pthread_detach(t);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *req, *r;

	/* an empty datagram is the end of the connection: nothing to answer */
	if (size == 0 || size > CTL_REQ_MAX + 1)
		return 0;
	if (send(op_pair[0], data, size, MSG_NOSIGNAL) != (ssize_t)size)
		die("send failed");
	if (ctl_serve(&ctx, op_pair[1]) != 0)
		die("ctl_serve gave the client up");
	check_reply();
	/* the same request from a peer that is neither root nor dpvpnd's user */
	req = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (req == NULL)
		return 0;
	ctx.peer_privileged = 0;
	r = ctl_dispatch(&ctx, req);
	if (r == NULL)
		die("ctl_dispatch returned nothing");
	check_result(r);
	json_decref(r);
	json_decref(req);
	return 0;
}
