/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpvpn_proto.h - the protocol between dpvpnd and dpvpn-dataplane.
 *
 * This header is the whole contract between the control plane (dpvpnd) and the
 * DPDK dataplane: neither process includes the other's internals.
 *
 * Transport: a UNIX SOCK_SEQPACKET socket served by the dataplane's main lcore
 * (path given with `--socket`, created mode 0600).  One datagram is one message:
 *
 *     struct dpvpn_msg_hdr | payload (hdr.len bytes, at most DPVPN_MSG_MAX)
 *
 * Requests carry hdr.flags = 0; each is answered by exactly one reply with the
 * same type and seq, flags = DPVPN_F_REPLY, and status = 0 or a negative errno.
 * One exception (protocol 28): an IKE_TX, KEEP_SET or KEEP_DEL with flags =
 * DPVPN_F_QUIET is answered only if it is refused.  dpvpnd sends those on the
 * IKE channel: an IKE SA's record and then the message it sends, in order,
 * without a round trip each, and the channel's queue holds the IKE_RX pushes,
 * not a reply to every message sent.
 * A failed request's reply payload is a NUL-terminated message that names the
 * offending field ("sa.key_len: 15 is not 16 or 32").  The dataplane checks
 * the peer's credentials (SO_PEERCRED: root or its own uid), the datagram size
 * against hdr.len, and hdr.len against the exact payload size of the type
 * (IKE_TX: its least, then its own len field) before reading a single field.
 * Only IKE_RX comes unasked, flags = DPVPN_F_PUSH, on the IKE channel alone.  Integers are host byte order (both processes
 * run on one machine) except IP addresses and SPIs, which are network order
 * as on the wire.  Addresses carry their family (struct dpvpn_addr,
 * struct dpvpn_prefix: 4 or 6).  Reserved fields must be zero.
 *
 * Messages (request payload -> reply payload):
 *   HELLO          -                         -> struct dpvpn_status
 *   PORT_SET       struct dpvpn_port_cfg     -> -   role and addresses (IPv4 and/or
 *                                                   IPv6) of a port; adds the
 *                                                   connected routes
 *   NEIGH_ADD      struct dpvpn_neigh        -> -   static neighbour (ARP / ND) entry
 *   ROUTE_ADD      struct dpvpn_route        -> -
 *   SA_ADD         struct dpvpn_sa_cfg       -> -   keys expanded once here;
 *                                                   both sides wipe the message
 *   SA_DEL         struct dpvpn_sa_id        -> -
 *   POLICY_ADD     struct dpvpn_policy       -> -   outbound: inner src/dst
 *                                                   prefixes select an SA
 *   START          -                         -> -   start ports and forwarding
 *   SHOW_PORTS     struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_port_info[]
 *   SHOW_SA        struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_sa_info[]
 *   SHOW_POLICIES  struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_policy[]
 *   SHOW_COUNTERS  -                         -> struct dpvpn_counters
 *   BATCH_BEGIN    -                         -> -   until BATCH_COMMIT, policy adds
 *                                                   are checked and answered but the
 *                                                   classifier is rebuilt once, at
 *                                                   the commit (START commits too)
 *   BATCH_COMMIT   -                         -> -   build and publish
 *   EVENTS         struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_event[]
 *                                                   events since the last call (SA
 *                                                   lifetimes, sequence numbers
 *                                                   running low); dpvpnd polls it
 *   SEQ_GRANT      struct dpvpn_seq_grant    -> -   raise an outbound SA's limit
 *   SHOW_LCORES    struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_lcore_info[]
 *   TRACE_START    struct dpvpn_trace_req    -> -   capture at a point into a new
 *                                                   pcapng file (point 0: stop)
 *   TRACE_STATUS   -                         -> struct dpvpn_trace_status
 *   ROUTE_DEL      struct dpvpn_route        -> -   by dst (port and gateway ignored)
 *   NEIGH_DEL      struct dpvpn_neigh        -> -   by port and addr (mac ignored):
 *                                                   forgotten, resolved again if needed
 *   SHOW_ROUTES    struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_route[]
 *   SHOW_NEIGHS    struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_neigh_info[]
 *   POLICY_DEL     struct dpvpn_policy       -> -   by src and dst (spi, priority ignored)
 *   IKE_OPEN       -                         -> -   this connection becomes the IKE
 *                                                   channel (-EBUSY if another is):
 *                                                   IKE_RX pushes begin; IKE to the
 *                                                   gateway is dropped ("ike") when
 *                                                   no channel is open
 *   IKE_TX         struct dpvpn_ike_pkt + data -> - send an IKE message from an
 *                                                   outside port's address (the
 *                                                   non-ESP marker added on 4500;
 *                                                   IP fragments over the MTU)
 *   IKE_RX         (pushed, never requested: flags DPVPN_F_PUSH, seq counting
 *                  pushes) struct dpvpn_ike_pkt + data: an IKE message that
 *                  reached an outside port's address on UDP 500, or on 4500
 *                  behind the non-ESP marker (stripped), within --ike-rate
 *   TUNIF_SET      struct dpvpn_tunif        -> -   create or change a tunnel
 *                                                   interface (route-based
 *                                                   tunnel): its outbound SA (up)
 *                                                   or none (down); one store
 *   TUNIF_DEL      struct dpvpn_tunif        -> -   by id (-EBUSY while a route
 *                                                   names it)
 *   SHOW_TUNIFS    struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + dpvpn_tunif_info[]
 *   KEEP_SET       struct dpvpn_keep + data  -> -   keep a record (dpvpnd's IKE SA
 *                                                   state, opaque here) under key,
 *                                                   in place of one there: what a
 *                                                   restarted dpvpnd takes up
 *                                                   again; held in hugepage memory,
 *                                                   wiped when replaced, deleted
 *                                                   or at exit; both sides wipe
 *                                                   the message (-ENOSPC: --max-sa
 *                                                   records held)
 *   KEEP_DEL       struct dpvpn_keep (len 0) -> -   -ENOENT if none
 *   KEEP_LIST      struct dpvpn_dump_req     -> struct dpvpn_dump_hdr + records,
 *                                                   each struct dpvpn_keep + data,
 *                                                   as many as fit (count)
 *   SEQ_SET        struct dpvpn_seq_set      -> -   an outbound SA's numbers up to
 *                                                   used count as used, and it may
 *                                                   use up to limit (both only
 *                                                   raised): an HA standby taking
 *                                                   over (doc/ha.md)
 *   VIP_SET        struct dpvpn_vip_set      -> -   a port's virtual addresses (an
 *                                                   HA pair's, doc/ha.md), IPv4 and
 *                                                   IPv6, and which of them it
 *                                                   holds: those are its own (ARP,
 *                                                   ND, ESP, IKE), each newly held
 *                                                   announced by gratuitous ARPs
 *                                                   (IPv4) or unsolicited Neighbour
 *                                                   Advertisements (IPv6)
 *   REPLAY_FLOOR   struct dpvpn_replay_floor -> -   an inbound SA's anti-replay
 *                                                   window takes every number up
 *                                                   to high as seen (raised only):
 *                                                   an HA standby taking over
 *
 * Dumps are paged: the request names the first index, the reply says how many
 * entries exist in all and how many follow in this message.
 */
#ifndef DPVPN_PROTO_H
#define DPVPN_PROTO_H

#include <stdint.h>

#define DPVPN_PROTO_VERSION	32
#define DPVPN_MSG_MAX		65536	/* largest datagram, header included */
#define DPVPN_NAME_LEN		32	/* names, NUL-terminated */
#define DPVPN_SEL_MAX		8	/* inner prefixes per side of an SA */
#define DPVPN_KEY_MAX		32	/* AES-256 */
#define DPVPN_SALT_LEN		4	/* RFC 4106 / RFC 7634 salt */
#define DPVPN_AUTH_KEY_MAX	32	/* HMAC-SHA-256 */
#define DPVPN_MSS_OFF		0xffff	/* sa.mss: no clamping */
#define DPVPN_MTU_MIN		576	/* tunnel MTU floor (IPv4's minimum datagram) */
#define DPVPN_PORT_MTU_MAX	9600	/* jumbo frames (dataplane --jumbo) */
#define DPVPN_REPLAY_WIN_DEFAULT 1024
#define DPVPN_REPLAY_WIN_MAX	4096
#define DPVPN_TUNIF_MAX		256	/* tunnel interfaces (route-based tunnels) */
#define DPVPN_ECMP_MAX		8	/* tunnels one route spreads over */

enum dpvpn_msg_type {
	DPVPN_MSG_HELLO = 1,
	DPVPN_MSG_PORT_SET,
	DPVPN_MSG_NEIGH_ADD,
	DPVPN_MSG_ROUTE_ADD,
	DPVPN_MSG_SA_ADD,
	DPVPN_MSG_SA_DEL,
	DPVPN_MSG_POLICY_ADD,
	DPVPN_MSG_START,
	DPVPN_MSG_SHOW_PORTS,
	DPVPN_MSG_SHOW_SA,
	DPVPN_MSG_SHOW_POLICIES,
	DPVPN_MSG_SHOW_COUNTERS,
	DPVPN_MSG_BATCH_BEGIN,
	DPVPN_MSG_BATCH_COMMIT,
	DPVPN_MSG_EVENTS,
	DPVPN_MSG_SEQ_GRANT,
	DPVPN_MSG_SHOW_LCORES,
	DPVPN_MSG_TRACE_START,
	DPVPN_MSG_TRACE_STATUS,
	DPVPN_MSG_ROUTE_DEL,
	DPVPN_MSG_NEIGH_DEL,
	DPVPN_MSG_SHOW_ROUTES,
	DPVPN_MSG_SHOW_NEIGHS,
	DPVPN_MSG_POLICY_DEL,
	DPVPN_MSG_IKE_OPEN,
	DPVPN_MSG_IKE_TX,
	DPVPN_MSG_IKE_RX,
	DPVPN_MSG_TUNIF_SET,
	DPVPN_MSG_TUNIF_DEL,
	DPVPN_MSG_SHOW_TUNIFS,
	DPVPN_MSG_KEEP_SET,
	DPVPN_MSG_KEEP_DEL,
	DPVPN_MSG_KEEP_LIST,
	DPVPN_MSG_SEQ_SET,
	DPVPN_MSG_VIP_SET,
	DPVPN_MSG_REPLAY_FLOOR,
	DPVPN_MSG_TYPE_MAX
};

#define DPVPN_F_REPLY	0x1
#define DPVPN_F_PUSH	0x2	/* unsolicited (IKE_RX); no reply is expected */
#define DPVPN_F_QUIET	0x4	/* request (IKE_TX, KEEP_SET, KEEP_DEL): no reply unless refused */

struct dpvpn_msg_hdr {
	uint16_t type;		/* enum dpvpn_msg_type */
	uint16_t flags;		/* DPVPN_F_* */
	uint32_t seq;		/* echoed in the reply */
	uint32_t len;		/* payload bytes after this header */
	int32_t status;		/* replies: 0 or -errno */
};

enum dpvpn_port_role {
	DPVPN_ROLE_NONE = 0,	/* not forwarding: every packet dropped */
	DPVPN_ROLE_INSIDE,	/* cleartext side: packets are encrypted */
	DPVPN_ROLE_OUTSIDE,	/* tunnel side: ESP is decrypted */
};

enum dpvpn_sa_dir {
	DPVPN_DIR_IN = 1,
	DPVPN_DIR_OUT = 2,
};

/* The outer header's Don't Fragment bit (RFC 4301 8.1): from the inner one, or fixed. */
enum dpvpn_df {
	DPVPN_DF_COPY = 0,
	DPVPN_DF_SET,
	DPVPN_DF_CLEAR,
};

enum dpvpn_life {
	DPVPN_LIFE_OK = 0,
	DPVPN_LIFE_SOFT,	/* a soft limit was reached: time to rekey */
	DPVPN_LIFE_HARD,	/* a hard limit was reached: the SA carries nothing */
};

enum dpvpn_event_kind {
	DPVPN_EV_LIFETIME = 0,	/* life: the lifetime state reached */
	DPVPN_EV_SEQ_LOW,	/* value: the last sequence number the outbound SA
				 * used; its reserved numbers run low (SEQ_GRANT) */
};

struct dpvpn_event {
	uint32_t spi;		/* network order */
	uint8_t dir;
	uint8_t life;		/* enum dpvpn_life reached */
	uint8_t kind;		/* enum dpvpn_event_kind */
	uint8_t reserved;
	char name[DPVPN_NAME_LEN];
	uint64_t value;
};

/* Outbound SA: sequence numbers up to limit may be used (dpvpnd persisted it). */
struct dpvpn_seq_grant {
	uint32_t spi;		/* network order */
	uint32_t reserved;
	uint64_t limit;
};

/* Inbound SA: numbers up to high count as received (REPLAY_FLOOR). */
struct dpvpn_replay_floor {
	uint32_t spi;		/* network order */
	uint32_t reserved;
	uint64_t high;
};

/*
 * A port's virtual addresses (VIP_SET): IPv4 in vip (network order, 0 =
 * none), IPv6 in vip6 (all zero = none).  Bit i of held (held6) says vip[i]
 * (vip6[i]) is this port's now, the HA master's; a bit for no address, or
 * a bit past the arrays, is refused.  An IPv6 one is the port's only while
 * the port has an IPv6 address of its own (as an IPv4 one needs an IPv4
 * address): its Neighbour Advertisements come from the port.
 */
#define DPVPN_VIP_MAX	4
#define DPVPN_VIP6_MAX	4
struct dpvpn_vip_set {
	uint16_t port_id;
	uint8_t held;		/* bit i: vip[i] is this port's now (the HA master's) */
	uint8_t held6;		/* bit i: vip6[i] is */
	uint8_t reserved[4];
	uint32_t vip[DPVPN_VIP_MAX];
	uint8_t vip6[DPVPN_VIP6_MAX][16];
};
_Static_assert(sizeof(struct dpvpn_vip_set) == 8 + 4 * DPVPN_VIP_MAX + 16 * DPVPN_VIP6_MAX,
	       "struct dpvpn_vip_set has no padding");
_Static_assert(DPVPN_VIP_MAX <= 8 && DPVPN_VIP6_MAX <= 8, "held and held6 are 8 bits");

/* Outbound SA: numbers up to used are used, up to limit may be (SEQ_SET). */
struct dpvpn_seq_set {
	uint32_t spi;		/* network order */
	uint32_t reserved;
	uint64_t used;
	uint64_t limit;		/* >= used; 0 on an SA without a limit: ignored */
};

/* ESP transforms; sizes and names in dpvpn_alg.h. */
enum dpvpn_alg {
	DPVPN_ALG_AES128_GCM = 1,	/* RFC 4106, 16-byte ICV */
	DPVPN_ALG_AES256_GCM,
	DPVPN_ALG_AES128_CBC_SHA1,	/* RFC 3602 + RFC 2404 HMAC-SHA1-96 */
	DPVPN_ALG_AES256_CBC_SHA1,
	DPVPN_ALG_AES128_CBC_SHA256,	/* RFC 3602 + RFC 4868 HMAC-SHA-256-128 */
	DPVPN_ALG_AES256_CBC_SHA256,
	DPVPN_ALG_CHACHA20_POLY1305,	/* RFC 7634 */
	DPVPN_ALG_NULL_SHA256,		/* RFC 2410 + RFC 4868: not encrypted */
	DPVPN_ALG_MAX
};

struct dpvpn_status {
	uint32_t proto_version;
	uint32_t n_ports;
	uint32_t n_workers;
	uint32_t n_sa;
	uint32_t n_policies;
	uint32_t started;	/* 1 once START was received */
	uint64_t uptime_s;
	char crypto_lib[DPVPN_NAME_LEN];	/* "intel-ipsec-mb 1.3.0 avx2" */
};

/* Address families, as the IP version field says. */
#define DPVPN_AF_INET	4
#define DPVPN_AF_INET6	6

/* An IPv4 or IPv6 address, network order; family 0: none. */
struct dpvpn_addr {
	uint8_t family;		/* DPVPN_AF_INET, DPVPN_AF_INET6 or 0 */
	uint8_t reserved[3];
	union {
		uint32_t v4;
		uint8_t v6[16];
	};
};

/* A prefix: address (host bits zero) and length (0..32 or 0..128). */
struct dpvpn_prefix {
	uint8_t family;		/* DPVPN_AF_INET, DPVPN_AF_INET6 or 0 (none) */
	uint8_t len;
	uint8_t reserved[2];
	union {
		uint32_t v4;
		uint8_t v6[16];
	};
};

struct dpvpn_port_cfg {
	uint16_t port_id;	/* DPDK port id */
	uint8_t role;		/* enum dpvpn_port_role */
	uint8_t reserved;
	struct dpvpn_prefix addr4;	/* the port's IPv4 address/len; family 0: none */
	struct dpvpn_prefix addr6;	/* the port's IPv6 address/len; family 0: none */
	uint16_t mtu;		/* IP MTU to set on the device; 0: leave it */
	uint8_t reserved2[2];
	/*
	 * Outside ports: more IPv4 addresses of the port, a whole prefix (host
	 * bits zero; family 0: none), as a gateway with a block of public
	 * addresses has them: ARP answered, ESP, ESP in UDP and IKE taken, and
	 * SAs and IKE may use them as their local address.  Needs addr4.
	 */
	struct dpvpn_prefix extra4;
	/*
	 * The port's Linux twin (a TAP with the port's MAC), NUL-terminated; ""
	 * none.  What is addressed to the port and not the dataplane's to
	 * consume goes to it, what the host sends through it leaves by the
	 * port (doc/host-path.md).  -EINVAL if the name is not a Linux
	 * interface name (or has ',' or '='); an error if net_tap can neither
	 * create it nor attach to it (a name taken by another kind of link).
	 */
	char host_iface[16];
};

struct dpvpn_neigh {
	uint16_t port_id;
	uint8_t mac[6];
	struct dpvpn_addr addr;	/* IPv4 (ARP) or IPv6 (Neighbour Discovery) */
};

struct dpvpn_neigh_info {
	uint16_t port_id;
	uint8_t mac[6];		/* zero: not resolved (yet) */
	struct dpvpn_addr addr;
	uint8_t is_static;
	uint8_t reserved[7];
};

enum dpvpn_route_kind {
	DPVPN_ROUTE_PORT = 0,	/* out port_id, to gateway or on-link */
	DPVPN_ROUTE_TUNNEL,	/* into tunnel interfaces: tunif[0..n_tunif-1] */
};

/*
 * A route (v2, protocol 22; 23 with the host twins).  kind TUNNEL: the inner packets no policy takes
 * whose destination is dst are encrypted into the tunnel interface's current
 * outbound SA; with n_tunif > 1 (ECMP, at most DPVPN_ECMP_MAX) each flow (its
 * addresses and ports hashed) keeps one of them, and the flows of one that is
 * down go to the next one up.  port_id and gateway are then ignored (zero).
 * ROUTE_ADD on a dst that has a route replaces it.
 */
struct dpvpn_route {
	struct dpvpn_prefix dst;
	uint16_t port_id;
	uint8_t kind;		/* enum dpvpn_route_kind */
	uint8_t n_tunif;	/* kind TUNNEL: 1..DPVPN_ECMP_MAX; else 0 */
	struct dpvpn_addr gateway;	/* family 0: the destination is on-link;
					 * else the same family as dst */
	uint16_t tunif[DPVPN_ECMP_MAX];	/* kind TUNNEL: tunnel interface ids */
};

/* Reverse path check of what a route-based tunnel's inbound SA decrypts. */
enum dpvpn_rpf {
	DPVPN_RPF_OFF = 0,
	DPVPN_RPF_LOOSE,	/* the inner source has a route (any) */
	DPVPN_RPF_STRICT,	/* the inner source's route is this tunnel interface
				 * (or an ECMP route holding it) */
};

/*
 * A tunnel interface (route-based tunnel, like Linux's XFRM interface): what
 * routes of kind TUNNEL name.  up: out_spi is its outbound SA (installed
 * first); 0: down (out_spi 0), what routes send to it is dropped
 * "tunnel-down" (or goes to another ECMP member that is up).  Deleting the
 * outbound SA takes the interface down.  A rekey is one TUNIF_SET.
 */
struct dpvpn_tunif {
	uint16_t id;		/* 0..DPVPN_TUNIF_MAX-1, chosen by the control plane */
	uint8_t rpf;		/* enum dpvpn_rpf */
	uint8_t up;
	uint32_t out_spi;	/* network order; up: an installed outbound SA */
	char name[DPVPN_NAME_LEN];	/* the tunnel's, NUL-terminated */
	/*
	 * Version 24: the tunnel's Linux twin (net_tun, raw IP), "" none.  Its
	 * route SA's decrypted packets to inside4 / inside6 (0 / ::: none) or
	 * to IPv4 / IPv6 link-local multicast go to the twin; what the host
	 * writes into it is encrypted into out_spi's SA (dropped tunnel-down
	 * while down).  The dataplane makes it; dpvpnd addresses it.
	 */
	char host_iface[16];
	uint32_t inside4;	/* network order */
	uint8_t inside6[16];
};

struct dpvpn_tunif_info {
	uint16_t id;
	uint8_t rpf;
	uint8_t up;
	uint32_t out_spi;
	char name[DPVPN_NAME_LEN];
	uint64_t tx;		/* packets routed into it (encrypted or not) */
	uint64_t rx;		/* packets its route-mode SAs decrypted and kept */
	uint64_t down_drops;	/* routed to it while it (and its ECMP group) was down */
};

struct dpvpn_sa_cfg {
	uint32_t spi;		/* network order, nonzero */
	uint8_t dir;		/* enum dpvpn_sa_dir */
	uint8_t alg;		/* enum dpvpn_alg */
	uint8_t key_len;	/* cipher key bytes, as dpvpn_alg.h gives for alg */
	uint8_t df;		/* outbound: enum dpvpn_df, the outer header's DF */
	uint32_t replay_window;	/* inbound: 64..DPVPN_REPLAY_WIN_MAX, power of 2;
				 * 0 = anti-replay off (benchmarks only) */
	struct dpvpn_addr local;	/* outer source (out) / destination (in) */
	struct dpvpn_addr remote;	/* outer destination (out) / source (in);
					 * same family as local */
	uint16_t udp_local;	/* UDP encapsulation (RFC 3948): our port, host order; */
	uint16_t udp_remote;	/* the peer's port.  Both 0: plain ESP */
	uint8_t esn;		/* 1: 64-bit extended sequence numbers (RFC 4303 2.2.1) */
	uint8_t auth_key_len;	/* HMAC key bytes, as dpvpn_alg.h gives for alg */
	uint8_t flags;		/* DPVPN_SA_F_* */
	uint8_t tunif;		/* DPVPN_SA_F_ROUTE: its tunnel interface's id */
	/* Lifetimes, [0] soft and [1] hard; 0 = none.  Soft raises an event,
	 * hard stops the SA (its packets are dropped as sa-expired). */
	uint64_t life_bytes[2];		/* inner bytes */
	uint64_t life_packets[2];
	uint32_t life_seconds[2];	/* since the SA was installed */
	uint64_t seq_start;	/* outbound: numbers up to this one count as used;
				 * the first packet gets seq_start + 1 */
	uint64_t seq_limit;	/* outbound: the last number it may use until a
				 * SEQ_GRANT raises it; 0 = no limit; = seq_start:
				 * none yet (silent).  dpvpnd persists
				 * each limit before it grants it, so a restart never
				 * reuses a number (and so an AEAD nonce) */
	uint16_t mtu;		/* outbound: the largest inner packet sent as one ESP
				 * packet; 0 = what fits the outside port's MTU */
	uint16_t mss;		/* TCP MSS clamp on SYNs either way; 0 = from the
				 * tunnel MTU, DPVPN_MSS_OFF = off */
	uint8_t frag_outer;	/* 1: a DF-clear IPv4 packet over mtu is encrypted whole
				 * and the outer packet fragmented; 0: it is fragmented
				 * before encryption (RFC 4459) */
	uint8_t udp_spread_log2;	/* UDP encapsulation, outbound: source ports
				 * udp_local .. udp_local + 2^this - 1, picked by inner
				 * flow, so a receiver's RSS spreads one tunnel (0..8) */
	uint8_t n_more_lts;	/* entries of more_lts (0..DPVPN_SEL_MAX - 1) */
	uint8_t n_more_rts;	/* entries of more_rts */
	struct dpvpn_prefix local_ts;	/* inner prefix behind this gateway; */
	struct dpvpn_prefix remote_ts;	/* inner prefix behind the peer: same family,
					 * either family whatever the outer one is */
	/*
	 * Selector lists: more prefixes of local_ts's family on either side.
	 * Inbound, a packet is the SA's if its source is in remote_ts or one
	 * of more_rts and its destination in local_ts or one of more_lts
	 * (else policy-mismatch); outbound selection is by policies, one per
	 * (local, remote) pair, added by the control plane.
	 */
	struct dpvpn_prefix more_lts[DPVPN_SEL_MAX - 1], more_rts[DPVPN_SEL_MAX - 1];
	char name[DPVPN_NAME_LEN];
	uint8_t key[DPVPN_KEY_MAX];	/* secret: wiped after use */
	uint8_t salt[DPVPN_SALT_LEN];	/* secret: wiped after use (AEAD only) */
	uint8_t auth_key[DPVPN_AUTH_KEY_MAX];	/* secret: wiped after use (HMAC only) */
};

/*
 * sa.flags: DPVPN_SA_F_ROUTE: a route-based tunnel's SA.  Inbound it takes
 * either inner family (next header 4 or 41); the selectors of local_ts's
 * family are checked as configured (0/0: anything), the other family's are
 * 0/0; what it decrypts is counted on tunnel interface `tunif` and checked
 * by its rpf.  Outbound: reached through TUNIF_SET, never by a policy.
 */
#define DPVPN_SA_F_ROUTE	0x1
/*
 * sa.flags: DPVPN_SA_F_HOST (inbound, not with ROUTE; protocol 25): what the
 * SA decrypts for one of the gateway's addresses goes to the twin of the
 * port that owns the address (host-interface), pings included, as the
 * port's own traffic would (strongSwan's hostaccess); without it, or when
 * that port has no twin, it is answered (pings) or dropped to-self.
 */
#define DPVPN_SA_F_HOST		0x2

struct dpvpn_sa_id {
	uint32_t spi;		/* network order */
	uint8_t dir;
	uint8_t reserved[3];
};

struct dpvpn_policy {
	struct dpvpn_prefix src;	/* inner source */
	struct dpvpn_prefix dst;	/* inner destination, same family as src */
	uint32_t spi;		/* outbound SA it selects, network order */
	uint32_t priority;	/* lower wins; equal: longer prefixes win */
};

struct dpvpn_dump_req {
	uint32_t start;		/* index of the first entry wanted */
};

struct dpvpn_dump_hdr {
	uint32_t total;		/* entries in the table */
	uint32_t count;		/* entries following in this reply */
};

struct dpvpn_port_info {
	uint16_t port_id;
	uint8_t role;
	uint8_t reserved0;
	struct dpvpn_prefix addr4, addr6;	/* family 0: none */
	uint8_t mac[6];
	uint8_t link_up;
	uint8_t reserved;
	char name[DPVPN_NAME_LEN];	/* DPDK device name */
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
	uint64_t rx_missed;	/* the device's imissed; net_af_packet: what the Linux
				 * link received since START that never reached the
				 * dataplane (dataplane/port.c) */
	uint64_t rx_errors, tx_errors;
	char iface[16];		/* Linux interface behind the port, "" none */
	uint64_t csum_completed;	/* inside port: TCP/UDP checksums the host left
					 * partial (offload), finished by the dataplane */
	struct dpvpn_prefix extra4;	/* extra-addresses (PORT_SET); family 0: none */
	char host_iface[16];	/* the port's host twin (PORT_SET), "" none */
	uint8_t host_link_up;	/* the twin's Linux link is up (what it gets: host-down else) */
	uint8_t reserved3[7];
	uint64_t host_in, host_out;	/* frames written into the twin, read from it */
};

struct dpvpn_sa_info {
	uint32_t spi;
	uint8_t dir;
	uint8_t alg;
	uint8_t df;
	uint8_t reserved;
	uint32_t replay_window;
	struct dpvpn_addr local, remote;
	uint16_t udp_local, udp_remote;	/* 0: plain ESP */
	uint8_t esn;
	uint8_t life_state;	/* enum dpvpn_life */
	uint8_t reserved2[2];
	uint64_t life_bytes[2], life_packets[2];	/* as configured */
	uint32_t life_seconds[2];
	uint64_t age_s;
	uint16_t mtu;		/* out: effective tunnel MTU (inner bytes) */
	uint16_t mss;		/* effective MSS clamp, DPVPN_MSS_OFF = off */
	uint8_t frag_outer;
	uint8_t flags;		/* DPVPN_SA_F_* as installed */
	uint8_t tunif;		/* DPVPN_SA_F_ROUTE: its tunnel interface */
	uint8_t reserved3;
	struct dpvpn_prefix local_ts, remote_ts;
	char name[DPVPN_NAME_LEN];
	uint64_t seq;		/* out: last sequence number sent; in: highest accepted */
	uint64_t packets, bytes;	/* inner packets and bytes carried */
	uint64_t drop_replay, drop_icv, drop_policy, drop_other;
	uint64_t drop_seq;	/* out: seq-exhausted (counted in drop_other before) */
	uint64_t idle_ms;	/* since the SA last carried a packet (as packets
				 * counts them); UINT64_MAX: none since it was installed */
	uint64_t serial;	/* the n-th SA_ADD of this dataplane: tells an SA from
				 * one installed before with the same SPI and direction */
};

/*
 * Drop reasons: one list generates the enum, the names shown by dpvpnctl and
 * the counters.  X(ENUM, "name", "description").  Append only: the dataplane
 * reports counters as an array indexed by this enum.
 */
#define DPVPN_DROP_REASONS(X) \
	X(NO_ROLE,	"no-role",	"packet on a port with no role") \
	X(WRONG_MAC,	"wrong-mac",	"unicast frame for another MAC address") \
	X(NOT_IP,	"not-ip",	"ethertype is not IPv4, IPv6 or ARP") \
	X(BAD_ARP,	"bad-arp",	"malformed or foreign ARP packet") \
	X(BAD_IPV4,	"bad-ipv4",	"malformed IPv4 header or length") \
	X(FRAGMENT,	"fragment",	"outer fragment that was not reassembled") \
	X(MULTISEG,	"multiseg",	"multi-segment packet (no jumbo support yet)") \
	X(TO_SELF,	"to-self",	"addressed to the gateway and not a ping (the one thing it answers)") \
	X(NO_POLICY,	"no-policy",	"no outbound policy matches the packet") \
	X(SA_GONE,	"sa-gone",	"policy names an SA that is not installed") \
	X(SEQ_EXHAUSTED, "seq-exhausted", "outbound 32-bit sequence space used up") \
	X(TOO_BIG,	"too-big",	"encapsulated packet does not fit the mbuf") \
	X(NOT_LOCAL,	"not-local",	"outer destination is not our address") \
	X(NOT_ESP,	"not-esp",	"outer protocol is not ESP") \
	X(SHORT,	"short",	"ESP packet too short") \
	X(UNKNOWN_SPI,	"unknown-spi",	"no inbound SA for the SPI") \
	X(REPLAY,	"replay",	"sequence number replayed or left of the window") \
	X(BAD_LENGTH,	"bad-length",	"ciphertext length is not a multiple of the block") \
	X(BAD_ICV,	"bad-icv",	"integrity check failed") \
	X(BAD_PADDING,	"bad-padding",	"ESP padding bytes or length invalid") \
	X(BAD_NEXT_HDR,	"bad-next-header", "ESP next header is not the SA's inner IP version") \
	X(BAD_INNER,	"bad-inner",	"decrypted inner packet is malformed") \
	X(POLICY_MISMATCH, "policy-mismatch", "inner addresses outside the SA's selectors") \
	X(NO_ROUTE,	"no-route",	"no route to the destination") \
	X(NO_NEIGH,	"no-neighbour",	"next hop MAC not resolved, and no room to hold the packet meanwhile") \
	X(TX_FULL,	"tx-full",	"transmit queue full") \
	X(PUNT_FULL,	"punt-full",	"slow-path ring full") \
	X(CRYPTO_ERROR,	"crypto-error",	"crypto library rejected the job") \
	X(TTL_EXPIRED,	"ttl-expired",	"inner TTL would reach 0 when forwarded") \
	X(ECN_DROP,	"ecn-drop",	"outer CE on a not-ECN-capable inner packet (RFC 6040)") \
	X(NATT_KEEPALIVE, "natt-keepalive", "NAT-T keepalive (RFC 3948), counted and dropped") \
	X(IKE,		"ike",		"IKE (UDP 500, or 4500 with the non-ESP marker) and no IKE channel open") \
	X(ENCAP_MISMATCH, "encap-mismatch", "ESP in or out of UDP, or over another IP version, unlike its SA") \
	X(SA_EXPIRED,	"sa-expired",	"the SA reached a hard lifetime") \
	X(BAD_IPV6,	"bad-ipv6",	"malformed IPv6 header or length") \
	X(BAD_ND,	"bad-nd",	"malformed or foreign Neighbour Discovery packet") \
	X(PMTU,		"pmtu",		"over the tunnel MTU and may not be fragmented (ICMP sent)") \
	X(SEQ_UNRESERVED, "seq-unreserved", "sequence numbers not yet persisted by dpvpnd") \
	X(NO_MBUF,	"no-mbuf",	"packet buffer pool exhausted") \
	X(BEFORE_START,	"before-start",	"queued before forwarding started (discarded)") \
	X(IKE_LIMIT,	"ike-limit",	"IKE over the --ike-rate limit") \
	X(ESP_DUMMY,	"esp-dummy",	"ESP dummy packet (next header 59, RFC 4303 2.6), counted and discarded") \
	X(NEIGH_TIMEOUT, "neigh-timeout", "held for a next hop that did not answer ARP / ND in 3 s") \
	X(ECHO_LIMIT,	"echo-limit",	"ICMP / ICMPv6 echo request to the gateway over the reply rate limit") \
	X(ANSWER_OUTSIDE, "answer-outside", "gateway's answer to an inside host whose source routes out an outside port") \
	X(HOST_LIMIT,	"host-limit",	"for the host twin, over --host-rate or --host-rate-control") \
	X(HOST_FULL,	"host-full",	"for the host twin, and its ring or the twin is full") \
	X(HOST_DOWN,	"host-down",	"for the host twin, and its link is down") \
	X(TUNNEL_DOWN,	"tunnel-down",	"routed into a tunnel interface (or ECMP group) with no outbound SA") \
	X(RPF,		"rpf",		"decrypted by a route-based tunnel, and its source fails the reverse path check")

enum dpvpn_drop_reason {
#define DPVPN_X_ENUM(e, name, desc) DPVPN_DROP_##e,
	DPVPN_DROP_REASONS(DPVPN_X_ENUM)
#undef DPVPN_X_ENUM
	DPVPN_DROP_MAX
};

#define DPVPN_DROP_SLOTS 64	/* room for reasons added later */
_Static_assert(DPVPN_DROP_MAX <= DPVPN_DROP_SLOTS, "grow DPVPN_DROP_SLOTS");

enum dpvpn_trace_point {
	DPVPN_TRACE_OFF = 0,
	DPVPN_TRACE_INSIDE_RX,		/* frames received on inside ports */
	DPVPN_TRACE_PRE_ENCRYPT,	/* cleartext about to be encrypted */
	DPVPN_TRACE_DECRYPTED,		/* cleartext just decrypted */
	DPVPN_TRACE_OUTSIDE_TX,		/* frames sent on outside ports */
	DPVPN_TRACE_MAX
};

struct dpvpn_trace_req {
	uint8_t point;		/* enum dpvpn_trace_point */
	uint8_t reserved[3];
	uint32_t count;		/* packets, 1..100000 */
	char path[256];		/* absolute, created new (O_EXCL), mode 0600 */
};

struct dpvpn_trace_status {
	uint8_t active;
	uint8_t point;
	uint8_t last_point;	/* the running or last trace's (OFF: none since start); the
				 * counters below are its */
	uint8_t reserved[5];
	uint64_t wanted, captured, written, lost;
};

/*
 * One lcore's share.  A polling worker is always 100 % busy to the OS: busy
 * and idle cycles tell polls that found work from empty ones (idle includes
 * the idle back-off's sleeps); busy / (busy + idle) is its real load.
 */
struct dpvpn_lcore_info {
	uint32_t lcore;
	uint8_t worker;		/* 1: a worker, 0: the main lcore */
	uint8_t reserved[3];
	uint64_t rx_packets, tx_packets, encrypted, decrypted, drops;
	uint64_t busy_cycles, idle_cycles;
	uint64_t hz;		/* cycles per second */
};

struct dpvpn_counters {
	uint32_t n_reasons;	/* DPVPN_DROP_MAX of the dataplane */
	uint32_t reserved;
	uint64_t rx_packets;	/* taken from all RX queues by workers */
	uint64_t tx_packets;	/* handed to TX queues */
	uint64_t encrypted;	/* ESP packets built */
	uint64_t decrypted;	/* ESP packets accepted */
	uint64_t arp_in, arp_out;	/* handled on the main lcore */
	uint64_t handoff;	/* outside-port packets a worker passed to another
				 * worker to spread one tunnel's decryption */
	uint64_t icmp_out;	/* ICMP "fragmentation needed" / ICMPv6 "packet too big" sent */
	uint64_t icmp_limited;	/* ... not sent: over the rate limit */
	uint64_t fragments;	/* fragments made (inner before encryption, or outer) */
	uint64_t mss_clamped;	/* TCP SYNs whose MSS option was lowered */
	uint64_t frag_in;	/* outer IPv4/IPv6 fragments taken for reassembly */
	uint64_t reassembled;	/* packets they completed */
	uint64_t reass_dropped;	/* fragments given up (timeout, table full, bad) */
	uint64_t fragmented;	/* packets split into those fragments */
	uint64_t ike_in;	/* IKE messages pushed to the IKE channel */
	uint64_t ike_out;	/* IKE messages built for IKE_TX */
	uint64_t mbufs_in_use, mbufs_total;	/* the packet pool, now */
	uint64_t drops[DPVPN_DROP_SLOTS];
	uint64_t icmp_echo;	/* ICMP / ICMPv6 echo replies the gateway sent (ping) */
	uint64_t neigh_queued;	/* packets held while their next hop was resolved */
	uint64_t neigh_held;	/* ... held now (a gauge): sent or dropped later */
	uint64_t host_in;	/* frames handed to the ports' host twins */
	uint64_t host_out;	/* frames the host sent through them */
	uint64_t replay_late;	/* of the replay drops, those left of the window
				 * (late: reordered or delayed by more than the
				 * window), not seen before */
};

#define DPVPN_IKE_PORT		500
#define DPVPN_IKE_NATT_PORT	4500
#define DPVPN_IKE_MAX		8192	/* largest IKE message carried (UDP payload) */

/*
 * IKE_RX and IKE_TX: one IKE message, as a UDP socket would show it (the
 * non-ESP marker of port 4500 is not part of data).  port: the outside port
 * it came in on; for IKE_TX the port whose address is the source (the route
 * to remote picks the port it leaves by, as for ESP).  len: bytes of data
 * that follow, 1..DPVPN_IKE_MAX, the rest of the message.
 */
struct dpvpn_ike_pkt {
	uint16_t port;
	uint16_t local_port, remote_port;	/* host order: 500 or 4500 */
	uint16_t reserved;
	struct dpvpn_addr local, remote;	/* same family */
	uint32_t len;
	uint32_t reserved2;
};

/* KEEP_SET, KEEP_DEL; and each record of KEEP_LIST's reply, data after it. */
#define DPVPN_KEEP_KEY_LEN	16
#define DPVPN_KEEP_MAX		16384	/* data bytes of one record */

struct dpvpn_keep {
	uint8_t key[DPVPN_KEEP_KEY_LEN];
	uint32_t len;		/* data bytes that follow (KEEP_DEL: 0) */
	uint32_t reserved;
};

#endif /* DPVPN_PROTO_H */
