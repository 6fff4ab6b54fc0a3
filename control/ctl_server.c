/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_server.c - the operator socket: set it up, vet clients by SO_PEERCRED,
 * and answer one JSON request per datagram.
 *
 * Every request is checked before it is acted on: size, JSON syntax, an
 * object, known "cmd"/"what", no unknown members.  Nothing a client sends can
 * end the daemon; at worst the client gets an error reply.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_proto.h"
#include "ctl_server.h"

#define CTL_BACKLOG	16
#define CTL_MAX_GROUPS	256

/* ---- socket setup ---- */

/* mkdir -p the parent of PATH; new directories are private to us (and the
 * group, if the socket is shared with one). */
static int make_parent(const char *path, int has_group, gid_t gid)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	mode_t mode = has_group ? 0750 : 0700;

	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = dir + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(dir, mode) == 0) {
			if (has_group && chown(dir, (uid_t)-1, gid))
				goto fail;
		} else if (errno != EEXIST) {
			goto fail;
		}
		*s = '/';
	}
	return 0;
fail:
	fprintf(stderr, "dpvpnd: %s: %s\n", dir, strerror(errno));
	return -1;
}

/* A socket file left by a dead dpvpnd is removed; a live one is not. */
static int remove_stale(const struct sockaddr_un *sa)
{
	const char *path = sa->sun_path;
	struct ucred cr = { 0 };
	socklen_t cl = sizeof(cr);
	struct stat st;
	int fd, live;

	if (lstat(path, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "dpvpnd: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "dpvpnd: %s: exists and is not a socket\n", path);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	live = fd >= 0 && connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0;
	if (live && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0)
		cr.pid = 0;
	if (fd >= 0)
		close(fd);
	if (live && cr.pid > 0) {
		fprintf(stderr, "dpvpnd: %s: in use by pid %ld (another dpvpnd?)\n", path,
			(long)cr.pid);
		return -1;
	}
	if (live) {
		fprintf(stderr, "dpvpnd: %s: in use by another process\n", path);
		return -1;
	}
	if (unlink(path) && errno != ENOENT) {
		fprintf(stderr, "dpvpnd: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int bind_private(int fd, const struct sockaddr_un *sa, int has_group, gid_t gid)
{
	mode_t old = umask(077);
	int rc = bind(fd, (const struct sockaddr *)sa, sizeof(*sa));

	umask(old);
	if (rc)
		return -1;
	if (has_group)
		return chown(sa->sun_path, (uid_t)-1, gid) || chmod(sa->sun_path, 0660);
	return chmod(sa->sun_path, 0600);
}

static struct stat bound;	/* the socket file ctl_listen made */

void ctl_unlink(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && st.st_dev == bound.st_dev && st.st_ino == bound.st_ino)
		unlink(path);
}

int ctl_listen(const char *path, int has_group, gid_t gid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "dpvpnd: %s: path too long for a UNIX socket\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (make_parent(path, has_group, gid))
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		fprintf(stderr, "dpvpnd: socket: %s\n", strerror(errno));
		return -1;
	}
	if (remove_stale(&sa))
		goto fail;
	if (bind_private(fd, &sa, has_group, gid) || lstat(path, &bound) ||
	    listen(fd, CTL_BACKLOG)) {
		fprintf(stderr, "dpvpnd: %s: %s\n", path, strerror(errno));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/* ---- replies ---- */

static void send_reply(int cfd, json_t *reply)
{
	char *text = json_dumps(reply, JSON_COMPACT);
	size_t len = text ? strlen(text) : 0;

	if (text && len > CTL_REPLY_MAX) {
		free(text);
		text = NULL;
	}
	if (!text) {
		json_t *e = json_pack("{s:b,s:s}", "ok", 0, "error", "reply too large");

		text = e ? json_dumps(e, JSON_COMPACT) : NULL;
		json_decref(e);
		if (!text)
			return;
		len = strlen(text);
	}
	if (send(cfd, text, len, MSG_NOSIGNAL) < 0)
		fprintf(stderr, "dpvpnd: reply of %zu bytes to client: %s\n", len,
			strerror(errno));
	free(text);
}

/* Length of the valid UTF-8 sequence at s (as jansson checks it), 0 if none. */
static size_t utf8_seq(const unsigned char *s)
{
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	cp = s[0] & (0x7fu >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)	/* also stops at the NUL */
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/*
 * An error message may quote what the client sent (a member name, the bytes
 * a JSON syntax error is near), cut at a byte count: bytes that are not
 * valid UTF-8 become '?', or jansson would refuse the string and the client
 * would get no reply at all.
 */
static json_t *error_reply(const char *msg)
{
	const unsigned char *s = (const unsigned char *)msg;
	char clean[1200];
	size_t k = 0;

	while (*s && k < sizeof(clean) - 5) {
		size_t n = utf8_seq(s);

		if (n == 0) {
			clean[k++] = '?';
			s++;
			continue;
		}
		memcpy(clean + k, s, n);
		k += n;
		s += n;
	}
	clean[k] = '\0';
	return json_pack("{s:b,s:s}", "ok", 0, "error", clean);
}

/* ---- peer credentials ---- */

static int in_groups(int cfd, gid_t gid)
{
	gid_t groups[CTL_MAX_GROUPS];
	socklen_t len = sizeof(groups);

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERGROUPS, groups, &len))
		return 0;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return 1;
	return 0;
}

static int peer_allowed(const struct ctl_ctx *ctx, int cfd, char *why, size_t why_len)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &len)) {
		snprintf(why, why_len, "permission denied: no peer credentials");
		return 0;
	}
	if (cr.uid == 0 || cr.uid == ctx->euid)
		return 1;
	if (ctx->has_group && (cr.gid == ctx->gid || in_groups(cfd, ctx->gid)))
		return 1;
	snprintf(why, why_len, "permission denied: uid %u is not root, uid %u%s", cr.uid,
		 ctx->euid, ctx->has_group ? " or in the control group" : "");
	return 0;
}

/*
 * Closing with unread requests queued makes the peer's recv() fail with
 * ECONNRESET before it sees our error reply: discard them first.
 */
static void drain_close(int cfd)
{
	char c;

	while (recv(cfd, &c, 1, MSG_DONTWAIT | MSG_TRUNC) > 0)
		;
	close(cfd);
}

int ctl_accept(struct ctl_ctx *ctx, int lfd)
{
	int sndbuf = CTL_REPLY_MAX + 4096;
	char why[128];
	int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (cfd < 0)
		return -1;
	/* A SEQPACKET reply must fit the send buffer in one piece. */
	if (setsockopt(cfd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)))
		setsockopt(cfd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (peer_allowed(ctx, cfd, why, sizeof(why)))
		return cfd;
	json_t *e = error_reply(why);

	if (e)
		send_reply(cfd, e);
	json_decref(e);
	fprintf(stderr, "dpvpnd: refused client: %s\n", why);
	drain_close(cfd);
	return -1;
}

/* ---- requests ---- */

typedef json_t *(*show_fn)(struct ctl_ctx *ctx, char *err, size_t err_len);

static const struct {
	const char *what;
	show_fn fn;
	bool paged;		/* a table sent CTL_PAGE entries at a time ("first") */
} shows[] = {
	{ "sa", ctl_show_sa, true },
	{ "ports", ctl_show_ports, true },
	{ "counters", ctl_show_counters, false },
	{ "policies", ctl_show_policies, true },
	{ "trace", ctl_show_trace, false },
	{ "routes", ctl_show_routes, true },
	{ "neighbours", ctl_show_neighs, false },
	{ "lcores", ctl_show_lcores, false },
	{ "ike", ctl_show_ike, false },
	{ "tunnels", ctl_show_tunnels, true },
	{ "ha", ctl_show_ha, false },
};

/* Members other than those named in ALLOWED (NULL-terminated) are errors. */
static int only_members(json_t *req, const char *const *allowed, char *err, size_t err_len)
{
	const char *key;
	json_t *v;

	json_object_foreach(req, key, v) {
		size_t i;

		for (i = 0; allowed[i] && strcmp(allowed[i], key); i++)
			;
		if (!allowed[i]) {
			snprintf(err, err_len, "unknown member \"%.64s\"", key);
			return -1;
		}
	}
	return 0;
}

static json_t *do_show(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", "what", "first", NULL };
	json_t *w = json_object_get(req, "what"), *first = json_object_get(req, "first");
	const char *what;

	if (only_members(req, members, err, err_len))
		return NULL;
	ctx->first = 0;
	if (first) {
		if (!json_is_integer(first) || json_integer_value(first) < 0 ||
		    json_integer_value(first) > UINT32_MAX) {
			snprintf(err, err_len, "\"first\" must be an integer 0..%u", UINT32_MAX);
			return NULL;
		}
		ctx->first = (uint32_t)json_integer_value(first);
	}
	if (!w) {
		snprintf(err, err_len, "missing \"what\" (sa, tunnels, ports, counters, policies, "
			 "trace, routes, neighbours, lcores or ike)");
		return NULL;
	}
	what = json_string_value(w);
	if (!what) {
		snprintf(err, err_len, "\"what\" must be a string");
		return NULL;
	}
	for (size_t i = 0; i < sizeof(shows) / sizeof(shows[0]); i++) {
		if (strcmp(shows[i].what, what))
			continue;
		if (first && !shows[i].paged) {
			snprintf(err, err_len, "\"first\": \"%s\" is not a table sent in pages "
				 "(sa, tunnels, ports and policies are)", what);
			return NULL;
		}
		return shows[i].fn(ctx, err, err_len);
	}
	snprintf(err, err_len, "unknown \"what\": \"%.64s\" (expected sa, tunnels, ports, "
		 "counters, policies, trace, routes, neighbours, lcores or ike)", what);
	return NULL;
}

static json_t *do_status(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", NULL };

	if (only_members(req, members, err, err_len))
		return NULL;
	return ctl_show_status(ctx, err, err_len);
}

/* A reload's or tunnel up|down's answer: the message and the tunnels by fate. */
static json_t *changed(struct ctl_ctx *ctx, const char *msg)
{
	json_t *r = json_pack("{s:s}", "message", msg);
	json_t *names = ctx->changes ? ctx->changes() : NULL;

	if (r != NULL && names != NULL)
		json_object_update(r, names);
	json_decref(names);
	return r;
}

/* Changes are for root (or dpvpnd's own user) only, never for the read-only group. */
static json_t *do_reload(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", NULL };
	char msg[1024];

	if (only_members(req, members, err, err_len))
		return NULL;
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: reload is for root only");
		return NULL;
	}
	if (ctx->reload == NULL || ctx->reload(msg, sizeof(msg)) != 0) {
		snprintf(err, err_len, "%s", ctx->reload ? msg : "reload not available");
		return NULL;
	}
	return changed(ctx, msg);
}

static json_t *do_clear(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", NULL };

	if (only_members(req, members, err, err_len))
		return NULL;
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: clear is for root only");
		return NULL;
	}
	return ctl_clear_counters(ctx, err, err_len);
}

/* trace: a capture can hold cleartext: root only, never the read-only group. */
static json_t *do_trace(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", "point", "count", "file", NULL };
	const char *point = json_string_value(json_object_get(req, "point"));

	if (only_members(req, members, err, err_len))
		return NULL;
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: trace is for root only");
		return NULL;
	}
	if (point == NULL) {
		snprintf(err, err_len, "missing \"point\"");
		return NULL;
	}
	return ctl_trace(ctx, point, json_integer_value(json_object_get(req, "count")),
			 json_string_value(json_object_get(req, "file")), err, err_len);
}

/* {"cmd":"route"|"neighbour","op":"add"|"del", ...}: root only. */
static json_t *do_table(struct ctl_ctx *ctx, json_t *req, int route, char *err, size_t err_len)
{
	static const char *const rmembers[] = { "cmd", "op", "dst", "port", "via", "tunnels",
						NULL };
	static const char *const nmembers[] = { "cmd", "op", "port", "address", "mac", NULL };
	const char *op = json_string_value(json_object_get(req, "op"));
	json_int_t port = json_is_integer(json_object_get(req, "port")) ?
			  json_integer_value(json_object_get(req, "port")) : -1;
	int add;

	if (only_members(req, route ? rmembers : nmembers, err, err_len))
		return NULL;
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: changes are for root only");
		return NULL;
	}
	if (op == NULL || (strcmp(op, "add") && strcmp(op, "del"))) {
		snprintf(err, err_len, "\"op\": expected add or del");
		return NULL;
	}
	add = !strcmp(op, "add");
	if (route)
		return ctl_route(ctx, add, json_string_value(json_object_get(req, "dst")), port,
				 json_string_value(json_object_get(req, "via")),
				 json_object_get(req, "tunnels"), err, err_len);
	return ctl_neigh(ctx, add, port, json_string_value(json_object_get(req, "address")),
			 json_string_value(json_object_get(req, "mac")), err, err_len);
}

/* {"cmd":"policy","op":..,"src","dst","spi","priority"}, {"cmd":"sa","op":"del","spi","dir"} */
static json_t *do_policy_sa(struct ctl_ctx *ctx, json_t *req, int policy, char *err,
			    size_t err_len)
{
	static const char *const pmembers[] = { "cmd", "op", "src", "dst", "spi", "priority",
						NULL };
	static const char *const smembers[] = { "cmd", "op", "spi", "dir", NULL };
	const char *op = json_string_value(json_object_get(req, "op"));

	if (only_members(req, policy ? pmembers : smembers, err, err_len))
		return NULL;
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: changes are for root only");
		return NULL;
	}
	if (op == NULL || (strcmp(op, "del") && (!policy || strcmp(op, "add")))) {
		snprintf(err, err_len, "\"op\": expected %s", policy ? "add or del" :
			 "del (SAs are added from the config: tunnel up, reload)");
		return NULL;
	}
	if (!policy)
		return ctl_sa_del(ctx, json_string_value(json_object_get(req, "spi")),
				  json_string_value(json_object_get(req, "dir")), err, err_len);
	return ctl_policy(ctx, !strcmp(op, "add"), json_string_value(json_object_get(req, "src")),
			  json_string_value(json_object_get(req, "dst")),
			  json_string_value(json_object_get(req, "spi")),
			  json_integer_value(json_object_get(req, "priority")), err, err_len);
}

static json_t *do_tunnel(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", "name", "state", NULL };
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *state = json_string_value(json_object_get(req, "state"));
	char msg[1024];

	if (only_members(req, members, err, err_len))
		return NULL;
	if (name == NULL || state == NULL || (strcmp(state, "up") && strcmp(state, "down"))) {
		snprintf(err, err_len, "expected \"name\": a tunnel and \"state\": up or down");
		return NULL;
	}
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: tunnel up/down is for root only");
		return NULL;
	}
	if (ctx->tunnel_state == NULL ||
	    ctx->tunnel_state(name, !strcmp(state, "up"), msg, sizeof(msg)) != 0) {
		snprintf(err, err_len, "%s", ctx->tunnel_state ? msg : "not available");
		return NULL;
	}
	return changed(ctx, msg);
}

/* {"cmd":"ike","op":"initiate"|"terminate"|"rekey"|"rekey-ike","name":TUNNEL} (root). */
static json_t *do_ike(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", "op", "name", NULL };
	const char *name = json_string_value(json_object_get(req, "name"));
	const char *op = json_string_value(json_object_get(req, "op"));
	char msg[1024];

	if (only_members(req, members, err, err_len))
		return NULL;
	static const char *const ops[] = { "terminate", "initiate", "rekey", "rekey-ike" };
	int k = -1;

	for (int i = 0; op != NULL && i < 4; i++)
		if (!strcmp(op, ops[i]))
			k = i;
	if (name == NULL || k < 0) {
		snprintf(err, err_len, "expected \"op\": initiate, terminate, rekey or rekey-ike "
			 "and \"name\": a tunnel");
		return NULL;
	}
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: ike initiate/terminate/rekey is for root "
			 "only");
		return NULL;
	}
	if (ctx->ike_command == NULL ||
	    ctx->ike_command(name, k, msg, sizeof(msg)) != 0) {
		snprintf(err, err_len, "%s", ctx->ike_command ? msg : "no IKE in this dpvpnd");
		return NULL;
	}
	return json_pack("{s:s}", "message", msg);
}

/*
 * {"cmd":"ha","role":"master"|"backup"|"fault"[,"group":NAME]} (root):
 * keepalived's notify (no group: every group of the [ha] section).
 */
static json_t *do_ha(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	static const char *const members[] = { "cmd", "role", "group", NULL };
	const char *role = json_string_value(json_object_get(req, "role"));
	json_t *jg = json_object_get(req, "group");
	const char *group = json_string_value(jg);
	char msg[512];

	if (only_members(req, members, err, err_len))
		return NULL;
	if (role == NULL) {
		snprintf(err, err_len, "expected \"role\": master, backup or fault");
		return NULL;
	}
	if (jg != NULL && group == NULL) {
		snprintf(err, err_len, "\"group\": expected a string");
		return NULL;
	}
	if (!ctx->peer_privileged) {
		snprintf(err, err_len, "permission denied: ha is for root only");
		return NULL;
	}
	if (ctx->ha_command == NULL || ctx->ha_command(role, group, msg, sizeof(msg)) != 0) {
		snprintf(err, err_len, "%s", ctx->ha_command ? msg : "no [ha] in this dpvpnd");
		return NULL;
	}
	return json_pack("{s:s}", "message", msg);
}

static json_t *run_request(struct ctl_ctx *ctx, json_t *req, char *err, size_t err_len)
{
	json_t *c;
	const char *cmd;

	if (!json_is_object(req)) {
		snprintf(err, err_len, "request must be a JSON object");
		return NULL;
	}
	c = json_object_get(req, "cmd");
	if (!c) {
		snprintf(err, err_len, "missing \"cmd\" (status or show)");
		return NULL;
	}
	cmd = json_string_value(c);
	if (!cmd) {
		snprintf(err, err_len, "\"cmd\" must be a string");
		return NULL;
	}
	if (!strcmp(cmd, "status"))
		return do_status(ctx, req, err, err_len);
	if (!strcmp(cmd, "show"))
		return do_show(ctx, req, err, err_len);
	if (!strcmp(cmd, "reload"))
		return do_reload(ctx, req, err, err_len);
	if (!strcmp(cmd, "clear"))
		return do_clear(ctx, req, err, err_len);
	if (!strcmp(cmd, "tunnel"))
		return do_tunnel(ctx, req, err, err_len);
	if (!strcmp(cmd, "trace"))
		return do_trace(ctx, req, err, err_len);
	if (!strcmp(cmd, "route"))
		return do_table(ctx, req, 1, err, err_len);
	if (!strcmp(cmd, "neighbour"))
		return do_table(ctx, req, 0, err, err_len);
	if (!strcmp(cmd, "policy"))
		return do_policy_sa(ctx, req, 1, err, err_len);
	if (!strcmp(cmd, "sa"))
		return do_policy_sa(ctx, req, 0, err, err_len);
	if (!strcmp(cmd, "ike"))
		return do_ike(ctx, req, err, err_len);
	if (!strcmp(cmd, "ha"))
		return do_ha(ctx, req, err, err_len);
	snprintf(err, err_len, "unknown \"cmd\": \"%.64s\" (expected status, show, reload, "
		 "clear, tunnel, trace, route, neighbour, policy, sa, ike or ha)", cmd);
	return NULL;
}

json_t *ctl_dispatch(struct ctl_ctx *ctx, json_t *req)
{
	char err[1100] = "out of memory";
	json_t *result = run_request(ctx, req, err, sizeof(err));

	if (!result)
		return error_reply(err);
	return json_pack("{s:b,s:o}", "ok", 1, "result", result);
}

static json_t *parse_request(const char *buf, ssize_t n, char *err, size_t err_len)
{
	json_error_t je;
	json_t *req;

	if (n > CTL_REQ_MAX) {
		snprintf(err, err_len, "request larger than %d bytes", CTL_REQ_MAX);
		return NULL;
	}
	req = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &je);
	if (!req)
		snprintf(err, err_len, "request is not JSON: %s (byte %d)", je.text, je.position);
	return req;
}

/* A request member for the log: a known word or "?" (a client chose it). */
static const char *log_word(json_t *req, const char *member)
{
	const char *s = json_string_value(json_object_get(req, member));

	if (s == NULL)
		return NULL;
	if (!*s || strlen(s) > 24 || strspn(s, "abcdefghijklmnopqrstuvwxyz-") != strlen(s))
		return "?";
	return s;
}

/* dpvpnd -v: who asked for what, and the answer (requests carry no key). */
static void log_request(const struct ctl_ctx *ctx, json_t *req, json_t *reply)
{
	const char *cmd = req ? log_word(req, "cmd") : NULL;
	const char *sub = req ? log_word(req, "what") : NULL;
	const char *err = json_string_value(json_object_get(reply, "error"));

	if (sub == NULL && req)
		sub = log_word(req, "op");
	if (sub == NULL && req)
		sub = log_word(req, "state");
	/* an error's first line: a refused reload has logged its other lines */
	fprintf(stderr, "dpvpnd: uid %u: %s%s%s: %s%.*s\n", (unsigned)ctx->peer_uid,
		cmd ? cmd : "(bad request)", sub ? " " : "", sub ? sub : "",
		err ? "refused: " : "ok", err ? (int)strcspn(err, "\n") : 0, err ? err : "");
}

int ctl_serve(struct ctl_ctx *ctx, int cfd)
{
	static char buf[CTL_REQ_MAX + 1];
	char err[256];
	json_t *req, *reply;
	ssize_t n = recv(cfd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;	/* closed or reset */
	{
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		int known = getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0;

		ctx->peer_uid = known ? cr.uid : (uid_t)-1;
		ctx->peer_privileged = known && (cr.uid == 0 || cr.uid == ctx->euid);
	}
	req = parse_request(buf, n, err, sizeof(err));
	reply = req ? ctl_dispatch(ctx, req) : error_reply(err);
	if (ctx->verbose && reply)
		log_request(ctx, req, reply);
	json_decref(req);
	if (reply)
		send_reply(cfd, reply);
	json_decref(reply);
	return 0;
}
