/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * report.c - the once-a-second progress line (stderr) and the final result,
 * as one JSON object or a short summary (stdout).  Bytes and Gbit/s count L2
 * frames as sent: Ethernet header to the end of the payload, no FCS,
 * preamble or inter-frame gap.  Rates are over the TX period (from the
 * first TX burst to TX's stop), or the listening period when RX-only.
 */
#include <inttypes.h>
#include <stdio.h>

#include <rte_cycles.h>

#include "pktgen.h"

struct totals {
	bool has_tx, has_rx;
	double duration_s;
	uint64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
};

static double
span_s(uint64_t start, uint64_t end)
{
	if (start == 0 || end <= start)
		return 0;
	return (double)(end - start) / (double)rte_get_tsc_hz();
}

static double
per_s(double v, double s)
{
	return s > 0 ? v / s : 0;
}

static int64_t
lost(const struct pg_tx_stats *ts, const struct pg_rx_stats *rs)
{
	return (int64_t)(ts->packets - (rs->packets - rs->duplicates));
}

/* Progress: rates since the last call, loss so far (including in flight). */
void
report_progress(const struct pg_tx *tx, const struct pg_rx *rx, double t_s)
{
	static uint64_t last_tx_p, last_tx_b, last_rx_p, last_rx_b;
	static double last_t;
	double dt = t_s - last_t;
	uint64_t txp = 0, txb = 0, rxp = 0, rxb = 0, dup = 0;

	if (tx) {
		txp = pg_stat_get(&tx_stats(tx)->packets);
		txb = pg_stat_get(&tx_stats(tx)->bytes);
	}
	if (rx) {
		rxp = pg_stat_get(&rx_stats(rx)->packets);
		rxb = pg_stat_get(&rx_stats(rx)->bytes);
		dup = pg_stat_get(&rx_stats(rx)->duplicates);
	}
	fprintf(stderr, "[%6.1fs] tx %8.3f Mpps %7.3f Gbit/s | rx %8.3f Mpps %7.3f Gbit/s",
		t_s, per_s((double)(txp - last_tx_p), dt) / 1e6,
		per_s(8.0 * (double)(txb - last_tx_b), dt) / 1e9,
		per_s((double)(rxp - last_rx_p), dt) / 1e6,
		per_s(8.0 * (double)(rxb - last_rx_b), dt) / 1e9);
	if (tx && rx)
		fprintf(stderr, " | lost %" PRId64, (int64_t)(txp - (rxp - dup)));
	fputc('\n', stderr);
	last_tx_p = txp, last_tx_b = txb, last_rx_p = rxp, last_rx_b = rxb, last_t = t_s;
}

static void
totals_get(struct totals *t, const struct pg_tx *tx, const struct pg_rx *rx)
{
	*t = (struct totals){ .has_tx = tx != NULL, .has_rx = rx != NULL };
	if (tx) {
		t->tx_pkts = tx_stats(tx)->packets;
		t->tx_bytes = tx_stats(tx)->bytes;
		t->duration_s = span_s(tx_stats(tx)->start_tsc, tx_stats(tx)->end_tsc);
	}
	if (rx) {
		t->rx_pkts = rx_stats(rx)->packets;
		t->rx_bytes = rx_stats(rx)->bytes;
		if (!tx)
			t->duration_s = span_s(rx_stats(rx)->start_tsc, rx_stats(rx)->end_tsc);
	}
}

static void
json_dir(const char *name, uint16_t port, uint64_t pkts, uint64_t bytes, double s)
{
	printf("\"%s\":{\"port\":%u,\"packets\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"pps\":%.1f,\"gbps\":%.6f", name, port, pkts, bytes, per_s((double)pkts, s),
	       per_s(8.0 * (double)bytes, s) / 1e9);
}

static void
json_latency(const struct hist *h, uint64_t skipped)
{
	printf("\"latency_ns\":{");
	if (h->samples == 0)
		printf("\"p50\":null,\"p99\":null,\"p999\":null,\"max\":null,\"min\":null,"
		       "\"mean\":null");
	else
		printf("\"p50\":%" PRIu64 ",\"p99\":%" PRIu64 ",\"p999\":%" PRIu64
		       ",\"max\":%" PRIu64 ",\"min\":%" PRIu64 ",\"mean\":%.0f",
		       hist_quantile(h, 0.50), hist_quantile(h, 0.99), hist_quantile(h, 0.999),
		       h->max, h->min, h->sum / (double)h->samples);
	printf(",\"samples\":%" PRIu64 ",\"skipped\":%" PRIu64 "}", h->samples, skipped);
}

/* --hist: the non-empty buckets as [low ns, high ns (exclusive), count], in order. */
static void
json_hist(const struct hist *h)
{
	uint64_t lo, hi;
	bool first = true;

	printf(",\"latency_hist\":[");
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		if (h->count[i] == 0)
			continue;
		hist_bucket_range(i, &lo, &hi);
		printf("%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", lo, hi,
		       h->count[i]);
		first = false;
	}
	printf("]");
}

static void
json_rx(const struct pg_config *cfg, const struct totals *t, const struct pg_tx *tx,
	const struct pg_rx *rx)
{
	const struct pg_rx_stats *rs = rx_stats(rx);
	int64_t l;

	json_dir("rx", cfg->rx_port, t->rx_pkts, t->rx_bytes, t->duration_s);
	printf(",\"foreign\":%" PRIu64 ",\"foreign_bytes\":%" PRIu64 "},",
	       rs->foreign, rs->foreign_bytes);
	if (tx) {
		l = lost(tx_stats(tx), rs);
		printf("\"loss\":{\"packets\":%" PRId64 ",\"ratio\":%.9f},", l,
		       t->tx_pkts ? (double)l / (double)t->tx_pkts : 0.0);
	} else {
		printf("\"loss\":null,");
	}
	printf("\"reordered\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",",
	       rs->reordered, rs->duplicates);
	json_latency(rx_latency(rx), rs->no_latency);
	if (cfg->hist)
		json_hist(rx_latency(rx));
}

static void
json_config(const struct pg_config *cfg)
{
	printf("\"sizes\":[");
	for (unsigned int i = 0; i < cfg->n_sizes; i++)
		printf("%s%u", i ? "," : "", cfg->sizes[i]);
	printf("],\"size\":\"%s\",\"flows\":%u,\"vary\":\"%s\",\"rate\":\"%s\","
	       "\"seq\":\"per-flow\",\"bytes_counted\":\"L2 without FCS/preamble/IFG\"",
	       cfg->size_arg, cfg->flows, cfg->vary == PG_VARY_SPORT ? "sport" : "src",
	       cfg->rate_arg);
}

static void
report_json(const struct pg_config *cfg, const struct totals *t, const struct pg_tx *tx,
	    const struct pg_rx *rx)
{
	printf("{\"tool\":\"dpvpn-pktgen\",\"duration_s\":%.6f,", t->duration_s);
	if (tx) {
		json_dir("tx", cfg->tx_port, t->tx_pkts, t->tx_bytes, t->duration_s);
		printf(",\"behind\":%" PRIu64 "},", tx_stats(tx)->behind);
	} else {
		printf("\"tx\":null,");
	}
	if (rx)
		json_rx(cfg, t, tx, rx);
	else
		printf("\"rx\":null,\"loss\":null,\"reordered\":null,\"duplicates\":null,"
		       "\"latency_ns\":null");
	printf(",");
	json_config(cfg);
	printf("}\n");
}

static void
human_latency(const struct hist *h)
{
	if (h->samples == 0) {
		printf("  latency   no samples\n");
		return;
	}
	printf("  latency   p50 %" PRIu64 " ns  p99 %" PRIu64 " ns  p99.9 %" PRIu64
	       " ns  max %" PRIu64 " ns  (%" PRIu64 " samples)\n",
	       hist_quantile(h, 0.50), hist_quantile(h, 0.99), hist_quantile(h, 0.999),
	       h->max, h->samples);
}

static void
report_human(const struct pg_config *cfg, const struct totals *t, const struct pg_tx *tx,
	     const struct pg_rx *rx)
{
	double s = t->duration_s;
	int64_t l;

	printf("dpvpn-pktgen: %.3f s, size %s, %u flow(s), rate %s (L2 bytes, no FCS)\n",
	       s, cfg->size_arg, cfg->flows, cfg->rate_arg);
	if (tx)
		printf("  tx        %" PRIu64 " packets  %.3f Mpps  %.3f Gbit/s  (%" PRIu64
		       " times %.0f ms behind --rate)\n", t->tx_pkts,
		       per_s((double)t->tx_pkts, s) / 1e6,
		       per_s(8.0 * (double)t->tx_bytes, s) / 1e9, tx_stats(tx)->behind,
		       1e3 * PG_MAX_DEBT_S);
	if (!rx)
		return;
	printf("  rx        %" PRIu64 " packets  %.3f Mpps  %.3f Gbit/s  (+%" PRIu64
	       " foreign)\n", t->rx_pkts, per_s((double)t->rx_pkts, s) / 1e6,
	       per_s(8.0 * (double)t->rx_bytes, s) / 1e9, rx_stats(rx)->foreign);
	if (tx) {
		l = lost(tx_stats(tx), rx_stats(rx));
		printf("  loss      %" PRId64 " (%.4f %%)\n", l,
		       t->tx_pkts ? 100.0 * (double)l / (double)t->tx_pkts : 0.0);
	}
	printf("  reordered %" PRIu64 "  duplicates %" PRIu64 "\n",
	       rx_stats(rx)->reordered, rx_stats(rx)->duplicates);
	human_latency(rx_latency(rx));
}

/* Called after every worker has returned: plain reads are safe. */
void
report_final(const struct pg_config *cfg, const struct pg_tx *tx, const struct pg_rx *rx)
{
	struct totals t;

	totals_get(&t, tx, rx);
	if (cfg->json)
		report_json(cfg, &t, tx, rx);
	else
		report_human(cfg, &t, tx, rx);
	fflush(stdout);
}
