/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tunif.h - tunnel interfaces: what a route-based tunnel is to the dataplane
 * (Linux's XFRM interface, VPP's ipip + protection).  Routes of kind TUNNEL
 * (route.h) name one or an ECMP group; an interface points at its tunnel's
 * current outbound SA by slot, one 32-bit store (TUNIF_SET: a rekey, up,
 * down).  The main lcore writes; workers read the slot once per packet.  An
 * SA's memory is freed only after an RCU grace period (sa_del), and its
 * interface is taken down before that, so a worker that read the old slot in
 * a burst still finds the SA or NULL (sa-gone), never freed memory.
 *
 * Outbound, only inner packets no policy took come here, and only while an
 * interface exists (dp.n_tunifs): policy tunnels pay nothing.  Inbound, the
 * SAs of route-based tunnels (DPVPN_SA_F_ROUTE) count what they decrypt on
 * their interface and check its reverse path (rpf).
 */
#ifndef TUNIF_H
#define TUNIF_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>

#include "dp.h"
#include "dpvpn_proto.h"

#define TUNIF_DOWN_SLOT	UINT32_MAX	/* out_slot of an interface that is down */

/* select_sa's slot codes for a packet no SA takes (the SPD's miss is -1). */
#define TUNIF_NO_POLICY	(-1)	/* no policy, and no route or one out a port */
#define TUNIF_NO_ROUTE	(-2)	/* no route at all */
#define TUNIF_DOWN	(-3)	/* routed into interfaces that are all down */

struct tunif_stats {
	uint64_t tx, rx, down;
} __rte_cache_aligned;

struct tunif {
	uint32_t out_slot;	/* the outbound SA's slot, or TUNIF_DOWN_SLOT (atomic) */
	uint8_t used;
	uint8_t rpf;		/* enum dpvpn_rpf */
	uint32_t out_spi;	/* as TUNIF_SET gave it (network order), 0: down */
	uint8_t twin;		/* a Linux twin (host.c's dp_tun_twins[id]) */
	uint8_t has6;
	uint32_t inside4;	/* network order; 0: none */
	uint8_t inside6[16];
	char name[DPVPN_NAME_LEN];
	struct tunif_stats stats[DP_MAX_WORKERS];
};

/*
 * Main lcore, TUNIF_SET: its fields checked (errbuf names the field), then
 * the interface created or changed, its outbound SA's slot (TUNIF_DOWN_SLOT
 * when down) resolved by the caller (ctl_steps.c: the table knows no SAs).
 */
int tunif_check(const struct dpvpn_tunif *c, char *errbuf, size_t elen);
void tunif_set(const struct dpvpn_tunif *c, uint32_t out_slot);
/* Main lcore, TUNIF_DEL: the interface removed (its twin is closed by the caller). */
int tunif_del(uint16_t id, char *errbuf, size_t elen);
bool tunif_exists(uint16_t id);
/* Main lcore, before an outbound SA's slot is emptied: interfaces on it go down. */
void tunif_sa_gone(uint32_t slot);
/* Dump: the idx-th interface that exists; false past the end. */
bool tunif_info(unsigned int idx, struct dpvpn_tunif_info *info);

/*
 * Fast path, select_sa: for each packet of the burst the SPD did not take
 * (slots[i] < 0), the route of its inner destination: an interface's (or an
 * ECMP member's) outbound SA slot, or TUNIF_NO_ROUTE / TUNIF_DOWN /
 * TUNIF_NO_POLICY (a route out a port: no cleartext is forwarded).
 */
void tunif_route(unsigned int worker, const uint8_t *const *hdrs, int32_t *slots, uint16_t n);

struct sa;
/*
 * Fast path, after a route-mode SA decrypted ip: counted on its interface if
 * the source passes the interface's rpf; false: drop it (rpf).
 */
bool tunif_rx(unsigned int worker, const struct sa *sa, const uint8_t *ip);
/*
 * Fast path, after a route-mode SA decrypted ip: is it for the tunnel's twin
 * (its inside address, IPv4 224.0.0.0/24, IPv6 link-local or link-scope
 * multicast)?  Counted on the interface (rx) when so; no rpf: the host's
 * own rp_filter judges what its interface receives.
 */
bool tunif_to_host(unsigned int worker, const struct sa *sa, const uint8_t *ip);
/*
 * Worker 0, a packet the host wrote into tunnel interface id's twin: its
 * outbound SA, or NULL and *why (tunnel-down, sa-gone).
 */
struct sa *tunif_out_sa(uint16_t id, enum dpvpn_drop_reason *why);

#endif /* TUNIF_H */
