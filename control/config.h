/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * config.h - dpvpnd's configuration file (INI, parsed with libinih).
 *
 * cfg_load() reads the whole file and collects every error as
 * "FILE:LINE: message"; the caller prints them (cfg_print_errors()).  Values
 * are stored ready for the dataplane protocol: IPv4 addresses and SPIs in
 * host order here, converted to network order when the messages are built;
 * IPv6 addresses as their 16 bytes (network order).  Every address and
 * prefix carries its family (DPVPN_AF_INET or DPVPN_AF_INET6; 0: not given).
 *
 * Key material lives only in the fixed arrays of struct cfg_tunnel, which are
 * allocated one by one (never moved by realloc), and in struct cfg_ha's key;
 * all of it is wiped by cfg_wipe_keys() and cfg_free().
 */
#ifndef DPVPN_CONTROL_CONFIG_H
#define DPVPN_CONTROL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "dpvpn_proto.h"

#define CFG_NAME_MAX		(DPVPN_NAME_LEN - 1)	/* section names */
#define CFG_PATH_MAX		108	/* sizeof(sun_path) */
#define CFG_PORT_ID_MAX		1023
#define CFG_SPI_MIN		256	/* 1..255 are reserved by IANA */
#define CFG_REPLAY_WIN_MIN	64
#define CFG_KEYMAT_MAX		(DPVPN_KEY_MAX + DPVPN_SALT_LEN)
#define CFG_DEFAULT_DP_SOCKET	"/run/dpvpn/dataplane.sock"
#define CFG_DEFAULT_CTL_SOCKET	"/run/dpvpn/dpvpnd.sock"

/* An IPv4 or IPv6 address; family 0: none (not given, or refused). */
struct cfg_addr {
	uint8_t family;		/* DPVPN_AF_INET, DPVPN_AF_INET6 or 0 */
	union {
		uint32_t v4;	/* host order */
		uint8_t v6[16];	/* network order */
	};
};

struct cfg_prefix {
	struct cfg_addr addr;
	uint8_t len;		/* 0..32 or 0..128 */
};

struct cfg_port {
	char name[DPVPN_NAME_LEN];
	int line;		/* section header */
	int id_line;
	uint16_t id;
	uint8_t role;		/* enum dpvpn_port_role */
	struct cfg_prefix addr4;	/* address = : at most one of each family; */
	struct cfg_prefix addr6;	/* addr.family 0: none */
	uint16_t mtu;		/* 0: the device's own */
	struct cfg_prefix extra4;	/* extra-addresses = (outside, IPv4); family 0: none */
	int extra_line;
	char host_iface[16];	/* host-interface = : the Linux twin; "" none */
	int host_line;
};

struct cfg_neigh {
	char name[DPVPN_NAME_LEN];
	const char *section;	/* "neighbor" or "neighbour", as the file spells it */
	int line;
	int port_line;
	char port_ref[DPVPN_NAME_LEN];	/* resolved into port_id at the end */
	uint16_t port_id;
	struct cfg_addr addr;
	uint8_t mac[6];
};

struct cfg_route {
	char name[DPVPN_NAME_LEN];
	int line;
	int port_line;
	char port_ref[DPVPN_NAME_LEN];
	uint16_t port_id;
	struct cfg_prefix dst;
	struct cfg_addr via;	/* family 0: on-link; else dst's family */
	int via_line;
	/* a route into route-based tunnels ([route NAME] tunnel =, or [routes]
	 * route = ... via tunnel NAME, the same prefix again for ECMP); port
	 * and via then unused */
	uint8_t n_tunnels;
	uint8_t in_routes;	/* from [routes] (name "" then) */
	int tunnel_line;	/* the first tunnel's line */
	int tunnel_lines[DPVPN_ECMP_MAX];
	char tunnels[DPVPN_ECMP_MAX][DPVPN_NAME_LEN];
};

/* One direction of a tunnel: SPI and key + salt. */
struct cfg_sa_key {
	uint32_t spi;
	int spi_line;
	int key_line;		/* line of key or key-file, 0 if neither */
	int key_is_file;
	size_t keymat_len;	/* bytes decoded (may exceed the array: error) */
	uint8_t keymat[CFG_KEYMAT_MAX];	/* secret: cipher key then salt (AEAD) */
	int auth_line;		/* line of auth-key or auth-key-file, 0 if neither */
	int auth_is_file;
	size_t authmat_len;
	uint8_t authmat[DPVPN_AUTH_KEY_MAX];	/* secret: HMAC key */
};

/*
 * keying = ike: the tunnel's SPIs and keys are negotiated by IKEv2 (dpvpnd's
 * ike_sa.c) instead of configured; the ESP proposal is the tunnel's cipher.
 */
#define CFG_PSK_MIN		16
#define CFG_PSK_MAX		128
#define CFG_IKE_ID_MAX		255
#define CFG_IKE_PROPS_MAX	4	/* ike-proposals, esp-proposals: proposals each */
#define CFG_PROP_ALGS_MAX	4	/* of one kind in one proposal: as many as dpvpn has */
#define CFG_DPD_DEFAULT		30	/* seconds */
#define CFG_DPD_MAX		86400
#define CFG_IKE_LIFE_DEFAULT	14400	/* seconds: IKE SA rekeyed after 4 h, as strongSwan */
#define CFG_IKE_LIFE_MIN	60
#define CFG_IKE_FRAG_SIZE	1280	/* fragment-size default: strongSwan's charon.fragment_size */
#define CFG_IKE_FRAG_MIN	256	/* the smallest that holds a fragment's headers and data */
#define CFG_IKE_LIFE_MAX	604800	/* a week */

/*
 * One proposal in strongSwan's syntax ("aes128-aes256-sha256-ecp256"): the
 * algorithms of each kind in order of preference, as IANA transform IDs
 * (IKEv2 parameters); encr_bits is the AES key length (256 for ChaCha20).
 */
struct cfg_prop {
	uint16_t encr[CFG_PROP_ALGS_MAX], encr_bits[CFG_PROP_ALGS_MAX];
	uint16_t integ[CFG_PROP_ALGS_MAX], prf[CFG_PROP_ALGS_MAX], dh[CFG_PROP_ALGS_MAX];
	uint8_t n_encr, n_integ, n_prf, n_dh;
	uint8_t esn;		/* ESP: 1 noesn, 2 esn (a mask); 0: none said (noesn) */
};

/*
 * auth = pubkey (config_pki.c): the gateway's certificate and private key,
 * the trust anchors (a file or a directory of them) and CRLs, as absolute
 * paths.  The files are read and checked when the config is (file:line
 * errors; the private key's file as a key file) and again by dpvpnd when it
 * makes the connection (cfg_ike_pki_load); their digest makes a reload see a
 * changed file as a changed tunnel.
 */
#define CFG_AUTH_PSK		0
#define CFG_AUTH_PUBKEY		1
#define CFG_PKI_PATH_MAX	256
#define CFG_PKI_FILE_MAX	(256 * 1024)	/* a certificate, key, CA bundle or CRL file */
#define CFG_PKI_CA_FILES_MAX	256		/* in a ca = DIRECTORY */

struct cfg_pki {
	int auth_line, cert_line, key_line, ca_line, crl_line;	/* 0: not given */
	char cert[CFG_PKI_PATH_MAX], key[CFG_PKI_PATH_MAX];
	char ca[CFG_PKI_PATH_MAX], crl[CFG_PKI_PATH_MAX];
	uint8_t digest[32];	/* SHA-256 of a process secret, the files' names and bytes */
};

struct cfg_ike {
	uint8_t on;		/* keying = ike */
	uint8_t auth;		/* CFG_AUTH_PSK (default) or CFG_AUTH_PUBKEY */
	uint8_t remote_id_pattern;	/* remote-id has a '*': auth = pubkey only */
	struct cfg_pki pki;
	int line;		/* of keying = ike */
	int psk_line;		/* of psk-file, 0 if none */
	size_t psk_len;
	uint8_t psk[CFG_PSK_MAX];	/* secret: the file's bytes (one final newline dropped) */
	/* identities: type 0 = the tunnel's address (with auth = pubkey, the
	 * certificate's subject); else an IKE ID type (2 FQDN, 3 RFC822 e-mail,
	 * 9 DER_ASN1_DN, 11 KEY_ID; 1/5 an explicit IPv4/IPv6 address) */
	/* local_id/remote_id: the ID payload's data (text without a NUL, key id
	 * bytes, or an address in network order) */
	uint8_t local_id_type, remote_id_type;
	uint8_t local_id_len, remote_id_len;
	uint8_t local_id[CFG_IKE_ID_MAX], remote_id[CFG_IKE_ID_MAX];
	struct cfg_prop props[CFG_IKE_PROPS_MAX];	/* ike-proposals, in order of preference */
	unsigned n_props;
	struct cfg_prop esp[CFG_IKE_PROPS_MAX];	/* esp-proposals; none: the cipher's */
	unsigned n_esp;
	uint8_t start;		/* start = yes (default): initiate at start */
	uint32_t dpd_seconds;	/* dpd = N, 0 = off */
	uint32_t ike_lifetime;	/* ike-lifetime = N seconds: the IKE SA is rekeyed */
	uint8_t no_frag;	/* fragmentation = no: IKE fragmentation (RFC 7383) off */
	uint8_t no_initial_contact;	/* initial-contact = no: neither sent nor heeded */
	uint16_t frag_size;	/* fragment-size: IP datagram bytes of an IKE fragment */
	/* ike-sa = Y: this tunnel's CHILD_SA rides tunnel Y's IKE SA; everything
	 * of the IKE SA (addresses, auth, ids, ike-proposals, dpd, encap, ...)
	 * is copied from Y once the file is read (cfg_check_ike_sa) */
	char parent[DPVPN_NAME_LEN];
	int parent_line;
};

#define CFG_IKE_CHILDREN_MAX	16	/* CHILD_SAs per IKE SA: Y and its ike-sa tunnels */

/*
 * remote = %any (config_ra.c): a remote-access responder; each client gets
 * an address from pools (the one of local-ts's family is also the tunnel's
 * remote_ts) and the dns servers, through the CP payload (RFC 7296 3.15).
 */
#define CFG_RA_DNS_MAX		4

struct cfg_ra {
	uint8_t any;		/* remote = %any */
	uint8_t n_pools, n_dns;
	int pool_line, dns_line;
	uint8_t want_vip;	/* virtual-ip = request: a client (initiator) asks for one */
	int vip_line;
	struct cfg_prefix pools[2];	/* one IPv4, one IPv6 at most */
	struct cfg_addr dns[CFG_RA_DNS_MAX];
};

#define CFG_TS_MAX	8	/* prefixes in local-ts, in remote-ts (DPVPN_SEL_MAX) */

struct cfg_tunnel {
	char name[DPVPN_NAME_LEN];
	int line;
	int local_line, remote_line, lts_line, rts_line;
	struct cfg_addr local, remote;	/* outer: one family */
	struct cfg_prefix local_ts, remote_ts;	/* inner: one family, either one */
	/* local-ts = P1, P2, ...: the prefixes after the first (CFG_TS_MAX in
	 * all per side, one family, none overlapping another of its side);
	 * traffic between any local and any remote prefix is the tunnel's */
	struct cfg_prefix more_lts[CFG_TS_MAX - 1], more_rts[CFG_TS_MAX - 1];
	uint8_t n_more_lts, n_more_rts;
	uint8_t alg;		/* enum dpvpn_alg */
	uint8_t df;		/* enum dpvpn_df, default copy */
	uint8_t udp;		/* encap = udp (RFC 3948) */
	uint8_t esn;		/* esn = yes: 64-bit sequence numbers */
	uint64_t life_bytes[2], life_packets[2];	/* [0] soft, [1] hard; 0 none */
	uint32_t life_seconds[2];
	int port_line;		/* line of local-port/remote-port, 0 if none */
	uint16_t udp_local, udp_remote;	/* default 4500 */
	uint32_t replay_window;
	uint64_t out_seq_start;	/* out-seq-start: first packet gets this + 1 */
	uint16_t mtu;		/* 0: derived by the dataplane */
	uint16_t mss;		/* 0: derived from the MTU; DPVPN_MSS_OFF: off */
	uint8_t frag_outer;	/* fragment = outer */
	uint8_t udp_spread_log2;	/* local-ports = 2^this */
	int frag_line;
	int seq_line;
	struct cfg_sa_key out, in;	/* keying = ike: unused (zero) */
	struct cfg_ike ike;
	struct cfg_ra ra;
	uint8_t route;		/* mode = route: a route-based tunnel (selectors 0/0, ::/0) */
	uint8_t rpf;		/* rpf = off|loose|strict (enum dpvpn_rpf), default loose */
	int mode_line, rpf_line;
	/* host-interface = (mode = route): the tunnel's Linux twin (net_tun);
	 * inside-address = its addresses, at most one per family; family 0: none */
	char host_iface[16];
	struct cfg_prefix inside4, inside6;
	int host_line, inside_line;
	/* host-access = yes (policy tunnels): what it decrypts for one of the
	 * gateway's addresses goes to that port's twin (DPVPN_SA_F_HOST) */
	uint8_t host_access;
	int host_access_line;
	uint8_t fp[32];		/* keyed digest of all four keys (reload compares it) */
};

/*
 * [ha] (config_ha.c): this gateway as one of a pair, active and standby (or
 * each active for one group of addresses), with keepalived's VRRP moving the
 * virtual addresses and dpvpnd syncing its IKE and CHILD SAs to the other
 * node over a TLS 1.3 channel keyed by sync-key.  on = 0: no [ha] section
 * (everything else zero).
 */
#define CFG_HA_VIP_MAX		16	/* virtual-address = lines */
#define CFG_HA_GROUP_MAX	2	/* groups: one a node when both are active */
#define CFG_HA_PORT		4510	/* the sync channel's default TCP port */
#define CFG_HA_KEY_MIN		32	/* sync-key bytes (64..128 hex digits) */
#define CFG_HA_KEY_MAX		64
#define CFG_HA_PRIORITY		100	/* VRRP priority, as keepalived's default */
#define CFG_HA_DEAD_MS		1000
#define CFG_HA_DEAD_MS_MIN	200
#define CFG_HA_DEAD_MS_MAX	60000
#define CFG_HA_HEARTBEAT_MS	100
#define CFG_HA_HEARTBEAT_MS_MIN	20	/* and at most dead-ms / 3 */
#define CFG_HA_GROUP_DEFAULT	"dpvpn"	/* keepalived's vrrp_instance */

/* takeover-rekey = : whether a node that takes over rekeys every CHILD_SA. */
enum cfg_ha_rekey {
	CFG_HA_REKEY_AUTO,	/* only when the sync channel was down at takeover */
	CFG_HA_REKEY_ALWAYS,
	CFG_HA_REKEY_NEVER,
};

/* virtual-address = PORT ADDR/LEN [group NAME] */
struct cfg_ha_vip {
	char port[DPVPN_NAME_LEN];	/* a [port] name (checked at the end) */
	struct cfg_prefix addr;		/* the address, with the port's prefix length */
	char group[DPVPN_NAME_LEN];	/* the vrrp_instance that moves it */
	int line;
};

struct cfg_ha {
	int on, line;			/* line: of the [ha] header */
	char node[DPVPN_NAME_LEN];	/* default: the host name, cut to 31 bytes */
	/* the sync addresses as given ("ADDR[:PORT]", "[ADDR6]:PORT") and parsed
	 * (port CFG_HA_PORT when none); one family, local != peer */
	char local[80], peer[80];
	struct sockaddr_storage local_sa, peer_sa;
	uint8_t key[CFG_HA_KEY_MAX];	/* secret: sync-key's bytes */
	size_t key_len;			/* CFG_HA_KEY_MIN..CFG_HA_KEY_MAX */
	uint8_t priority;		/* 1..254 */
	uint8_t takeover_rekey;		/* enum cfg_ha_rekey */
	unsigned dead_ms, heartbeat_ms;
	struct cfg_ha_vip vips[CFG_HA_VIP_MAX];
	size_t n_vips;
};

struct cfg {
	char path[4096];
	char dp_socket[CFG_PATH_MAX];
	char ctl_socket[CFG_PATH_MAX];
	char state[4096];	/* sequence reservations; default: the config path + ".state" */
	uint64_t seq_block;	/* numbers reserved at a time */
	char metrics[64];	/* Prometheus endpoint "ADDR:PORT"; empty: none */
	char group[64];		/* empty: socket mode 0600 */
	gid_t gid;
	struct cfg_port *ports;
	size_t n_ports;
	struct cfg_neigh *neighs;
	size_t n_neighs;
	struct cfg_route *routes;
	size_t n_routes;
	struct cfg_tunnel **tunnels;	/* one allocation each: never moved */
	size_t n_tunnels;
	struct cfg_ha ha;		/* [ha]; ha.on 0: none */
	char **errors;		/* "FILE:LINE: message", sorted by line */
	size_t n_errors;
};

/* The tunnel's i-th local (or remote) prefix, i < cfg_tunnel_n_ts(). */
static inline const struct cfg_prefix *
cfg_tunnel_ts(const struct cfg_tunnel *t, bool local, unsigned i)
{
	if (i == 0)
		return local ? &t->local_ts : &t->remote_ts;
	return local ? &t->more_lts[i - 1] : &t->more_rts[i - 1];
}

static inline unsigned
cfg_tunnel_n_ts(const struct cfg_tunnel *t, bool local)
{
	return 1u + (local ? t->n_more_lts : t->n_more_rts);
}

/* Parse PATH into *cfg (zeroed first).  Returns 0, or -1 with cfg->errors set
 * (or errno-style failure to open, also reported as an error string). */
int cfg_load(struct cfg *cfg, const char *path);
void cfg_print_errors(const struct cfg *cfg, FILE *out);
/* Is addr an outside port's address, in its extra-addresses, or one of
 * [ha]'s virtual addresses on it?  *port_id (if not NULL): that port's id. */
bool cfg_is_outside_addr(const struct cfg *c, const struct cfg_addr *addr, uint16_t *port_id);
/* Cipher key length of an alg (0: NULL or unknown). */
size_t cfg_alg_key_len(uint8_t alg);
const char *cfg_alg_name(uint8_t alg);
/* Wipe every key in cfg (after the install). */
void cfg_wipe_keys(struct cfg *cfg);
void cfg_free(struct cfg *cfg);

/*
 * auth = pubkey: the tunnel's certificate and key (cred) and its trust
 * anchors and CRLs (trust) read from ike->pki's files, with the private
 * key's file checked as a key file; digest: of the files as read.  0, or -1
 * with the reason in err and the config line of the file at fault in *line.
 * The caller frees with ike_pki_cred_free and ike_pki_trust_free.
 */
struct ike_pki_cred;
struct ike_pki_trust;
int cfg_ike_pki_load(const struct cfg_ike *ike, struct ike_pki_cred **cred,
		     struct ike_pki_trust **trust, uint8_t digest[32], int *line, char *err,
		     size_t elen);

#endif /* DPVPN_CONTROL_CONFIG_H */
