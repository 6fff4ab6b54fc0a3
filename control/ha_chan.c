/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ha_chan.c - the HA state-sync channel (ha_chan.h says the design: who
 * connects, the framing, heartbeats, what is checked).  In this file, in
 * order: the byte queues, addresses, TLS (the PSK sessions, the context, a
 * socket BIO that writes with MSG_NOSIGNAL), the connection's life (connect,
 * accept, handshake, down), reading and writing, and the API.
 *
 * A connection goes IDLE -> CONNECTING (connector only) -> HANDSHAKE -> UP,
 * and back to IDLE from any of them (down()).  The channel's struct holds
 * everything, so that two channels live in one process (the test has A and
 * B); the OpenSSL error queue is per thread, so it is cleared before each
 * TLS call, and what is left in it read right after.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "dpvpn_be.h"
#include "ha_chan.h"

#define HB_MS		100			/* cfg defaults (ha_chan.h) */
#define DEAD_MS		1000
#define OUT_MAX		((size_t)256 << 20)
#define BACKOFF_MIN_MS	50			/* the connector's retries */
#define BACKOFF_MAX_MS	1000
#define LISTEN_BACKLOG	8
#define ACCEPT_BURST	16		/* accepts per run: strangers cannot hold the loop */
#define READ_BURST	64		/* SSL_reads (a record each) per run, likewise */
#define READ_SIZE	16384		/* one TLS record of plaintext at most */
#define WRITE_CHUNK	((size_t)1 << 20)	/* bytes offered to one SSL_write */
#define BUF_MIN		(64 * 1024)
#define BUF_KEEP	((size_t)1 << 20)	/* an emptied queue larger than this is freed */
#define FRAME_HDR	4			/* u32 big-endian length */
#define CANON_LEN	18			/* IPv6 address, port (ha_chan.h) */
#define PSK_LEN		48			/* SHA-384 output */
#define PSK_SALT	"dpvpn ha-chan v1"
#define PSK_IDENTITY	"dpvpn-ha-sync"
#define WHY_LEN		256

_Static_assert(PSK_LEN <= SSL_MAX_MASTER_KEY_LENGTH, "OpenSSL keeps at most 48 bytes of PSK");
_Static_assert(HA_CHAN_IN_MAX > FRAME_HDR + HA_CHAN_MSG_MAX, "a whole message fits the input");
_Static_assert(HA_CHAN_MSG_MAX <= INT_MAX - FRAME_HDR, "frames fit an int");
_Static_assert(BACKOFF_MIN_MS < BACKOFF_MAX_MS, "the backoff doubles up to its maximum");

enum state { ST_IDLE, ST_CONNECTING, ST_HANDSHAKE, ST_UP };

/* Bytes [head, tail) of p[cap]; what leaves it is wiped (messages carry keys). */
struct buf {
	uint8_t *p;
	size_t cap, head, tail;
};

struct ha_chan {
	struct ha_chan_cfg cfg;		/* defaults filled in; psk NULL (the key is below) */
	uint8_t key[PSK_LEN];		/* the TLS PSK derived from cfg's (ha_chan.h) */
	uint8_t peer_canon[CANON_LEN];	/* the source check compares the first 16 */
	bool connector;			/* local compares lower: this node connects */
	int lfd;			/* the listener */
	int fd;				/* the connection, -1 when IDLE */
	SSL_CTX *ctx;
	SSL *ssl;
	BIO_METHOD *bio_meth;
	enum state st;
	short hs_want, rd_want, wr_want;	/* the poll event the last TLS call waits for */
	uint64_t last_rx;		/* something read, or the state entered: dead_ms on */
	uint64_t last_tx;		/* something written: heartbeats */
	uint64_t next_connect, up_since;
	unsigned backoff;		/* ms before the next connect after a failure */
	struct buf out;			/* frames to send */
	struct buf in;			/* frames received: in_ready bytes whole, then a part */
	size_t in_ready;
	uint8_t hdr[FRAME_HDR];		/* a frame header being read */
	unsigned hdr_n;
	uint32_t body_left;		/* bytes of the current message still to come */
	int events;			/* HA_CHAN_EV_* for the next ha_chan_run's answer */
	uint64_t refused;
	char why[WHY_LEN];
	uint8_t rbuf[READ_SIZE];	/* SSL_read's plaintext, wiped after each read */
};

static uint64_t
elapsed(uint64_t now, uint64_t since)
{
	return now > since ? now - since : 0;
}

static size_t
min_size(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---- byte queues ---- */

static size_t
buf_len(const struct buf *b)
{
	return b->tail - b->head;
}

static void
buf_free(struct buf *b)
{
	if (b->p != NULL) {
		explicit_bzero(b->p, b->cap);
		free(b->p);
	}
	memset(b, 0, sizeof(*b));
}

/*
 * Room for n more bytes at the tail: the bytes moved to the front when at
 * least half the buffer is spent (what they leave behind wiped), else into
 * a buffer twice as large (the old one wiped: realloc would leave a copy in
 * freed memory).  Moving is safe under TLS: SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER.
 */
static int
buf_room(struct buf *b, size_t n)
{
	size_t live = buf_len(b), cap;
	uint8_t *p;

	if (b->cap - b->tail >= n)
		return 0;
	if (b->head >= live && b->cap - live >= n) {
		memmove(b->p, b->p + b->head, live);
		explicit_bzero(b->p + live, b->tail - live);
		b->head = 0;
		b->tail = live;
		return 0;
	}
	cap = b->cap * 2 > BUF_MIN ? b->cap * 2 : BUF_MIN;
	if (cap < live + n)
		cap = live + n;
	p = malloc(cap);
	if (p == NULL)
		return -1;
	if (live > 0)
		memcpy(p, b->p + b->head, live);
	buf_free(b);
	b->p = p;
	b->cap = cap;
	b->tail = live;
	return 0;
}

static void
buf_put(struct buf *b, const void *data, size_t n)
{
	memcpy(b->p + b->tail, data, n);
	b->tail += n;
}

/* n bytes off the front, wiped; an emptied large buffer freed (a resync's burst). */
static void
buf_take(struct buf *b, size_t n)
{
	explicit_bzero(b->p + b->head, n);
	b->head += n;
	if (b->head < b->tail)
		return;
	b->head = b->tail = 0;
	if (b->cap > BUF_KEEP)
		buf_free(b);
}

/* ---- addresses ---- */

static socklen_t
addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static uint16_t
addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

static void
set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* The canonical form that decides who connects: the address as IPv6 (IPv4
 * mapped, ::ffff:a.b.c.d), then the port, big-endian. */
static void
canon(const struct sockaddr_storage *ss, uint8_t out[CANON_LEN])
{
	uint16_t port = addr_port(ss);

	memset(out, 0, CANON_LEN);
	if (ss->ss_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else {
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
	out[16] = (uint8_t)(port >> 8);
	out[17] = (uint8_t)port;
}

/* "192.0.2.1" or "2001:db8::1", with ":port" / "[...]:port" if with_port. */
static const char *
addr_str(const struct sockaddr_storage *ss, bool with_port, char *s, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";
	bool v4 = ss->ss_family == AF_INET;
	const void *ip = v4 ? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
			    : (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;

	inet_ntop(ss->ss_family, ip, a, sizeof(a));
	if (!with_port)
		snprintf(s, len, "%s", a);
	else
		snprintf(s, len, v4 ? "%s:%u" : "[%s]:%u", a, addr_port(ss));
	return s;
}

/* ---- TLS ---- */

/* The external PSK as OpenSSL wants it: a session holding the key, the
 * suite and the version.  OpenSSL owns (and frees) what the callbacks hand it. */
static SSL_SESSION *
psk_session(const struct ha_chan *c, SSL *ssl)
{
	static const unsigned char aes256_sha384[2] = { 0x13, 0x02 };
	const SSL_CIPHER *cipher = SSL_CIPHER_find(ssl, aes256_sha384);
	SSL_SESSION *s = SSL_SESSION_new();

	if (s == NULL || cipher == NULL || !SSL_SESSION_set1_master_key(s, c->key, sizeof(c->key))
	    || !SSL_SESSION_set_cipher(s, cipher)
	    || !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

/* The connector's offer.  A second call (after a HelloRetryRequest) names the
 * suite's hash: with one suite allowed it is always SHA-384. */
static int
use_session(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
	    SSL_SESSION **sess)
{
	const struct ha_chan *c = SSL_get_app_data(ssl);

	*sess = NULL;
	*id = NULL;
	*idlen = 0;
	if (md != NULL && EVP_MD_get_type(md) != NID_sha384)
		return 1;	/* not usable with this hash: offer none (the handshake fails) */
	*sess = psk_session(c, ssl);
	if (*sess == NULL)
		return 0;
	*id = (const unsigned char *)PSK_IDENTITY;
	*idlen = strlen(PSK_IDENTITY);
	return 1;
}

/* The acceptor's side: our identity or the handshake fails (no certificate
 * to fall back on). */
static int
find_session(SSL *ssl, const unsigned char *id, size_t idlen, SSL_SESSION **sess)
{
	const struct ha_chan *c = SSL_get_app_data(ssl);

	*sess = NULL;
	if (idlen != strlen(PSK_IDENTITY) || memcmp(id, PSK_IDENTITY, idlen) != 0)
		return 0;
	*sess = psk_session(c, ssl);
	return *sess != NULL;
}

/*
 * TLS 1.3 only, one suite, no tickets, no session cache, psk_dhe_ke only
 * (SSL_OP_ALLOW_NO_DHE_KEX cleared: OpenSSL then neither offers nor accepts
 * psk_ke).  OpenSSL wipes its copy of what it decrypted once we have read it
 * (SSL_OP_CLEANSE_PLAINTEXT).  The connector verifies any certificate against an empty store,
 * so a server without the key cannot finish a handshake with a certificate.
 */
static SSL_CTX *
tls_ctx(bool connector)
{
	SSL_CTX *ctx = SSL_CTX_new(connector ? TLS_client_method() : TLS_server_method());

	if (ctx == NULL)
		return NULL;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION)
	    || !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION)
	    || !SSL_CTX_set_ciphersuites(ctx, "TLS_AES_256_GCM_SHA384")
	    || !SSL_CTX_set_num_tickets(ctx, 0)) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_clear_options(ctx, SSL_OP_ALLOW_NO_DHE_KEX);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_CLEANSE_PLAINTEXT);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (connector) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		SSL_CTX_set_psk_use_session_callback(ctx, use_session);
	} else {
		SSL_CTX_set_psk_find_session_callback(ctx, find_session);
	}
	return ctx;
}

/* The TLS PSK: HKDF-Extract(salt PSK_SALT, the configured key), SHA-384. */
static int
derive_key(struct ha_chan *c, const uint8_t *psk, size_t len)
{
	size_t out = 0;

	if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA384", NULL, PSK_SALT, strlen(PSK_SALT), psk, len,
		      c->key, sizeof(c->key), &out) == NULL || out != sizeof(c->key))
		return -1;
	return 0;
}

/*
 * A socket BIO of our own, for one reason: send() with MSG_NOSIGNAL, so that
 * a peer gone away is an error, not SIGPIPE (OpenSSL's socket BIO uses
 * write()).  The BIO's data is the channel; it reads c->fd.
 */
static int
bio_write(BIO *b, const char *data, size_t len, size_t *done)
{
	const struct ha_chan *c = BIO_get_data(b);
	ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);

	BIO_clear_retry_flags(b);
	if (n >= 0) {
		*done = (size_t)n;
		return 1;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		BIO_set_retry_write(b);
	return 0;
}

static int
bio_read(BIO *b, char *data, size_t len, size_t *done)
{
	const struct ha_chan *c = BIO_get_data(b);
	ssize_t n = recv(c->fd, data, len, 0);

	BIO_clear_retry_flags(b);
	if (n > 0) {
		*done = (size_t)n;
		return 1;
	}
	if (n == 0)
		BIO_set_flags(b, BIO_FLAGS_IN_EOF);	/* BIO_eof: OpenSSL tells EOF from error */
	else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		BIO_set_retry_read(b);
	return 0;
}

static long
bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)num;
	(void)ptr;
	if (cmd == BIO_CTRL_FLUSH)
		return 1;
	if (cmd == BIO_CTRL_EOF)
		return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
	return 0;
}

/* No BIO_get_new_index(): it takes from a process-wide count that never
 * comes back, one per channel opened; nothing looks our type up. */
static BIO_METHOD *
bio_method(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_TYPE_SOURCE_SINK, "ha_chan");

	if (m == NULL || !BIO_meth_set_write_ex(m, bio_write) || !BIO_meth_set_read_ex(m, bio_read)
	    || !BIO_meth_set_ctrl(m, bio_ctrl)) {
		BIO_meth_free(m);
		return NULL;
	}
	return m;
}

/* ---- the connection's life ---- */

static void
conn_free(struct ha_chan *c)
{
	size_t partial = buf_len(&c->in) - c->in_ready;

	SSL_free(c->ssl);	/* and the BIO */
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	buf_free(&c->out);
	/* a message half received is lost; whole ones stay for ha_chan_recv */
	if (partial > 0) {
		explicit_bzero(c->in.p + c->in.tail - partial, partial);
		c->in.tail -= partial;
	}
	if (buf_len(&c->in) == 0)
		buf_free(&c->in);
	c->hdr_n = 0;
	c->body_left = 0;
	c->hs_want = c->rd_want = c->wr_want = 0;
	c->st = ST_IDLE;
}

/* The connection closed and why; the connector tries again after its backoff. */
__attribute__((format(printf, 3, 4)))
static void
down(struct ha_chan *c, uint64_t now, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	if (c->st == ST_UP)
		c->events |= HA_CHAN_EV_DOWN;
	conn_free(c);
	if (c->connector) {
		c->next_connect = now + c->backoff;
		c->backoff = c->backoff * 2 < BACKOFF_MAX_MS ? c->backoff * 2 : BACKOFF_MAX_MS;
	}
}

/*
 * What a wrong key looks like: the acceptor cannot verify the connector's
 * binder; the connector gets the acceptor's alert (OpenSSL 3.0 sends
 * illegal_parameter; decrypt_error is what RFC 8446 names).
 */
static bool
key_mismatch(int reason)
{
	return reason == SSL_R_BINDER_DOES_NOT_VERIFY || reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR
	       || reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER;
}

/* Before each TLS call: what is read after it is its own (the error queue is
 * the thread's, shared with the other channels). */
static void
tls_clear(void)
{
	ERR_clear_error();
	errno = 0;
}

/*
 * A TLS call returned ret <= 0: 0 and *want set if it only waits for the
 * socket, else the channel down, with OpenSSL's reason (and a hint where the
 * reason is what a wrong key looks like), and -1.
 */
static int
tls_wait(struct ha_chan *c, uint64_t now, const char *what, int ret, short *want)
{
	int sys = errno, e = SSL_get_error(c->ssl, ret);
	unsigned long code = ERR_peek_error();
	int reason = ERR_GET_LIB(code) == ERR_LIB_SSL ? ERR_GET_REASON(code) : 0;
	const char *text = code ? ERR_reason_error_string(code) : NULL;

	ERR_clear_error();
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN)
		down(c, now, "%s: peer closed the channel", what);
	else if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING || (e == SSL_ERROR_SYSCALL && !sys))
		down(c, now, "%s: peer closed the connection", what);
	else if (e == SSL_ERROR_SYSCALL && code == 0)
		down(c, now, "%s: %s", what, strerror(sys));
	else
		down(c, now, "%s: %s%s", what, text ? text : "TLS error",
		     key_mismatch(reason) ? " (wrong sync key?)" : "");
	return -1;
}

static void
up(struct ha_chan *c, uint64_t now)
{
	c->st = ST_UP;
	c->events |= HA_CHAN_EV_UP;
	c->up_since = now;
	c->backoff = BACKOFF_MIN_MS;
	c->last_rx = c->last_tx = now;
}

static void
handshake(struct ha_chan *c, uint64_t now)
{
	int ret;

	tls_clear();
	ret = SSL_do_handshake(c->ssl);
	if (ret <= 0) {
		tls_wait(c, now, "handshake", ret, &c->hs_want);
		return;
	}
	/* belt and braces: the context allows nothing else */
	if (SSL_version(c->ssl) != TLS1_3_VERSION || !SSL_session_reused(c->ssl)) {
		down(c, now, "handshake: finished without the sync key");
		return;
	}
	up(c, now);
}

static void
tls_start(struct ha_chan *c, uint64_t now)
{
	BIO *bio = BIO_new(c->bio_meth);

	c->ssl = SSL_new(c->ctx);
	if (bio == NULL || c->ssl == NULL) {
		BIO_free(bio);
		ERR_clear_error();
		down(c, now, "handshake: out of memory");
		return;
	}
	BIO_set_data(bio, c);
	BIO_set_init(bio, 1);
	SSL_set_bio(c->ssl, bio, bio);
	SSL_set_app_data(c->ssl, c);
	if (c->connector)
		SSL_set_connect_state(c->ssl);
	else
		SSL_set_accept_state(c->ssl);
	c->st = ST_HANDSHAKE;
	c->last_rx = now;
	handshake(c, now);
}

static void
nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* From the local address (so that the acceptor sees the address it knows),
 * any port, to the peer; non-blocking. */
static void
connect_start(struct ha_chan *c, uint64_t now)
{
	struct sockaddr_storage src = c->cfg.local;
	char a[64];

	addr_str(&c->cfg.peer, true, a, sizeof(a));
	c->fd = socket(src.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	c->st = ST_CONNECTING;
	c->last_rx = now;
	if (c->fd < 0) {
		down(c, now, "connect to %s: socket: %s", a, strerror(errno));
		return;
	}
	set_port(&src, 0);
	if (bind(c->fd, (struct sockaddr *)&src, addr_len(&src)) < 0) {
		down(c, now, "connect to %s: bind: %s", a, strerror(errno));
		return;
	}
	nodelay(c->fd);
	if (connect(c->fd, (const struct sockaddr *)&c->cfg.peer, addr_len(&c->cfg.peer)) == 0)
		tls_start(c, now);
	else if (errno != EINPROGRESS)
		down(c, now, "connect to %s: %s", a, strerror(errno));
}

/* A connect in progress: done (writable), failed, or still going. */
static void
connect_check(struct ha_chan *c, uint64_t now)
{
	struct pollfd p = { .fd = c->fd, .events = POLLOUT };
	int err = 0;
	socklen_t len = sizeof(err);
	char a[64];

	if (poll(&p, 1, 0) <= 0)
		return;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	if (err == 0) {
		tls_start(c, now);
		return;
	}
	down(c, now, "connect to %s: %s", addr_str(&c->cfg.peer, true, a, sizeof(a)),
	     strerror(err));
}

/* Closed unheard and counted; the reason shown only while the channel is not
 * up (an established channel's last reason stays). */
static void
refuse(struct ha_chan *c, int fd, const struct sockaddr_storage *from, const char *reason)
{
	char a[64];

	close(fd);
	c->refused++;
	if (c->st != ST_UP)
		snprintf(c->why, sizeof(c->why), "connection from %s refused: %s",
			 addr_str(from, false, a, sizeof(a)), reason);
}

static bool
from_peer(const struct ha_chan *c, const struct sockaddr_storage *from)
{
	uint8_t f[CANON_LEN];

	canon(from, f);
	return memcmp(f, c->peer_canon, 16) == 0;
}

static void
accept_some(struct ha_chan *c, uint64_t now)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		struct sockaddr_storage from;
		socklen_t len = sizeof(from);
		int fd = accept4(c->lfd, (struct sockaddr *)&from, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;		/* EAGAIN; or EMFILE and the like: again next run */
		if (!from_peer(c, &from))
			refuse(c, fd, &from, "not the peer");
		else if (c->connector)
			refuse(c, fd, &from, "this node connects (its address is the lower)");
		else if (c->st != ST_IDLE)
			refuse(c, fd, &from, "a connection is open");
		else {
			nodelay(fd);
			c->fd = fd;
			tls_start(c, now);
		}
	}
}

/* ---- reading and writing ---- */

static bool
paused(const struct ha_chan *c)
{
	return buf_len(&c->in) >= HA_CHAN_IN_MAX;
}

/* A frame header read: a heartbeat ignored, a message's room made. */
static int
frame_start(struct ha_chan *c, uint64_t now)
{
	uint32_t len = be_get32(c->hdr);

	c->hdr_n = 0;
	if (len == 0)
		return 0;
	if (len > HA_CHAN_MSG_MAX) {
		down(c, now, "peer sent a message of %u bytes (at most %u): not this protocol",
		     len, HA_CHAN_MSG_MAX);
		return -1;
	}
	if (buf_room(&c->in, FRAME_HDR + len)) {
		down(c, now, "no memory for a message of %u bytes", len);
		return -1;
	}
	buf_put(&c->in, c->hdr, FRAME_HDR);
	c->body_left = len;
	return 0;
}

/* The frames in n bytes of plaintext: messages appended to c->in, whole ones
 * counted in in_ready.  -1 when the channel went down. */
static int
parse(struct ha_chan *c, uint64_t now, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t k;

		if (c->body_left == 0) {
			k = min_size(FRAME_HDR - c->hdr_n, n);
			memcpy(c->hdr + c->hdr_n, p, k);
			c->hdr_n += (unsigned)k;
			if (c->hdr_n == FRAME_HDR && frame_start(c, now) < 0)
				return -1;
		} else {
			k = min_size(c->body_left, n);
			buf_put(&c->in, p, k);
			c->body_left -= (uint32_t)k;
			if (c->body_left == 0) {
				c->in_ready = buf_len(&c->in);
				c->events |= HA_CHAN_EV_MSG;
			}
		}
		p += k;
		n -= k;
	}
	return 0;
}

static int
read_some(struct ha_chan *c, uint64_t now)
{
	for (int i = 0; i < READ_BURST && !paused(c); i++) {
		int n, r;

		tls_clear();
		n = SSL_read(c->ssl, c->rbuf, sizeof(c->rbuf));
		if (n <= 0)
			return tls_wait(c, now, "read", n, &c->rd_want);
		c->rd_want = 0;
		c->last_rx = now;
		r = parse(c, now, c->rbuf, (size_t)n);
		explicit_bzero(c->rbuf, (size_t)n);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The queue to TLS, a record at a time (partial writes), until the socket
 * is full.  A retry after WANT_* offers at least as many bytes as before, as
 * OpenSSL requires: the queue only grows between calls. */
static int
write_some(struct ha_chan *c, uint64_t now)
{
	c->wr_want = 0;
	while (buf_len(&c->out) > 0) {
		int n;

		tls_clear();
		n = SSL_write(c->ssl, c->out.p + c->out.head,
			      (int)min_size(buf_len(&c->out), WRITE_CHUNK));
		if (n <= 0)
			return tls_wait(c, now, "write", n, &c->wr_want);
		buf_take(&c->out, (size_t)n);
		c->last_tx = now;
	}
	return 0;
}

static void
io(struct ha_chan *c, uint64_t now)
{
	static const uint8_t heartbeat[FRAME_HDR];

	if (read_some(c, now) < 0)
		return;
	if (buf_len(&c->out) == 0 && elapsed(now, c->last_tx) >= c->cfg.hb_ms
	    && buf_room(&c->out, sizeof(heartbeat)) == 0)
		buf_put(&c->out, heartbeat, sizeof(heartbeat));
	write_some(c, now);
}

/* Connecting, the handshake and the peer's silence each get dead_ms.  While
 * the input is full the peer is not silent: we are not listening. */
static void
deadlines(struct ha_chan *c, uint64_t now)
{
	char a[64];

	if (c->st == ST_UP && paused(c))
		c->last_rx = now;
	if (c->st == ST_IDLE || elapsed(now, c->last_rx) < c->cfg.dead_ms)
		return;
	if (c->st == ST_CONNECTING)
		down(c, now, "connect to %s: no answer in %u ms",
		     addr_str(&c->cfg.peer, true, a, sizeof(a)), c->cfg.dead_ms);
	else if (c->st == ST_HANDSHAKE)
		down(c, now, "handshake: not finished in %u ms", c->cfg.dead_ms);
	else
		down(c, now, "peer silent for %u ms", c->cfg.dead_ms);
}

/* ---- the API ---- */

static int
check_cfg(const struct ha_chan_cfg *cfg, char *err, size_t errlen)
{
	uint8_t l[CANON_LEN], p[CANON_LEN];
	unsigned hb = cfg->hb_ms ? cfg->hb_ms : HB_MS;
	unsigned dead = cfg->dead_ms ? cfg->dead_ms : DEAD_MS;

	if (cfg->psk == NULL || cfg->psk_len < HA_CHAN_PSK_MIN || cfg->psk_len > HA_CHAN_PSK_MAX)
		snprintf(err, errlen, "sync key: %d to %d bytes, not %zu", HA_CHAN_PSK_MIN,
			 HA_CHAN_PSK_MAX, cfg->psk == NULL ? (size_t)0 : cfg->psk_len);
	else if ((cfg->local.ss_family != AF_INET && cfg->local.ss_family != AF_INET6)
		 || cfg->peer.ss_family != cfg->local.ss_family)
		snprintf(err, errlen, "local and peer sync addresses: both IPv4 or both IPv6");
	else if (addr_port(&cfg->local) == 0 || addr_port(&cfg->peer) == 0)
		snprintf(err, errlen, "sync addresses: port 0");
	else if (hb >= dead)
		snprintf(err, errlen, "heartbeat interval (%u ms) must be below the dead time "
			 "(%u ms)", hb, dead);
	else if (cfg->out_max != 0 && cfg->out_max < FRAME_HDR + HA_CHAN_MSG_MAX)
		snprintf(err, errlen, "out_max %zu: below one message", cfg->out_max);
	else {
		canon(&cfg->local, l);
		canon(&cfg->peer, p);
		if (memcmp(l, p, CANON_LEN) != 0)
			return 0;
		snprintf(err, errlen, "local and peer sync addresses are the same");
	}
	return -1;
}

static int
listen_on(struct ha_chan *c, char *err, size_t errlen)
{
	const struct sockaddr_storage *l = &c->cfg.local;
	int one = 1;
	char a[64];

	addr_str(l, true, a, sizeof(a));
	c->lfd = socket(l->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
	if (c->lfd < 0
	    || setsockopt(c->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0
	    || (l->ss_family == AF_INET6
		&& setsockopt(c->lfd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)) {
		snprintf(err, errlen, "sync listener %s: %s", a, strerror(errno));
		return -1;
	}
	if (bind(c->lfd, (const struct sockaddr *)l, addr_len(l)) < 0
	    || listen(c->lfd, LISTEN_BACKLOG) < 0) {
		snprintf(err, errlen, "sync listener %s: %s", a, strerror(errno));
		return -1;
	}
	return 0;
}

struct ha_chan *
ha_chan_open(const struct ha_chan_cfg *cfg, char *err, size_t errlen)
{
	struct ha_chan *c;
	uint8_t local[CANON_LEN];
	const char *reason;
	char a[64];
	int e;

	if (check_cfg(cfg, err, errlen)) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->cfg = *cfg;
	c->cfg.psk = NULL;
	c->cfg.psk_len = 0;
	c->cfg.hb_ms = cfg->hb_ms ? cfg->hb_ms : HB_MS;
	c->cfg.dead_ms = cfg->dead_ms ? cfg->dead_ms : DEAD_MS;
	c->cfg.out_max = cfg->out_max ? cfg->out_max : OUT_MAX;
	c->lfd = c->fd = -1;
	canon(&cfg->local, local);
	canon(&cfg->peer, c->peer_canon);
	c->connector = memcmp(local, c->peer_canon, CANON_LEN) < 0;
	c->backoff = BACKOFF_MIN_MS;
	if (derive_key(c, cfg->psk, cfg->psk_len) || (c->ctx = tls_ctx(c->connector)) == NULL
	    || (c->bio_meth = bio_method()) == NULL) {
		reason = ERR_reason_error_string(ERR_peek_error());
		snprintf(err, errlen, "TLS setup: %s", reason ? reason : "failed");
		ERR_clear_error();
		ha_chan_close(c);
		errno = ENOMEM;
		return NULL;
	}
	if (listen_on(c, err, errlen)) {
		e = errno;
		ha_chan_close(c);
		errno = e;
		return NULL;
	}
	addr_str(&c->cfg.peer, true, a, sizeof(a));
	snprintf(c->why, sizeof(c->why), c->connector ? "not connected to %s yet"
		 : "waiting for %s to connect", a);
	return c;
}

void
ha_chan_close(struct ha_chan *c)
{
	if (c == NULL)
		return;
	if (c->st == ST_UP) {
		ERR_clear_error();
		SSL_shutdown(c->ssl);	/* a close_notify if the socket takes it: no wait */
		ERR_clear_error();
	}
	conn_free(c);
	if (c->lfd >= 0)
		close(c->lfd);
	buf_free(&c->in);
	SSL_CTX_free(c->ctx);
	BIO_meth_free(c->bio_meth);
	explicit_bzero(c, sizeof(*c));	/* the key, the last plaintext read */
	free(c);
}

int
ha_chan_pollfds(struct ha_chan *c, struct pollfd *pfd, int max)
{
	short ev = 0;
	int n = 0;

	if (n < max && c->lfd >= 0)
		pfd[n++] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
	if (n >= max || c->fd < 0)
		return n;
	if (c->st == ST_CONNECTING)
		ev = POLLOUT;
	else if (c->st == ST_HANDSHAKE)
		ev = c->hs_want ? c->hs_want : POLLIN;
	else {
		if (!paused(c))
			ev |= c->rd_want == POLLOUT ? POLLOUT : POLLIN;
		if (buf_len(&c->out) > 0)
			ev |= c->wr_want == POLLIN ? POLLIN : POLLOUT;
	}
	pfd[n++] = (struct pollfd){ .fd = c->fd, .events = ev };
	return n;
}

int
ha_chan_timeout_ms(const struct ha_chan *c, uint64_t now_ms)
{
	uint64_t at = UINT64_MAX;

	if (c->st == ST_IDLE && c->connector)
		at = c->next_connect;
	else if (c->st == ST_CONNECTING || c->st == ST_HANDSHAKE)
		at = c->last_rx + c->cfg.dead_ms;
	else if (c->st == ST_UP) {
		if (!paused(c) && SSL_has_pending(c->ssl))
			return 0;	/* read, but not taken from TLS: poll would not say */
		if (!paused(c))
			at = c->last_rx + c->cfg.dead_ms;
		if (buf_len(&c->out) == 0 && c->last_tx + c->cfg.hb_ms < at)
			at = c->last_tx + c->cfg.hb_ms;
	}
	if (at == UINT64_MAX)
		return -1;
	return at <= now_ms ? 0 : (int)min_size(at - now_ms, INT_MAX);
}

int
ha_chan_run(struct ha_chan *c, uint64_t now_ms)
{
	int ev;

	accept_some(c, now_ms);
	if (c->st == ST_IDLE && c->connector && now_ms >= c->next_connect)
		connect_start(c, now_ms);
	if (c->st == ST_CONNECTING)
		connect_check(c, now_ms);
	if (c->st == ST_HANDSHAKE)
		handshake(c, now_ms);
	if (c->st == ST_UP)
		io(c, now_ms);
	deadlines(c, now_ms);
	ev = c->events;
	c->events = 0;
	return ev;
}

int
ha_chan_send(struct ha_chan *c, const void *msg, size_t len)
{
	uint8_t hdr[FRAME_HDR];

	if (len == 0 || len > HA_CHAN_MSG_MAX)
		return -EMSGSIZE;
	if (c->st != ST_UP)
		return -ENOTCONN;
	if (buf_len(&c->out) + FRAME_HDR + len > c->cfg.out_max)
		return -ENOBUFS;
	if (buf_room(&c->out, FRAME_HDR + len))
		return -ENOMEM;
	be_put32(hdr, (uint32_t)len);
	buf_put(&c->out, hdr, sizeof(hdr));
	buf_put(&c->out, msg, len);
	return 0;
}

ssize_t
ha_chan_recv(struct ha_chan *c, void *buf, size_t cap)
{
	uint32_t len;

	if (c->in_ready == 0)
		return 0;
	len = be_get32(c->in.p + c->in.head);
	if (len > cap)
		return -EMSGSIZE;
	memcpy(buf, c->in.p + c->in.head + FRAME_HDR, len);
	c->in_ready -= FRAME_HDR + len;
	buf_take(&c->in, FRAME_HDR + len);
	return (ssize_t)len;
}

bool
ha_chan_up(const struct ha_chan *c)
{
	return c->st == ST_UP;
}

size_t
ha_chan_queued(const struct ha_chan *c)
{
	return buf_len(&c->out);
}

const char *
ha_chan_why(const struct ha_chan *c)
{
	return c->why;
}

uint64_t
ha_chan_up_since(const struct ha_chan *c)
{
	return c->up_since;
}

uint64_t
ha_chan_refused(const struct ha_chan *c)
{
	return c->refused;
}

/* "[v6]" and "[v6]:port", else a single colon splits "v4:port", else the
 * whole string is the address. */
static int
split_addr(const char *s, char *host, size_t hostlen, const char **port, bool *bracket)
{
	const char *h = s, *end, *colon = strchr(s, ':');
	size_t len;

	*port = NULL;
	*bracket = s[0] == '[';
	if (*bracket) {
		h = s + 1;
		end = strchr(h, ']');
		if (end == NULL || (end[1] != '\0' && end[1] != ':'))
			return -1;
		*port = end[1] == ':' ? end + 2 : NULL;
	} else if (colon != NULL && strchr(colon + 1, ':') == NULL) {
		end = colon;
		*port = colon + 1;
	} else {
		end = s + strlen(s);
	}
	len = (size_t)(end - h);
	if (len == 0 || len >= hostlen)
		return -1;
	memcpy(host, h, len);
	host[len] = '\0';
	return 0;
}

static int
parse_port(const char *s, uint16_t *port)
{
	unsigned long v = 0;

	if (*s == '\0' || strlen(s) > 5)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int
ha_chan_parse_addr(const char *s, uint16_t default_port, struct sockaddr_storage *out,
		   char *err, size_t errlen)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
	char host[INET6_ADDRSTRLEN];
	const char *port;
	uint16_t p = default_port;
	bool bracket;

	memset(out, 0, sizeof(*out));
	if (split_addr(s, host, sizeof(host), &port, &bracket)) {
		snprintf(err, errlen, "'%s': not ADDRESS, ADDRESS:PORT or [IPv6]:PORT", s);
		return -1;
	}
	if (port != NULL && parse_port(port, &p)) {
		snprintf(err, errlen, "'%s': the port is not a number from 1 to 65535", s);
		return -1;
	}
	if (!bracket && inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons(p);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons(p);
		return 0;
	}
	memset(out, 0, sizeof(*out));
	snprintf(err, errlen, "'%s': '%s' is not an IPv4 or IPv6 address", s, host);
	return -1;
}
