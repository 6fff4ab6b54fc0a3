/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_show.h - build the JSON results of the operator protocol (ctl_proto.h)
 * from the dataplane's answers.
 */
#ifndef DPVPN_CONTROL_CTL_SHOW_H
#define DPVPN_CONTROL_CTL_SHOW_H

#include <jansson.h>

#include "dp_client.h"

struct cfg;
struct cfg_tunnel;

/* show tunnels: one tunnel dpvpnd knows of (ctl_tunnels.c joins it with the SAs). */
struct ctl_tunnel {
	const char *name;
	const struct cfg_tunnel *cfg;	/* as configured, keys wiped; NULL: unknown */
	int operator_down;		/* dpvpnctl tunnel NAME down: out of the dataplane */
};

/* A keying = ike tunnel's IKE, as ctx->ike_tunnel sees it. */
enum ctl_ike {
	CTL_IKE_UNKNOWN = -1,	/* no such IKE tunnel (or no IKE at all) */
	CTL_IKE_DOWN = 0,	/* not established (yet): the detail says where it is */
	CTL_IKE_UP = 1,		/* its CHILD_SA installed */
	CTL_IKE_HELD = 2,	/* terminated by the operator: not started again */
	CTL_IKE_RA = 3,		/* remote = %any: up, its clients' tunnels are theirs */
};

typedef void (*ctl_tunnel_fn)(void *arg, const struct ctl_tunnel *t);

struct ctl_ctx {
	struct dp_client *dp;
	const char *config_path;
	uid_t euid;
	gid_t gid;
	int has_group;
	int peer_privileged;	/* the current request's peer is root or our user */
	uid_t peer_uid;		/* the current request's peer (SO_PEERCRED) */
	uint32_t first;		/* the current show request's first table entry */
	int verbose;		/* dpvpnd -v: log every request and its outcome */
	/* reload: re-read the config and apply it; 0 or -1, msg says what happened */
	int (*reload)(char *msg, size_t len);
	/* tunnel NAME up|down: leave it out of what is installed, or back in */
	int (*tunnel_state)(const char *name, int up, char *msg, size_t len);
	/* IKE (ikd.h): show ike; NAME terminate (0), initiate (1), rekey (2), rekey-ike (3) */
	json_t *(*show_ike)(char *err, size_t err_len);
	int (*ike_command)(const char *name, int op, char *msg, size_t len);
	/* show ports: the config's name of dataplane port ID ([port NAME]), or NULL */
	const char *(*port_name)(uint16_t id);
	/* show tunnels: each tunnel of the running config and each one taken down, to fn */
	void (*tunnels)(ctl_tunnel_fn fn, void *arg);
	/* show tunnels: tunnel NAME's IKE (enum ctl_ike); its IKE SA's state ("none":
	 * no IKE SA) and, unless up, why in words */
	int (*ike_tunnel)(const char *name, char *state, size_t state_len, char *detail,
			  size_t detail_len);
	/* show tunnels: what IKE negotiated for tunnel NAME, members merged into its
	 * entry (ikd_tunnel_json); NULL: nothing */
	json_t *(*ike_tunnel_json)(const char *name);
	/* reload, tunnel up|down: what the last one did, {"added":[NAME, ...], ...} */
	json_t *(*changes)(void);
	/* route add|del done: the prefix is dpvpnctl's (it wins over the kernel's
	 * mirrored routes, mirror.h) or no longer; NULL: nothing to tell */
	void (*route_changed)(const struct dpvpn_prefix *dst, int add);
	/* HA (ha.h): ha master|backup|fault (keepalived's notify); show ha.  NULL: none */
	int (*ha_command)(const char *role, const char *group, char *msg, size_t len);
	json_t *(*show_ha)(char *err, size_t err_len);
};

/* Each returns a new result object, or NULL with err set (from dp->err). */
json_t *ctl_show_status(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_sa(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_ports(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_counters(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_trace(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_routes(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_lcores(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_neighs(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_ike(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_ha(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_tunnels(struct ctl_ctx *ctx, char *err, size_t err_len);
/* "last_packet_ms": N, or null for UINT64_MAX (none yet). */
json_t *ctl_idle_json(uint64_t idle_ms);
/*
 * show tunnels remembers a refused config (file: the tunnels it names, keys
 * wiped; its errors, or why alone when it parsed but could not be applied),
 * until a config loads again (file NULL): its tunnels that do not run are
 * shown down, "refused", with their error.
 */
void ctl_tunnels_refused(const struct cfg *file, const char *why);
/* src without its keys and PSK into dst. */
void ctl_tunnel_copy(struct cfg_tunnel *dst, const struct cfg_tunnel *src);
/* Runtime changes (not written back to the config: a reload or restart
 * installs the config's routes and neighbours again). */
json_t *ctl_route(struct ctl_ctx *ctx, int add, const char *dst, json_int_t port,
		  const char *via, json_t *tunnels, char *err, size_t err_len);
json_t *ctl_neigh(struct ctl_ctx *ctx, int add, json_int_t port, const char *addr,
		  const char *mac, char *err, size_t err_len);
json_t *ctl_policy(struct ctl_ctx *ctx, int add, const char *src, const char *dst,
		   const char *spi, json_int_t priority, char *err, size_t err_len);
/* SAs are added from the config (tunnel up, reload): keys never on a command line. */
json_t *ctl_sa_del(struct ctl_ctx *ctx, const char *spi, const char *dir, char *err,
		   size_t err_len);
/* Start (or with point "off" stop) a capture into a new pcapng file. */
json_t *ctl_trace(struct ctl_ctx *ctx, const char *point, json_int_t count, const char *file,
		  char *err, size_t err_len);
/* Counters shown from now on start from 0 (a baseline dpvpnd keeps). */
json_t *ctl_clear_counters(struct ctl_ctx *ctx, char *err, size_t err_len);
json_t *ctl_show_policies(struct ctl_ctx *ctx, char *err, size_t err_len);

#endif /* DPVPN_CONTROL_CTL_SHOW_H */
