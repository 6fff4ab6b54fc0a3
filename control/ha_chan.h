/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ha_chan.h - the HA state-sync channel between two dpvpnd: a stream of
 * messages (made and read by the sync codec, which this file does not know)
 * over one TCP connection inside TLS 1.3 with an external pre-shared key.
 * The active node sends its standby every IKE and CHILD SA and every
 * sequence reservation; the channel only carries the bytes, in order, whole.
 *
 * Who connects.  Both nodes listen on their own sync address (`local`).  The
 * node whose local address and port compare lower connects to the other;
 * the other only accepts, so the two never race two connections.  Compared
 * is a canonical form of 18 bytes, memcmp'ed: the IPv6 address (an IPv4
 * address as ::ffff:a.b.c.d) then the port, big-endian.  The connector
 * binds its socket to its local address (port 0), so that the acceptor sees
 * it come from the address it knows as the peer's.  The connector retries
 * after 50 ms, doubling to 1 s, and from 50 ms again once it was up.
 *
 * What is checked.  The acceptor closes at once, and counts, a connection
 * whose source address is not the peer's (the port is not checked: the
 * connector's is ephemeral), and any second connection while it has one
 * (an established channel is not disturbed).  TLS 1.3 only, one cipher
 * suite (TLS_AES_256_GCM_SHA384), no certificates: the key is the one
 * credential.  The connector refuses any server certificate (a server that
 * cannot prove the key); the acceptor has none to offer.  Key exchange is
 * psk_dhe_ke only (OpenSSL's default without SSL_OP_ALLOW_NO_DHE_KEX, on both
 * sides), so each connection has an ephemeral (EC)DHE share too: a key
 * stolen later does not open recorded traffic.  After the handshake both
 * sides check that the PSK was used (SSL_session_reused) and the version is
 * 1.3.  A wrong key fails the handshake: the acceptor cannot verify the
 * connector's binder.  No session tickets, no early data.
 *
 * The key.  The configured secret (32 to 64 bytes) is not used as is: the
 * TLS PSK is HKDF-Extract(salt "dpvpn ha-chan v1", secret) with SHA-384,
 * 48 bytes (OpenSSL holds at most 48 bytes of PSK, SSL_MAX_MASTER_KEY_LENGTH),
 * under the identity "dpvpn-ha-sync".  Only the derived key is kept; it is
 * wiped at close, and OpenSSL wipes its own copies with the sessions.
 *
 * Framing, inside TLS.  Each message is a u32 big-endian length then that
 * many bytes, 1 to HA_CHAN_MSG_MAX.  Length 0 is a heartbeat: sent when
 * nothing was sent for hb_ms, swallowed by the receiver.  A length above
 * HA_CHAN_MSG_MAX drops the connection (a peer that does not speak this
 * framing).  The channel goes down when nothing at all (message, heartbeat,
 * TLS record) came for dead_ms; connecting and the handshake must also
 * finish within dead_ms.
 *
 * Down.  When the channel goes down, what was queued to send and not yet
 * taken by TLS is discarded, as is a message half received: the caller
 * (the active node) sends its whole state again when the channel comes up
 * (HA_CHAN_EV_UP), so nothing needs to survive a reconnect.  Messages
 * received whole before the connection ended stay readable with
 * ha_chan_recv (the active's last sequence reservation may be among them).
 *
 * Driving it.  Everything is non-blocking and runs in the caller's poll
 * loop, one thread, no timers of its own:
 *
 *	n = ha_chan_pollfds(c, pfd, 2);
 *	poll(pfd, n, min(ha_chan_timeout_ms(c, now), other timers));
 *	ev = ha_chan_run(c, mono_ms());
 *	if (ev & HA_CHAN_EV_UP) send the whole state;
 *	while ((len = ha_chan_recv(c, buf, sizeof(buf))) > 0) apply it;
 *
 * ha_chan_send only queues: the next poll then waits for the socket to be
 * writable and ha_chan_run writes.  Received messages wait in the channel
 * until ha_chan_recv takes them; past HA_CHAN_IN_MAX bytes waiting, the
 * channel reads no more (TCP pushes back on the sender) and does not count
 * the peer silent, until the caller has taken some.  Writes go with
 * MSG_NOSIGNAL (no SIGPIPE).  No global state: any number of channels in
 * one process.  Nothing is logged; ha_chan_why says what went wrong, and
 * never shows key material.
 */
#ifndef DPVPN_HA_CHAN_H
#define DPVPN_HA_CHAN_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#define HA_CHAN_PORT		4510			/* default sync port */
#define HA_CHAN_MSG_MAX		(20 * 1024)		/* largest message */
#define HA_CHAN_IN_MAX		(64 * HA_CHAN_MSG_MAX)	/* received bytes waiting: no more read */
#define HA_CHAN_PSK_MIN		32
#define HA_CHAN_PSK_MAX		64

struct ha_chan_cfg {
	struct sockaddr_storage local;	/* this node's sync address and port: listened on */
	struct sockaddr_storage peer;	/* the other node's */
	const uint8_t *psk;		/* HA_CHAN_PSK_MIN..HA_CHAN_PSK_MAX bytes; not kept */
	size_t psk_len;
	unsigned hb_ms;		/* a heartbeat after this long without sending (0: 100) */
	unsigned dead_ms;	/* down after this long without receiving anything (0: 1000) */
	size_t out_max;		/* bytes queued to send at most (0: 256 MiB) */
};

/* What happened in ha_chan_run, ORed. */
enum {
	HA_CHAN_EV_UP = 1,	/* the handshake finished: send the whole state */
	HA_CHAN_EV_DOWN = 2,	/* a channel that was up went down (ha_chan_why says why) */
	HA_CHAN_EV_MSG = 4,	/* at least one message arrived whole: ha_chan_recv */
};

struct ha_chan;

/*
 * A channel: the configuration checked (addresses of one family, not the
 * same; the key's length; hb_ms below dead_ms), `local` bound (SO_REUSEADDR)
 * and listened on.  NULL, a message in err and errno set on error
 * (EADDRINUSE: another socket has the address).  The connector makes its
 * first attempt in the first ha_chan_run.
 */
struct ha_chan *ha_chan_open(const struct ha_chan_cfg *cfg, char *err, size_t errlen);
/*
 * Close the connection (a TLS close_notify if it was up) and the listener;
 * every buffer that held messages, and the key, wiped.  NULL: nothing.
 * Abrupt: what is queued, or still in the kernel's send buffer, may be lost
 * (a planned handover has the standby confirm, in the codec, before this).
 */
void ha_chan_close(struct ha_chan *c);

/* The descriptors to poll, up to 2 (the listener, the connection): how many
 * were filled, at most max.  Their events change as the channel runs:
 * fill them anew before each poll. */
int ha_chan_pollfds(struct ha_chan *c, struct pollfd *pfd, int max);
/* How long the caller may sleep in poll: ms to the channel's next timer
 * (a reconnect, a heartbeat, the silence deadline), 0 if it has work now,
 * -1 if it has no timer (an acceptor waiting for a connection). */
int ha_chan_timeout_ms(const struct ha_chan *c, uint64_t now_ms);
/*
 * After each poll, whatever its revents: accept, connect, handshake, read,
 * write, heartbeats and deadlines.  now_ms is monotonic (mono.h), never 0.
 * Returns the HA_CHAN_EV_* that happened since the last call, ORed.
 */
int ha_chan_run(struct ha_chan *c, uint64_t now_ms);

/*
 * Queue one message of len bytes (1..HA_CHAN_MSG_MAX) to send: 0;
 * -EMSGSIZE (len 0 or above the largest), -ENOTCONN (not up), -ENOBUFS (the
 * queue would pass out_max: the caller declares the peer behind, e.g. drops
 * the channel and resyncs), -ENOMEM.  Sent by the next ha_chan_run calls.
 */
int ha_chan_send(struct ha_chan *c, const void *msg, size_t len);
/* One whole received message copied to buf: its length; 0 if none waits;
 * -EMSGSIZE if it is longer than cap (it stays first in line). */
ssize_t ha_chan_recv(struct ha_chan *c, void *buf, size_t cap);

bool ha_chan_up(const struct ha_chan *c);
/* Bytes waiting to be sent (frames: 4 bytes of length each included). */
size_t ha_chan_queued(const struct ha_chan *c);
/* Why it is (or last went) down, e.g. "handshake: ... (wrong sync key?)",
 * "peer silent for 1000 ms", "connection from 127.0.0.3 refused: not the
 * peer"; while up, the last such reason. */
const char *ha_chan_why(const struct ha_chan *c);
/* now_ms when it last came up; 0 if it never did. */
uint64_t ha_chan_up_since(const struct ha_chan *c);
/* Connections the acceptor closed unheard: from another address, or a
 * second one while it had a connection. */
uint64_t ha_chan_refused(const struct ha_chan *c);

/*
 * "192.0.2.1", "192.0.2.1:4510", "2001:db8::1", "[2001:db8::1]",
 * "[2001:db8::1]:4510" (numeric only: no names, no scope): 0, or -1 and a
 * message in err.  default_port where the string has none.
 */
int ha_chan_parse_addr(const char *s, uint16_t default_port, struct sockaddr_storage *out,
		       char *err, size_t errlen);

#endif /* DPVPN_HA_CHAN_H */
