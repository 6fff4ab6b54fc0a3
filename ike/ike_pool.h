/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ike_pool.h - virtual IP address pools for remote-access clients (the
 * configuration payload, RFC 7296 section 3.15): one IPv4 or IPv6 prefix,
 * addresses leased to identities and given back when their IKE SA ends.
 *
 * What strongSwan's in-memory pools (libcharon's mem_pool.c) do, and so what
 * a client of both sees:
 *   - a prefix shorter than /31 (/127) leaves out its first and last address
 *     (network and broadcast); /31 and /32 (/127, /128) use all of theirs;
 *   - at most IKE_POOL_MAX addresses, the first ones (an IPv6 /64 is a pool
 *     of 65536 addresses from prefix::1);
 *   - addresses never leased go first, in order; a released lease stays
 *     with its identity ("offline"), which gets the same address back on
 *     its next lease; when no address was never leased, the oldest offline
 *     lease is taken from its identity;
 *   - an identity whose address is still leased (a second device with the
 *     same certificate, or a reauthentication before the old SA ended) gets
 *     another one.
 * Lease and release are O(1) but for the identity's hash chain.  No locks:
 * one owner (dpvpnd's IKE thread).
 */
#ifndef DPVPN_IKE_POOL_H
#define DPVPN_IKE_POOL_H

#include <stddef.h>
#include <stdint.h>

#define IKE_POOL_MAX		65536u	/* addresses in a pool, at most */
#define IKE_POOL_ID_MAX		1024u	/* identity bytes a lease remembers */

struct ike_pool;

struct ike_pool_stats {
	uint32_t size;		/* addresses the pool can lease */
	uint32_t leased;	/* online now */
	uint32_t offline;	/* released, still remembered for their identity */
	uint64_t exhausted;	/* leases refused: every address online */
};

/*
 * A pool for family (AF_INET or AF_INET6) and prefix/plen (network order,
 * 4 or 16 bytes; host bits must be zero): NULL with a message in err when
 * the prefix is bad, or on ENOMEM.
 */
struct ike_pool *ike_pool_new(int family, const uint8_t *prefix, unsigned plen, char *err,
			      size_t elen);
void ike_pool_free(struct ike_pool *p);

/*
 * Lease an address for the identity id (its bytes, as compared: the ID
 * payload's type and data, say) into addr (4 or 16 bytes, network order).
 * 0, -ENOSPC when every address is online (counted in exhausted), -EINVAL
 * for an identity longer than IKE_POOL_ID_MAX, -ENOMEM.
 */
int ike_pool_lease(struct ike_pool *p, const void *id, size_t id_len, uint8_t *addr);

/*
 * Lease addr itself to id (an IKE SA taken up again after a restart keeps its
 * client's address): 0, -EBUSY if it is online, -EINVAL if it is not one of
 * the pool's (or id is too long), -ENOMEM.  An offline lease of it is taken.
 */
int ike_pool_lease_at(struct ike_pool *p, const void *id, size_t id_len, const uint8_t *addr);

/* Give back addr, leased before: 0, or -ENOENT if it is not online in p. */
int ike_pool_release(struct ike_pool *p, const uint8_t *addr);

void ike_pool_stats(const struct ike_pool *p, struct ike_pool_stats *st);
int ike_pool_family(const struct ike_pool *p);
/* Does addr lie in the pool's prefix (leasable or not)? */
int ike_pool_contains(const struct ike_pool *p, const uint8_t *addr);

#endif /* DPVPN_IKE_POOL_H */
