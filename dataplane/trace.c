/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ether.h>
#include <rte_ring.h>
#include <rte_pcapng.h>

#include "dp.h"
#include "trace.h"

#define TRACE_RING	1024
#define TRACE_POOL	2047
#define TRACE_SNAP	2048	/* bytes kept of each packet */
#define TRACE_MAX	100000

volatile uint8_t trace_point;
static struct rte_ring *ring;
static struct rte_mempool *pool;
static rte_pcapng_t *pcapng;
static int64_t remaining;		/* atomic: copies still to take */
static uint64_t wanted, captured, written, lost;	/* captured, lost: atomic */
static uint8_t last_point;		/* the running or last trace's point (main lcore) */

int
trace_init(void)
{
	ring = rte_ring_create("dpvpn_trace", TRACE_RING, (int)rte_socket_id(), RING_F_SC_DEQ);
	pool = rte_pktmbuf_pool_create("dpvpn_trace", TRACE_POOL, 0, 0,
				       rte_pcapng_mbuf_size(TRACE_SNAP), (int)rte_socket_id());
	return ring == NULL || pool == NULL ? -ENOMEM : 0;
}

int
trace_start(const struct dpvpn_trace_req *req, char *err, size_t len)
{
	int fd;

	if (req->point == DPVPN_TRACE_OFF) {
		trace_stop();
		return 0;
	}
	if (req->point >= DPVPN_TRACE_MAX || req->count == 0 || req->count > TRACE_MAX) {
		snprintf(err, len, "trace.point/count: point %u not 1..%u or count %u not 1..%u",
			 req->point, DPVPN_TRACE_MAX - 1, req->count, TRACE_MAX);
		return -EINVAL;
	}
	if (memchr(req->path, '\0', sizeof(req->path)) == NULL || req->path[0] != '/') {
		snprintf(err, len, "trace.path: not an absolute path");
		return -EINVAL;
	}
	if (trace_point != DPVPN_TRACE_OFF || pcapng != NULL) {
		snprintf(err, len, "trace: one is running already");
		return -EBUSY;
	}
	fd = open(req->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, len, "trace.path: %s: %s", req->path, strerror(errno));
		return -errno;
	}
	pcapng = rte_pcapng_fdopen(fd, NULL, NULL, "dpvpn-dataplane", NULL);
	if (pcapng == NULL) {
		close(fd);
		unlink(req->path);
		snprintf(err, len, "trace: pcapng: %s", rte_strerror(rte_errno));
		return -EIO;
	}
	wanted = req->count;
	written = 0;
	__atomic_store_n(&captured, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&lost, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&remaining, (int64_t)req->count, __ATOMIC_RELEASE);
	last_point = req->point;	/* main lcore only: status says it after the end */
	__atomic_store_n(&trace_point, req->point, __ATOMIC_RELEASE);
	return 0;
}

/* Workers: one copy per packet while the count lasts. */
void
trace_tap_slow(struct rte_mbuf *const *pkts, uint16_t n, uint16_t port, bool eth, bool out)
{
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *src = pkts[i], *tmp = NULL, *c;

		if (__atomic_sub_fetch(&remaining, 1, __ATOMIC_RELAXED) < 0)
			return;
		if (!eth) {	/* IP only: a made-up Ethernet header for the file */
			struct rte_ether_hdr *e;

			tmp = rte_pktmbuf_copy(src, pool, 0, TRACE_SNAP);
			e = tmp ? (struct rte_ether_hdr *)rte_pktmbuf_prepend(tmp, sizeof(*e)) : NULL;
			if (e == NULL) {
				rte_pktmbuf_free(tmp);
				__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
				continue;
			}
			memset(e, 0, sizeof(*e));
			e->ether_type = rte_cpu_to_be_16((rte_pktmbuf_mtod(src, uint8_t *)[0] >> 4) == 6 ?
							 RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4);
			src = tmp;
		}
		c = rte_pcapng_copy(port, 0, src, pool, TRACE_SNAP, rte_get_tsc_cycles(),
				    out ? RTE_PCAPNG_DIRECTION_OUT : RTE_PCAPNG_DIRECTION_IN);
		rte_pktmbuf_free(tmp);
		if (c == NULL || rte_ring_enqueue(ring, c) != 0) {
			rte_pktmbuf_free(c);
			__atomic_add_fetch(&lost, 1, __ATOMIC_RELAXED);
			continue;
		}
		__atomic_add_fetch(&captured, 1, __ATOMIC_RELAXED);
	}
}

void
trace_stop(void)
{
	__atomic_store_n(&trace_point, DPVPN_TRACE_OFF, __ATOMIC_RELEASE);
	__atomic_store_n(&remaining, 0, __ATOMIC_RELEASE);
	trace_poll();
	if (pcapng != NULL) {
		rte_pcapng_close(pcapng);	/* closes the file */
		pcapng = NULL;
	}
}

/* Main lcore: write what the workers copied; done once the count is. */
bool
trace_on(void)
{
	return pcapng != NULL;
}

void
trace_poll(void)
{
	struct rte_mbuf *pkts[64];
	unsigned int n;

	if (pcapng == NULL)
		return;
	while ((n = rte_ring_dequeue_burst(ring, (void **)pkts, RTE_DIM(pkts), NULL)) > 0) {
		ssize_t w = rte_pcapng_write_packets(pcapng, pkts, (uint16_t)n);

		rte_pktmbuf_free_bulk(pkts, n);
		if (w >= 0)
			written += n;
	}
	if (trace_point != DPVPN_TRACE_OFF && written + __atomic_load_n(&lost, __ATOMIC_RELAXED) >=
	    wanted) {
		__atomic_store_n(&trace_point, DPVPN_TRACE_OFF, __ATOMIC_RELEASE);
		rte_pcapng_close(pcapng);
		pcapng = NULL;
	}
}

void
trace_status(struct dpvpn_trace_status *st)
{
	memset(st, 0, sizeof(*st));
	st->active = pcapng != NULL;
	st->point = trace_point;
	st->last_point = last_point;
	st->wanted = wanted;
	st->captured = __atomic_load_n(&captured, __ATOMIC_RELAXED);
	st->written = written;
	st->lost = __atomic_load_n(&lost, __ATOMIC_RELAXED);
}
