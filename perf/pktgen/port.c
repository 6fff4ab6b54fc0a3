/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * port.c - the mbuf pool and port set-up: one RX and one TX queue per port,
 * promiscuous (the sink counts frames whatever their destination MAC), and
 * an MTU raised only when --size asks for frames above 1514 bytes.
 */
#include <stdio.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "pktgen.h"

#define NB_MBUF		16383		/* 2^n - 1: the mempool's sweet spot */
#define MBUF_CACHE	256
#define RX_DESC		1024
#define TX_DESC		1024
#define STD_MTU		1500

_Static_assert(2 * (RX_DESC + TX_DESC) + 4 * MBUF_CACHE + PG_BURST < NB_MBUF,
	       "a pool outlasts full rings on two ports and the lcores' caches");

static uint16_t
max_size(const struct pg_config *cfg)
{
	uint16_t m = 0;

	for (unsigned int i = 0; i < cfg->n_sizes; i++)
		m = RTE_MAX(m, cfg->sizes[i]);
	return m;
}

/* Zero a TX buffer's data room, so that bytes after the payload are zeros. */
static void
zero_data(struct rte_mempool *mp, void *opaque, void *obj, unsigned int idx)
{
	struct rte_mbuf *m = obj;

	(void)mp, (void)opaque, (void)idx;
	memset(m->buf_addr, 0, m->buf_len);
}

/*
 * TX and RX get a pool each: a TX buffer then only ever holds what tx.c
 * wrote (headers, payload, zeros), never the bytes of a received frame.
 */
struct rte_mempool *
port_pool(const struct pg_config *cfg, bool tx)
{
	uint32_t room = RTE_MAX((uint32_t)RTE_MBUF_DEFAULT_BUF_SIZE,
				(uint32_t)RTE_PKTMBUF_HEADROOM + max_size(cfg));
	const char *name = tx ? "pg_tx_pool" : "pg_rx_pool";
	struct rte_mempool *mp;

	mp = rte_pktmbuf_pool_create(name, NB_MBUF, MBUF_CACHE, 0, (uint16_t)room,
				     (int)rte_socket_id());
	if (mp == NULL)
		fprintf(stderr, "%s: %s\n", name, rte_strerror(rte_errno));
	else if (tx)
		rte_mempool_obj_iter(mp, zero_data, NULL);
	return mp;
}

static int
configure(uint16_t port, const struct pg_config *cfg)
{
	struct rte_eth_conf conf = { 0 };
	uint16_t frame = max_size(cfg);

	/* Only ask for more than the default: virtual ports reject some MTUs. */
	if (frame - RTE_ETHER_HDR_LEN > STD_MTU)
		conf.rxmode.mtu = frame - RTE_ETHER_HDR_LEN;
	return rte_eth_dev_configure(port, 1, 1, &conf);
}

static int
queues(uint16_t port, struct rte_mempool *pool)
{
	uint16_t rxd = RX_DESC, txd = TX_DESC;
	int sock = rte_eth_dev_socket_id(port);
	int rc;

	rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd);
	if (rc == 0)
		rc = rte_eth_rx_queue_setup(port, 0, rxd, sock, NULL, pool);
	if (rc == 0)
		rc = rte_eth_tx_queue_setup(port, 0, txd, sock, NULL);
	return rc;
}

int
port_setup(uint16_t port, struct rte_mempool *pool, const struct pg_config *cfg)
{
	const char *step;
	int rc;

	if (!rte_eth_dev_is_valid_port(port)) {
		fprintf(stderr, "port %u: no such port (%u available; give --vdev or a "
			"PCI device to EAL)\n", port, rte_eth_dev_count_avail());
		return -1;
	}
	step = "configure";
	rc = configure(port, cfg);
	if (rc == 0) {
		step = "queue set-up";
		rc = queues(port, pool);
	}
	if (rc == 0) {
		step = "start";
		rc = rte_eth_dev_start(port);
	}
	if (rc != 0) {
		fprintf(stderr, "port %u: %s failed: %s\n", port, step, rte_strerror(-rc));
		return -1;
	}
	/* Not every PMD has the notion: counting is still right without it. */
	(void)rte_eth_promiscuous_enable(port);
	return 0;
}

/*
 * Links that come up after the start (memif: once the peer has connected)
 * would make the first packets back-pressure or, further along, loss: wait.
 */
int
port_wait_link(uint16_t port, unsigned int ms)
{
	struct rte_eth_link link;

	for (unsigned int waited = 0;; waited++) {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
			return 0;
		if (waited >= ms) {
			fprintf(stderr, "port %u: link still down after %u ms\n", port, ms);
			return -1;
		}
		rte_delay_us_sleep(1000);
	}
}

void
port_close(uint16_t port)
{
	if (port == PG_NO_PORT || !rte_eth_dev_is_valid_port(port))
		return;
	(void)rte_eth_dev_stop(port);
	(void)rte_eth_dev_close(port);
}
