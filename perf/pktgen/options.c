/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * options.c - the command line after EAL's "--".  Every error names the
 * option and the value; main() turns a failure into exit status 2.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "pktgen.h"

#define DEF_FLOWS	1
#define DEF_SRC_IP	"198.18.0.1"	/* RFC 2544 benchmark range */
#define DEF_DST_IP	"198.18.0.2"
#define DEF_SPORT	10000
#define DEF_DPORT	20000
#define DEF_SIZE	64
#define DEF_DURATION_S	10.0
#define DEF_DRAIN_MS	500
#define MAX_DURATION_S	86400.0
#define MAX_DRAIN_MS	60000

/*
 * The simple IMIX, 7:4:1 of 64, 576 and 1514 bytes (L2 without FCS), spread
 * so that the large frames do not bunch up.  Classic tables say 64/576/1518
 * with FCS; 1514 is the largest frame a 1500-byte MTU carries, and 64 is the
 * smallest frame our payload fits in.
 */
static const uint16_t imix[] = { 64, 576, 64, 576, 64, 1514, 64, 576, 64, 576, 64, 64 };

static const struct {
	const char *suffix;
	enum pg_rate_unit unit;
	double scale;
} rate_units[] = {
	{ "", PG_RATE_PPS, 1 },
	{ "pps", PG_RATE_PPS, 1 },
	{ "kpps", PG_RATE_PPS, 1e3 },
	{ "mpps", PG_RATE_PPS, 1e6 },
	{ "bps", PG_RATE_BPS, 1 },
	{ "kbps", PG_RATE_BPS, 1e3 },
	{ "mbps", PG_RATE_BPS, 1e6 },
	{ "gbps", PG_RATE_BPS, 1e9 },
};

enum {
	OPT_TX_PORT = 256, OPT_RX_PORT, OPT_FLOWS, OPT_VARY, OPT_SRC, OPT_DST, OPT_SRC_MAC,
	OPT_DST_MAC, OPT_SPORT, OPT_DPORT, OPT_SIZE, OPT_RATE, OPT_DURATION, OPT_COUNT,
	OPT_DRAIN_MS, OPT_JSON, OPT_PROGRESS, OPT_HIST, OPT_LINK_WAIT_MS, OPT_HELP,
};

static const struct option long_opts[] = {
	{ "tx-port", required_argument, NULL, OPT_TX_PORT },
	{ "rx-port", required_argument, NULL, OPT_RX_PORT },
	{ "flows", required_argument, NULL, OPT_FLOWS },
	{ "vary", required_argument, NULL, OPT_VARY },
	{ "src", required_argument, NULL, OPT_SRC },
	{ "dst", required_argument, NULL, OPT_DST },
	{ "src-mac", required_argument, NULL, OPT_SRC_MAC },
	{ "dst-mac", required_argument, NULL, OPT_DST_MAC },
	{ "sport", required_argument, NULL, OPT_SPORT },
	{ "dport", required_argument, NULL, OPT_DPORT },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "rate", required_argument, NULL, OPT_RATE },
	{ "duration", required_argument, NULL, OPT_DURATION },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "drain-ms", required_argument, NULL, OPT_DRAIN_MS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "progress", no_argument, NULL, OPT_PROGRESS },
	{ "hist", no_argument, NULL, OPT_HIST },
	{ "link-wait-ms", required_argument, NULL, OPT_LINK_WAIT_MS },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

void
opt_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL options] -- [options]\n"
		"  --tx-port N          generate on port N\n"
		"  --rx-port N          count what arrives on port N (may equal --tx-port)\n"
		"  --flows N            flows 1..%u (default %u)\n"
		"  --vary sport|src     field the flow id is added to (default sport)\n"
		"  --src A.B.C.D        IPv4 source (default %s)\n"
		"  --dst A.B.C.D        IPv4 destination (default %s)\n"
		"  --src-mac MAC        (default: the TX port's MAC)\n"
		"  --dst-mac MAC        (default: ff:ff:ff:ff:ff:ff)\n"
		"  --sport N --dport N  UDP ports (default %u, %u)\n"
		"  --size S             L2 bytes without FCS, %zu..%u: N, a list N,N,.. cycled\n"
		"                       per packet, or imix (7:4:1 of 64,576,1514); default %u\n"
		"  --rate R             max (default), or N[pps|kpps|mpps|bps|kbps|mbps|gbps]\n"
		"  --duration S         seconds of TX (default %.0f)\n"
		"  --count N            stop TX after N packets (whichever comes first)\n"
		"  --drain-ms N         keep counting N ms after TX stops (default %u)\n"
		"  --json               results as one JSON object on stdout\n"
		"  --hist               --json: add the latency histogram (non-empty buckets)\n"
		"  --link-wait-ms N     wait up to N ms for the ports' links before sending\n"
		"  --progress           progress once a second on stderr even if not a tty\n",
		prog, PG_MAX_FLOWS, DEF_FLOWS, DEF_SRC_IP, DEF_DST_IP, DEF_SPORT, DEF_DPORT,
		PG_MIN_SIZE, PG_MAX_SIZE, DEF_SIZE, DEF_DURATION_S, DEF_DRAIN_MS);
}

static int
parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < lo || v > hi) {
		fprintf(stderr, "--%s: '%s' is not a number in %llu..%llu\n", opt, s,
			(unsigned long long)lo, (unsigned long long)hi);
		return -1;
	}
	*out = v;
	return 0;
}

static int
parse_u16(const char *opt, const char *s, uint16_t lo, uint16_t *out)
{
	uint64_t v;

	if (parse_u64(opt, s, lo, UINT16_MAX, &v) != 0)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static int
parse_ip(const char *opt, const char *s, uint32_t *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "--%s: '%s' is not an IPv4 address\n", opt, s);
		return -1;
	}
	*out = ntohl(a.s_addr);
	return 0;
}

static int
parse_mac(const char *opt, const char *s, struct rte_ether_addr *out)
{
	if (rte_ether_unformat_addr(s, out) != 0) {
		fprintf(stderr, "--%s: '%s' is not a MAC address\n", opt, s);
		return -1;
	}
	return 0;
}

static int
parse_sizes(struct pg_config *cfg, const char *s)
{
	char buf[256], *tok, *save = NULL;
	uint64_t v;

	cfg->size_arg = s;
	if (strcasecmp(s, "imix") == 0) {
		memcpy(cfg->sizes, imix, sizeof(imix));
		cfg->n_sizes = RTE_DIM(imix);
		return 0;
	}
	if (strlen(s) >= sizeof(buf)) {
		fprintf(stderr, "--size: list too long\n");
		return -1;
	}
	strcpy(buf, s);
	cfg->n_sizes = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (cfg->n_sizes == PG_MAX_SIZES) {
			fprintf(stderr, "--size: more than %u sizes\n", PG_MAX_SIZES);
			return -1;
		}
		if (parse_u64("size", tok, PG_MIN_SIZE, PG_MAX_SIZE, &v) != 0)
			return -1;
		cfg->sizes[cfg->n_sizes++] = (uint16_t)v;
	}
	if (cfg->n_sizes == 0) {
		fprintf(stderr, "--size: '%s' has no sizes\n", s);
		return -1;
	}
	return 0;
}

static int
parse_rate(struct pg_config *cfg, const char *s)
{
	double v;
	char *end;

	cfg->rate_arg = s;
	if (strcasecmp(s, "max") == 0) {
		cfg->rate_unit = PG_RATE_MAX;
		return 0;
	}
	errno = 0;
	v = strtod(s, &end);
	for (unsigned int i = 0; errno == 0 && end != s && i < RTE_DIM(rate_units); i++) {
		if (strcasecmp(end, rate_units[i].suffix) == 0 && v > 0 && v < 1e15) {
			cfg->rate_unit = rate_units[i].unit;
			cfg->rate = v * rate_units[i].scale;
			return 0;
		}
	}
	fprintf(stderr, "--rate: '%s' is not max or a positive N[pps|kpps|mpps|bps|kbps|"
		"mbps|gbps]\n", s);
	return -1;
}

static int
parse_duration(struct pg_config *cfg, const char *s)
{
	char *end;

	errno = 0;
	cfg->duration_s = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(cfg->duration_s > 0) ||
	    cfg->duration_s > MAX_DURATION_S) {
		fprintf(stderr, "--duration: '%s' is not a number of seconds in (0, %.0f]\n",
			s, MAX_DURATION_S);
		return -1;
	}
	return 0;
}

static int
parse_vary(struct pg_config *cfg, const char *s)
{
	if (strcmp(s, "sport") == 0)
		cfg->vary = PG_VARY_SPORT;
	else if (strcmp(s, "src") == 0)
		cfg->vary = PG_VARY_SRC;
	else {
		fprintf(stderr, "--vary: '%s' is not sport or src\n", s);
		return -1;
	}
	return 0;
}

static void
set_defaults(struct pg_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tx_port = PG_NO_PORT;
	cfg->rx_port = PG_NO_PORT;
	cfg->flows = DEF_FLOWS;
	parse_ip("src", DEF_SRC_IP, &cfg->src_ip);
	parse_ip("dst", DEF_DST_IP, &cfg->dst_ip);
	cfg->sport = DEF_SPORT;
	cfg->dport = DEF_DPORT;
	memset(&cfg->dst_mac, 0xff, sizeof(cfg->dst_mac));
	cfg->sizes[0] = DEF_SIZE;
	cfg->n_sizes = 1;
	cfg->size_arg = "64";
	cfg->rate_unit = PG_RATE_MAX;
	cfg->rate_arg = "max";
	cfg->duration_s = DEF_DURATION_S;
	cfg->drain_ms = DEF_DRAIN_MS;
}

static int
parse_one(struct pg_config *cfg, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case OPT_TX_PORT:
		return parse_u16("tx-port", arg, 0, &cfg->tx_port);
	case OPT_RX_PORT:
		return parse_u16("rx-port", arg, 0, &cfg->rx_port);
	case OPT_FLOWS:
		if (parse_u64("flows", arg, 1, PG_MAX_FLOWS, &v) != 0)
			return -1;
		cfg->flows = (uint32_t)v;
		return 0;
	case OPT_VARY:
		return parse_vary(cfg, arg);
	case OPT_SRC:
		return parse_ip("src", arg, &cfg->src_ip);
	case OPT_DST:
		return parse_ip("dst", arg, &cfg->dst_ip);
	case OPT_SRC_MAC:
		cfg->src_mac_set = true;
		return parse_mac("src-mac", arg, &cfg->src_mac);
	case OPT_DST_MAC:
		return parse_mac("dst-mac", arg, &cfg->dst_mac);
	case OPT_SPORT:
		return parse_u16("sport", arg, 1, &cfg->sport);
	case OPT_DPORT:
		return parse_u16("dport", arg, 1, &cfg->dport);
	case OPT_SIZE:
		return parse_sizes(cfg, arg);
	case OPT_RATE:
		return parse_rate(cfg, arg);
	case OPT_DURATION:
		return parse_duration(cfg, arg);
	case OPT_COUNT:
		return parse_u64("count", arg, 1, UINT64_MAX, &cfg->count);
	case OPT_DRAIN_MS:
		if (parse_u64("drain-ms", arg, 0, MAX_DRAIN_MS, &v) != 0)
			return -1;
		cfg->drain_ms = (unsigned int)v;
		return 0;
	case OPT_JSON:
		cfg->json = true;
		return 0;
	case OPT_PROGRESS:
		cfg->progress = true;
		return 0;
	case OPT_HIST:
		cfg->hist = true;
		return 0;
	case OPT_LINK_WAIT_MS:
		if (parse_u64("link-wait-ms", arg, 0, MAX_DRAIN_MS, &v) != 0)
			return -1;
		cfg->link_wait_ms = (unsigned int)v;
		return 0;
	}
	return -1;
}

/* Cross-option checks, once everything is known. */
static int
check(const struct pg_config *cfg)
{
	uint64_t last;

	if (cfg->tx_port == PG_NO_PORT && cfg->rx_port == PG_NO_PORT) {
		fprintf(stderr, "--tx-port and/or --rx-port: at least one is required\n");
		return -1;
	}
	if (cfg->vary == PG_VARY_SPORT) {
		last = (uint64_t)cfg->sport + cfg->flows - 1;
		if (last > UINT16_MAX) {
			fprintf(stderr, "--flows: %u flows from --sport %u pass port 65535\n",
				cfg->flows, cfg->sport);
			return -1;
		}
	} else if ((uint64_t)cfg->src_ip + cfg->flows - 1 > UINT32_MAX) {
		fprintf(stderr, "--flows: %u flows from --src pass 255.255.255.255\n",
			cfg->flows);
		return -1;
	}
	return 0;
}

/* 0: go on; 1: --help was given; -1: bad options. */
int
opt_parse(struct pg_config *cfg, int argc, char **argv)
{
	int c;

	set_defaults(cfg);
	opterr = 1;
	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		if (c == OPT_HELP)
			return 1;
		if (c == '?' || parse_one(cfg, c, optarg) != 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return check(cfg);
}
