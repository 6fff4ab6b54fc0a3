/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sa.h - the SA table.  The fast path reads struct sa; what only the control
 * side needs (name, selectors as configured) sits after the hot lines.
 * Inbound SAs are found by SPI in a lock-free hash; outbound SAs by the slot
 * index a policy holds.  The main lcore is the only writer; an SA is wiped and
 * freed only after every worker has passed a quiescent point (rte_rcu_qsbr).
 */
#ifndef SA_H
#define SA_H

#include <stddef.h>
#include <stdint.h>

#include <netinet/in.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_prefetch.h>

#include "crypto.h"
#include "dp.h"
#include "replay.h"

#define SA_MAX_DEFAULT	4096	/* slots, both directions; --max-sa changes it */
#define ESP_HDR_LEN	8	/* SPI + sequence number */
#define ESP_TRAILER_LEN	2	/* pad length + next header */
#define ESP_OUTER_TTL	64	/* TTL of the outer header */
#define NATT_HDR_LEN	8	/* UDP header before ESP (RFC 3948) */

/* Is this UDP port one an inbound SA listens on (main lcore sets, workers read)? */
bool sa_natt_port(uint16_t port);
/* Take ESP in UDP and IKE behind the marker on this port from now on, SA or
 * not yet (IKE_TX from it: an initiator that talks from its own port). */
void sa_natt_listen(uint16_t port);

struct sa_stats {
	uint64_t packets, bytes;
	uint64_t drop_replay, drop_icv, drop_policy, drop_other;
	uint64_t drop_seq;	/* out: seq-exhausted */
	uint64_t last_tsc;	/* the burst of the last packet counted (0: none) */
} __rte_cache_aligned;

_Static_assert(sizeof(struct sa_stats) == RTE_CACHE_LINE_SIZE, "one line per worker");

/*
 * Fast path: the SA carried a packet in the burst the worker started at
 * now_tsc.  One store per SA and burst at most: the line is written for the
 * packet counter anyway, and the compare finds it equal after the first.
 */
static inline void
sa_stamp(struct sa_stats *s, uint64_t now_tsc)
{
	if (s->last_tsc != now_tsc)
		s->last_tsc = now_tsc;
}

struct sa {
	/* first line: what every packet reads */
	uint32_t spi;		/* network order */
	uint8_t dir, alg;
	uint8_t outer6;		/* the outer header is IPv6 (local6/remote6) */
	uint8_t inner6;		/* the selectors, so inner packets, are IPv6 */
	uint32_t salt;		/* RFC 4106 salt, as bytes */
	uint32_t local, remote;	/* outer IPv4 addresses, network order */
	uint32_t outer_sum;	/* out: checksum of the outer header's fixed words */
	struct sa_stats *stats;		/* one per worker */
	rte_be16_t udp_local, udp_remote;
	uint16_t udp_spread_mask;	/* out: source port = udp_local + (flow & this) */
	uint8_t df;		/* out: enum dpvpn_df */
	uint8_t udp;		/* RFC 3948 UDP encapsulation */
	uint8_t esn;		/* 64-bit sequence numbers, high half in the AAD */
	uint8_t limited;	/* has a packet or byte lifetime: account per packet */
	uint8_t iv_len, icv_len, block;	/* ESP layout of the transform (dpvpn_alg.h) */
	uint8_t outer_len;	/* out: outer IPv4 or IPv6 header */
	uint8_t hdr_len;	/* out: all the bytes put before the inner packet */
	uint8_t aead;		/* GCM, ChaCha20-Poly1305: IV is the sequence number */
	uint8_t frag_outer;	/* out: fragment the outer packet, not the inner one */
	volatile uint8_t life_state;	/* enum dpvpn_life; HARD stops the SA */
	uint16_t mtu;		/* out: largest inner packet sent in one ESP packet */
	uint16_t port_mtu;	/* out: MTU of the outside port it leaves by */
	uint16_t mss;		/* TCP MSS clamp, 0 = off */
	uint8_t route;		/* DPVPN_SA_F_ROUTE: a route-based tunnel's (tunif.h);
				 * read per inbound packet: on the first line */
	uint8_t tunif;		/* route: its tunnel interface */
	/* second line: inbound selectors, IPv6 addresses; the control side's */
	uint32_t slot;		/* index in the slot table; policies hold it */
	uint32_t pos;		/* index in the dense list of installed SAs */
	uint32_t local_net, local_mask;		/* inner IPv4 selectors */
	uint32_t remote_net, remote_mask;
	uint8_t local6[16], remote6[16];	/* outer IPv6 addresses */
	uint8_t lts6[16], rts6[16];		/* inner IPv6 selectors, host bits zero */
	uint8_t lts6_len, rts6_len;
	uint8_t more_sel;	/* cfg.more_lts/more_rts: a packet outside the first
				 * pair is checked against the lists (sa_sel_more) */
	/* written per packet */
	uint64_t seq __rte_cache_aligned;	/* out: last used; in: unused */
	uint64_t used_packets, used_bytes;	/* only when limited (atomic) */
	uint64_t seq_limit;	/* out: last number that may be used, 0 = none (atomic) */
	struct replay_window replay __rte_cache_aligned;	/* inbound */
	struct crypto_key key;
	/* control side only */
	uint64_t installed_tsc;
	uint64_t serial;		/* n-th SA_ADD (dpvpn_sa_info.serial) */
	uint8_t life_reported;		/* last state an event was raised for */
	uint64_t seq_span;		/* numbers the last grant gave */
	uint64_t seq_asked_tsc;		/* last SEQ_LOW event */
	struct dpvpn_sa_cfg cfg;	/* key and salt zeroed */
};

_Static_assert(offsetof(struct sa, tunif) + sizeof(uint8_t) <= RTE_CACHE_LINE_SIZE,
	       "what every packet of an SA reads fits its first cache line");

/*
 * An inner packet that is not within the SA's first selector pair: is its
 * source in any remote prefix and its destination in any local one (the
 * lists of SA_ADD)?  Read only for SAs with lists, only on such packets.
 */
bool sa_sel_more4(const struct sa *sa, uint32_t src, uint32_t dst);
bool sa_sel_more6(const struct sa *sa, const uint8_t *src, const uint8_t *dst);

/*
 * With many tunnels a burst's SAs are seldom in the cache: their lines are
 * fetched for the whole burst at once, before the first is used (stage 1:
 * the SA's first line, its counter line, the inbound selectors; stage 2,
 * once the first line is in: this worker's counters, the key's round keys).
 */
static inline void
sa_prefetch(const struct sa *sa)
{
	rte_prefetch0(sa);
	rte_prefetch0(&sa->seq);
}

/* The lines of an SA's key that AES-GCM reads first and last: its round
 * keys and the hash-key powers a short packet needs (crypto.h). */
static inline void
sa_prefetch_key(const struct sa *sa)
{
	const uint8_t *k = (const uint8_t *)&sa->key;

	rte_prefetch0(k);
	rte_prefetch0(k + RTE_CACHE_LINE_SIZE);
	rte_prefetch0(k + 2 * RTE_CACHE_LINE_SIZE);
	rte_prefetch0(k + crypto_hkey_off[0]);
	rte_prefetch0(k + crypto_hkey_off[1]);
}

/* An inbound SA's: its first line and selectors, its window, its round keys. */
static inline void
sa_prefetch_in(const struct sa *sa)
{
	rte_prefetch0(sa);
	rte_prefetch0((const uint8_t *)sa + RTE_CACHE_LINE_SIZE);
	rte_prefetch0(&sa->replay);
	sa_prefetch_key(sa);
}

static inline void
sa_prefetch2(const struct sa *sa, unsigned int worker)
{
	rte_prefetch0(&sa->stats[worker]);
	sa_prefetch_key(sa);
}

/*
 * One's-complement sum of the outer IPv4 header words that never change for
 * an SA (version/IHL, TTL/protocol, addresses): per packet only TOS, length
 * and ID are added, and the header is never read back to checksum it.
 */
static inline uint32_t
sa_outer_sum(uint32_t local, uint32_t remote, uint8_t proto)
{
	uint32_t s = rte_be_to_cpu_32(local), d = rte_be_to_cpu_32(remote);

	return 0x4500 + (ESP_OUTER_TTL << 8 | proto) +
	       (s >> 16) + (s & 0xffff) + (d >> 16) + (d & 0xffff);
}

int sa_init(unsigned int n_workers, unsigned int max_sa);
/* Slots in the table (sa_init's max_sa): an SA's slot is below it. */
unsigned int sa_max_slots(void);

/*
 * Fast path, for an SA with packet or byte lifetimes: account one packet of
 * len inner bytes; false (and the SA stopped) once a hard limit is passed.
 */
static inline bool
sa_account(struct sa *sa, uint32_t len)
{
	uint64_t p = __atomic_add_fetch(&sa->used_packets, 1, __ATOMIC_RELAXED);
	uint64_t b = __atomic_add_fetch(&sa->used_bytes, len, __ATOMIC_RELAXED);

	if ((sa->cfg.life_packets[1] && p > sa->cfg.life_packets[1]) ||
	    (sa->cfg.life_bytes[1] && b > sa->cfg.life_bytes[1])) {
		sa->life_state = DPVPN_LIFE_HARD;
		return false;
	}
	return true;
}

/* Main lcore, now and then: soft and time limits; raises events. */
void sa_lifetimes_tick(uint64_t now_tsc);
/* Events raised since the last call, at most max; the rest stay queued. */
unsigned int sa_events_take(struct dpvpn_event *out, unsigned int max);
/* Install; errbuf names the bad field.  Wipes nothing: the caller does. */
int sa_add(const struct dpvpn_sa_cfg *cfg, struct crypto_mgr *mgr, char *errbuf, size_t len);
/*
 * Remove; waits for the workers (RCU) before the slot is freed.  What refers
 * to an outbound SA's slot (its policies, a tunnel interface) lets go of it
 * first: the caller's (ctl_steps.c), since this table knows no other.
 */
int sa_del(uint32_t spi, uint8_t dir, char *errbuf, size_t len);
/* Fast path: inbound SA by SPI (network order), or NULL. */
struct sa *sa_lookup_in(uint32_t spi);
/* The same for n <= DP_BURST SPIs at once (rte_hash fetches its buckets together). */
void sa_lookup_in_bulk(const uint32_t *spis, uint32_t n, struct sa **sas);
/* Slot of an installed SA, -1 if none. */
int sa_find(uint32_t spi, uint8_t dir);
struct sa *sa_slot(uint32_t slot);
unsigned int sa_count(void);
/* Raise an outbound SA's sequence limit (SEQ_GRANT). */
int sa_seq_grant(uint32_t spi, uint64_t limit, char *errbuf, size_t len);
/* An inbound SA's window: every number up to high seen (REPLAY_FLOOR). */
int sa_replay_floor(uint32_t spi, uint64_t high, char *errbuf, size_t len);
/* Raise an outbound SA's used numbers to used and its limit to limit (SEQ_SET). */
int sa_seq_set(uint32_t spi, uint64_t used, uint64_t limit, char *errbuf, size_t len);
/* Dump: info for the idx-th installed SA; false past the end. */
bool sa_info(unsigned int idx, struct dpvpn_sa_info *info);
/* At exit, the workers stopped: every SA removed, its keys wiped. */
void sa_flush(void);

#endif /* SA_H */
