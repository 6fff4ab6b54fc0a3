/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ctl_proto.h - the operator protocol between dpvpnctl (or any client) and
 * dpvpnd.
 *
 * Transport: a UNIX SOCK_SEQPACKET socket served by dpvpnd ([control] socket
 * in the config, default CTL_DEFAULT_SOCKET; mode 0600, or 0660 with the
 * [control] group).  dpvpnd checks the client's SO_PEERCRED when it accepts
 * the connection: uid 0, dpvpnd's own euid, or (with a group configured) that
 * group as the primary or a supplementary group.  Anyone else gets one error
 * reply ("permission denied: ...") and the connection is closed.
 *
 * One datagram is one JSON object (UTF-8, no NUL).  A client may send several
 * requests on one connection; each is answered by exactly one reply, in order.
 * (An empty datagram cannot be told from the end of the connection: dpvpnd
 * closes the connection.)
 * Requests are at most CTL_REQ_MAX bytes, replies at most CTL_REPLY_MAX.
 *
 * Requests (those that change something are refused to the read-only group:
 * only uid 0 or dpvpnd's euid may send them):
 *   {"cmd":"status"}
 *   {"cmd":"show","what":"sa"|"tunnels"|"ports"|"counters"|"policies"|"trace"|"routes"
 *          |"neighbours"|"lcores"|"ike"|"ha"}
 *   {"cmd":"show","what":"sa"|"tunnels"|"ports"|"policies"|"routes","first":N}   one page of a
 *                                        table
 *   {"cmd":"route","op":"add"|"del","dst":PREFIX,"port":N,"via":IP|null}
 *   {"cmd":"route","op":"add","dst":PREFIX,"tunnels":[NAME, ...]}   into route-based
 *                                        tunnels (mode = route), 1..8: ECMP over
 *                                        them; replaces dst's route if it has one
 *   {"cmd":"neighbour","op":"add"|"del","port":N,"address":IP,"mac":MAC}
 *   {"cmd":"policy","op":"add"|"del","src":PREFIX,"dst":PREFIX,"spi":"0x..","priority":N}
 *   {"cmd":"sa","op":"del","spi":"0x..","dir":"in"|"out"}   (SAs are added from
 *                                        the config: keys never on a command line)
 *   {"cmd":"reload"}                     re-read the config, apply what changed
 *   {"cmd":"clear"}                      counters shown from now on start at 0 (below)
 *   {"cmd":"tunnel","name":NAME,"state":"up"|"down"}
 *   {"cmd":"ike","op":"initiate"|"terminate"|"rekey"|"rekey-ike","name":NAME}   a
 *                                        keying = ike tunnel's IKE SA; rekey: its CHILD_SA
 *   {"cmd":"ha","role":"master"|"backup"|"fault"}   this node's role in an HA pair
 *                                        (keepalived's notify scripts; doc/ha.md)
 *   {"cmd":"trace","point":"inside-rx"|"pre-encrypt"|"decrypted"|"outside-tx",
 *    "count":1..100000,"file":ABSOLUTE-PATH}   a new pcapng file; "point":"off" stops
 * Any other member is an error, as are a missing or unknown "cmd" or "what".
 *
 * Replies:
 *   {"ok":true,"result":RESULT}
 *   {"ok":false,"error":"message naming the field or the cause"}
 * Errors are never fatal to the connection, except "permission denied".
 *
 * RESULT by request (N is a JSON integer; IP is an address, IPv4 as a dotted
 * quad or IPv6 as inet_ntop writes it (RFC 5952: "2001:db8::1"); PREFIX is
 * "IP/len" of either family ("198.18.1.0/24", "2001:db8:1::/64"); SPIs
 * "0x%08x"):
 *   status:   {"dpvpnd":{"version":"0.1.0","config":PATH,"pid":N},
 *              "dataplane":{"proto_version":N,"ports":N,"workers":N,"sas":N,
 *                           "policies":N,"started":BOOL,"uptime_s":N,
 *                           "crypto":"library and code path"}}
 *   sa:       {"sas":[{"name":"to-b","spi":"0x00001001","dir":"out"|"in",
 *                      "cipher":NAME (dpvpn_alg.h: "aes128-gcm", "aes256-cbc-sha256",
 *                                "chacha20-poly1305", "null-sha256", ...),
 *                      "encrypted":BOOL (false: NULL encryption, traffic in clear),
 *                      "local":IP,"remote":IP (outer: one family),
 *                      "local_ts":PREFIX,"remote_ts":PREFIX (inner: one family,
 *                                either one whatever the outer family is),
 *                      "replay_window":N,
 *                      "seq":N,"packets":N,"bytes":N,
 *                      "drops":{"replay":N,"bad-icv":N,"policy-mismatch":N,
 *                               "seq-exhausted":N,"other":N},
 *                      "last_packet_ms":N|null}, ...]}
 *             (seq, out: the last number used, at most 2^32 - 1 without ESN;
 *              seq-exhausted: packets dropped because it was; ESP dummy
 *              packets, RFC 4303 2.6, are no SA's drop; last_packet_ms: how
 *              long ago the SA last carried a packet, to the poll, null if it
 *              carried none since it was installed)
 *   tunnels:  {"tunnels":[{"name":NAME,"state":"up"|"down",
 *                          "reason":null (up)|"operator"|"refused"|"ike"|"no-sa"|"expired",
 *                          "detail":null (up)|"why, in words",
 *                          "keying":"static"|"ike"|null,
 *                          "mode":"policy"|"route"|null (route: a route-based
 *                                tunnel, routes choose its traffic; its selectors
 *                                are 0.0.0.0/0 and ::/0, local_ts null),
 *                          "rpf":"off"|"loose"|"strict"|null (route-based: the
 *                                reverse path check of what it decrypts),
 *                          "local":IP|null,"remote":IP|null (outer: the peer is remote),
 *                          "cipher":NAME|null,"local_ts":PREFIX|null,"remote_ts":PREFIX|null,
 *                          "local_ts_list":[PREFIX, ...]|null,
 *                          "remote_ts_list":[PREFIX, ...]|null (all of local-ts /
 *                                remote-ts, a list in the config; local_ts and
 *                                remote_ts are their first),
 *                          "ike_state":null (static)|"none"|an ike "state" below,
 *                          "config_error":null|"FILE:LINE: ..." (the config file's
 *                                version of this running tunnel was refused),
 *                          "sas":[{"spi":"0x..","dir":"in"|"out"}, ...],
 *                          "in":WAY,"out":WAY,
 *                          "host_access":BOOL (host-access = yes: what it
 *                                decrypts for the gateway goes to the host),
 *                          "interface":null (policy tunnel)|{"up":BOOL,
 *                                "packets_out":N|null (routed into it),
 *                                "packets_in":N|null (its SAs decrypted and kept),
 *                                "down_drops":N|null (routed to it while down),
 *                                "host_interface":NAME|null (its twin)},
 *                          keying = ike, also (ikd_tunnel_json):
 *                          "ike":ALGS,"esp":ALGS (the IKE SA's and the installed
 *                                CHILD_SA's; proposal null: none negotiated; cipher
 *                                is then the dataplane's name of the ESP one),
 *                          "clients":[CLIENT, ...]|null (remote = %any: its
 *                                clients, show ike's; such a tunnel is up, its
 *                                clients' tunnels "CONN/VIP" listed after it),
 *                          "rekeys":N (its CHILD_SA's rekeys done),
 *                          "last_ike_end":TEXT|null (why its last IKE SA ended,
 *                                whole: for remote = %any, the last client's),
 *                          a client's tunnel: "client":CLIENT (without bytes_in
 *                                and bytes_out: its in and out)}, ...],
 *              "config_refused":null|{"errors":N,"first":"FILE:LINE: ..."}}
 *             with ALGS = {"proposal":TEXT|null (strongSwan's proposal syntax,
 *                          "aes128gcm16-prfsha256-x25519"),"encr":{"id":N,"bits":N,
 *                          "name":TEXT|null},"integ":{"id":N,"name":..},"prf":{..},
 *                          "dh":{..},"esn":BOOL}: names with their IANA numbers
 *             (id 0: none of that kind; name null: none, or not one dpvpn knows);
 *             with WAY = {"packets":N,"bytes":N,"last_packet_ms":N|null}: what
 *             the tunnel's SAs of that direction carried, and the newest of
 *             their last_packet_ms.  Every tunnel of the running config,
 *             every one taken down, and, after a reload that was refused,
 *             every one the refused file names that does not run.  null
 *             members: not known (a tunnel taken down whose config was never
 *             read).  Why a tunnel is down: operator (dpvpnctl tunnel NAME
 *             down, or terminate for keying = ike), refused (named by a
 *             config file a reload refused; config_refused says why, until a
 *             config loads), ike (IKE not established: detail says how far it
 *             got), no-sa (its SAs are not in the dataplane: sa del), expired
 *             (an SA at its hard lifetime).
 *   ports:    {"ports":[{"id":N,"name":"net_af_packet0" (the DPDK device),
 *                        "config":NAME|null (the config's [port NAME] with this id;
 *                                null: the config has none),
 *                        "iface":"eth1"|null (the Linux interface behind the device:
 *                                its if_index, else the vdev's iface=; null: none),
 *                        "role":"inside"|"outside"|"none",
 *                        "address":PREFIX|null (IPv4 "198.18.1.1/24"; null: none),
 *                        "address6":PREFIX|null (IPv6 "2001:db8:1::1/64"; null: none),
 *                        "extra_addresses":PREFIX|null (outside: the IPv4 prefix
 *                                whose every address is the port's too; null: none),
 *                        "mac":"02:00:00:00:00:01","link":"up"|"down",
 *                        "rx_packets":N,"rx_bytes":N,"tx_packets":N,
 *                        "tx_bytes":N,"rx_missed":N,"rx_errors":N,
 *                        "tx_errors":N,"csum_completed":N,
 *                        "host_interface":NAME|null (the port's host twin,
 *                                host-interface; null: none),
 *                        "host_link":"up"|"down"|null (the twin's Linux link;
 *                                down: what is for the host is host-down),
 *                        "host_in":N,"host_out":N (frames written into the twin,
 *                                read from it)}, ...]}
 *             rx_missed: frames the port received that never reached the
 *             dataplane: the device's own count (imissed) where it keeps one;
 *             for net_af_packet (DPDK 22.11 keeps none) what the Linux
 *             interface received since START (rx_packets + rx_dropped of its
 *             /sys/class/net/IFACE/statistics) minus what the device delivered
 *             since then: the socket ring's overflow.  Exact once traffic
 *             pauses; while frames wait in the ring it may read high by up to
 *             the ring's size (it is computed when asked, never below 0).
 *             csum_completed: TCP/UDP packets from the hosts of an inside port
 *             whose checksum the sender left to offload (the field held the
 *             pseudo-header sum only, Linux's CHECKSUM_PARTIAL over a veth or
 *             tap), finished by the dataplane before encryption
 *   counters: {"rx_packets":N,"tx_packets":N,"encrypted":N,"decrypted":N,
 *              "arp_in":N,"arp_out":N,"handoff":N,"replay_late":N,"icmp_out":N,
 *              "icmp_limited":N,"fragments":N,"fragmented":N,"mss_clamped":N,
 *              "frag_in":N,
 *              "reassembled":N,"reass_dropped":N,"ike_in":N,"ike_out":N,
 *              "mbufs_in_use":N,"mbufs_total":N,
 *              "icmp_echo":N,"neigh_queued":N,"neigh_held":N,
 *              "host_in":N,"host_out":N,
 *              "drops":{"no-role":N, ...}}   every reason the dataplane counts,
 *              in DPVPN_DROP_REASONS order (include/dpvpn_proto.h); reasons
 *              newer than dpvpnd are named "reason-INDEX".
 *              icmp_echo: ICMP / ICMPv6 echo replies the gateway sent (ping
 *              to one of its addresses; those over the rate limit are the
 *              echo-limit drops).  neigh_queued: packets held while ARP /
 *              Neighbour Discovery resolved their next hop (then sent, or
 *              dropped as neigh-timeout / no-neighbour); neigh_held: how many
 *              are held now (a gauge, not reset by clear): received + made =
 *              sent + drops + consumed + neigh_held.
 *              host_in: frames written to the ports' host interfaces
 *              (host-interface; the ARP / ND replies they get a copy of are
 *              not counted here); host_out: frames the host sent through
 *              them, sent out of the port or dropped under a reason.
 *              replay_late: of the replay drops, those left of the window
 *              (late: reordered or delayed past it), not repeated
 *   policies: {"policies":[{"src":PREFIX,"dst":PREFIX (one family),
 *                           "spi":"0x00001001","priority":N}, ...]}
 *   routes:   {"routes":[{"dst":PREFIX,"port":N|null,"via":IP|null,
 *                         "tunnels":[NAME, ...]|null}, ...]}
 *             a route out a port: port (and via, null: on-link), tunnels null;
 *             into route-based tunnels: tunnels (several: ECMP, each flow on
 *             one, the flows of one that is down on the next one up), port
 *             and via null.  A name "#N": tunnel interface N, which the
 *             dataplane no longer has
 *   lcores:   {"lcores":[{"lcore":N,"role":"main"|"worker","rx_packets":N,"tx_packets":N,
 *                         "encrypted":N,"decrypted":N,"drops":N,"busy":0..1}, ...]}
 *             busy: the share of poll cycles that found work (a JSON real),
 *             since the last clear if one was done
 *   neighbours: {"neighbours":[{"port":N,"address":IP,"mac":MAC|null,"static":BOOL}, ...]}
 *   ike:      {"sas":[{"name":NAME,"state":"init-sent"|"half-open"|"auth-sent"|"established"
 *                      |"deleting","role":"initiator"|"responder","spi_i":HEX16,
 *                      "spi_r":HEX16,"local":"IP:PORT","remote":"IP:PORT","encr_bits":N,
 *                      "dh":N,"nat_local":BOOL,"nat_remote":BOOL,
 *                      "child":{"spi_in":"0x..","spi_out":"0x.."}|null,"rx":N,"tx":N,
 *                      "retransmits":N,"child_rekeys":N,"udp_encap":BOOL,
 *                      "ike_rekeys":N,"rekey_collisions":{"total":N,"won":N,
 *                      "lost":N},"children":[CHILD, ...],
 *                      "encr":N,"integ":N,"prf":N (IANA numbers),
 *                      "proposal":TEXT|null,"algorithms":ALGS (show tunnels':
 *                      the names)}, ...],
 *                      (state also "rekeyed": replaced)
 *             CHILD = {"name":TUNNEL,"up":true,"spi_in":"0x..","spi_out":"0x..",
 *                      "dh":N,"local_ts":[PREFIX, ...],"remote_ts":[PREFIX, ...],
 *                      "rekeys":N,
 *                      "age_s":N,"proposal":TEXT (its ESP algorithms, strongSwan's
 *                      syntax)} | {"name":TUNNEL,"up":false}: every CHILD_SA
 *             of the IKE SA, the IKE_AUTH one first, then those of ike-sa
 *             tunnels (made by CREATE_CHILD_SA; up false: being made, or
 *             refused and asked again later); name: the [tunnel] it is of;
 *             dh: the PFS group of the exchange that made it (0: none);
 *             local_ts/remote_ts: as narrowed, every prefix; age_s: since made or last
 *             rekeyed; "child" and "child_rekeys" above: the first one's and
 *             all of theirs
 *             rekey_collisions: CHILD_SA or IKE SA rekeys of ours that crossed
 *             the peer's (RFC 7296 2.8.1, 2.8.2), both made, on this IKE SA and
 *             those it replaced; "won": the peer's exchange had the lowest
 *             nonce, its SA went, "lost": ours had, we deleted ours
 *              "clients":[{"name":"CONN/VIP","conn":CONN,"identity":ID|null,"outer":"IP:PORT",
 *                          "vip":PREFIX,"spi_in":"0x..","spi_out":"0x..","rekeys":N,
 *                          "bytes_in":N,"bytes_out":N,"proposal":TEXT|null,
 *                          "since_s":N}, ...] (CLIENT)
 *                         remote = %any: one per client CHILD_SA installed, a
 *                         dataplane tunnel of its own named CONN/VIP (its SAs
 *                         carry that name in show sa); outer: the client's
 *                         address and IKE port; vip: its lease (/32, /128);
 *                         identity: its IDi ("fqdn:NAME", "email:ADDR", an IP,
 *                         a DN as "/C=../CN=..", else "keyid:HEX"/"id:HEX");
 *                         bytes: the dataplane's counters of its current SAs
 *                         (inner bytes since their install, not cleared);
 *                         proposal: its CHILD_SA's ESP algorithms; since_s:
 *                         seconds since its tunnel was installed
 *              "stats":{"rx":N,"tx":N,"retransmits":N,"resent_responses":N,
 *                       "late_responses":N,  (answers to requests of ours that
 *                       were answered already: a retransmission crossed the
 *                       first answer; ignored, no error)
 *                       "half_open_expired":N,"rejected":{"malformed":N, ...},
 *                       "fragments":{"tx":N,"rx":N,"reassembled":N,
 *                         "dropped":{"not-negotiated":N,"malformed":N,"icv-fail":N,
 *                         "total-changed":N,"duplicate":N,"too-big":N,
 *                         "superseded":N,"timeout":N,"late":N}},
 *                       fragments: IKE fragmentation (RFC 7383): fragments sent,
 *                       fragments received that authenticated, messages put
 *                       together from them, and fragments dropped by reason
 *                       (too-big: over 32 fragments or 64 KiB; superseded: a
 *                       newer message's came; timeout: incomplete after 10 s;
 *                       late: of a request answered already, other than the
 *                       first, which has the response sent again)
 *                       "after_end":N,  (messages for an IKE SA that ended
 *                       here lately, one of the last 32: the answer to the
 *                       Delete a reload sent, a retransmission; no error)
 *                       "initial_contact":N,  (IKE SAs ended because the peer
 *                       said INITIAL_CONTACT in a new one: it started again)
 *                       "pool_exhausted":N,"cp_missing":N},  (remote = %any:
 *                       clients answered INTERNAL_ADDRESS_FAILURE, the pool
 *                       being used up, or FAILED_CP_REQUIRED, no address asked)
 *              "channel":{"open":BOOL,"tx_refused":N,"tx_failed":N,"rx_bad":N}}
 *             (an error if no tunnel has keying = ike)
 *   trace:    {"active":BOOL,"point":POINT|"off","last_point":POINT|null,"wanted":N,
 *              "captured":N,"written":N,"lost":N}
 *             (point: where one is capturing now; last_point: the running or
 *              last trace's, null if none since the dataplane started: the
 *              counts are its)
 *   reload, tunnel: {"message":"what was done" (with the counts: "reloaded: N tunnels
 *                      added, N removed, N changed, N unchanged, N repaired; ..."),
 *              "added":[NAME, ...],"removed":[...],"changed":[...],"repaired":[...],
 *              "unchanged":[...]}   each tunnel of the old and the new config once,
 *              under what was done to it: "added" new in the config (or brought
 *              up), "removed" gone from it (or taken down), "changed" changed in it
 *              and installed anew, "repaired" not changed in it, but the dataplane
 *              lacked its SAs or policy, or held them otherwise (changed behind
 *              dpvpnd's back): the missing part installed again, "unchanged" not
 *              touched.  A second tunnel NAME down answers "already down" with
 *              every list empty; tunnel NAME up reloads (so repairs) even when
 *              NAME is up ("already up")
 *   clear, trace, route, neighbour, policy, sa: {"message":"what was done"};
 *              a reload (or tunnel) refused for errors in the config answers
 *              an error of lines: "refused, running config kept (N errors):",
 *              then one "FILE:LINE: message" per line (as many as fit, then
 *              "... and N more")
 * sa, tunnels, ports, policies and routes are tables that may outgrow one reply: each reply
 * holds at most CTL_PAGE entries, from index "first" (default 0) on, and adds
 * "first":N and "total":N (entries in the table now); a client asks again
 * with "first" + the entries it got until it has "total" (dpvpnctl does).
 * A table that changes between pages may show an entry twice or not at all.
 * The sa objects also carry "encap":"esp"|"udp LOCAL->REMOTE", "esn":BOOL,
 * "df":"copy"|"set"|"clear", "mtu":N, "mss":N|null (off),
 * "fragment":"inner"|"outer" and
 *   "life":{"state":"ok"|"soft"|"hard","age_s":N,
 *           "soft_left":LEFT,"hard_left":LEFT}
 *   with LEFT = {"bytes":N|null,"packets":N|null,"seconds":N|null} (null: no
 *   such limit).
 *
 * "show" queries the dataplane at the time of the request; when it fails the
 * reply is an error naming the dataplane's message.
 *
 * clear: the counters of show counters, sa (packets, bytes, drops), tunnels,
 * ports (packets, bytes, rx_missed, errors, csum_completed) and lcores
 * (packets, drops, and the cycles busy is computed from) are shown from then
 * on less what they were at the clear: dpvpnd keeps that baseline, the
 * dataplane's counters run on.  Not cleared: gauges (mbufs_in_use), sequence
 * numbers, lifetimes (what an SA has left is counted from its install), IKE
 * counters (show ike), and the metrics endpoint, whose counters stay raw (a
 * Prometheus counter only grows).  An SA installed after the clear counts from
 * 0 anyway; a dataplane that restarts takes the baselines with it.
 */
#ifndef DPVPN_CONTROL_CTL_PROTO_H
#define DPVPN_CONTROL_CTL_PROTO_H

#define CTL_DEFAULT_SOCKET	"/run/dpvpn/dpvpnd.sock"
#define CTL_REQ_MAX		65536		/* bytes of one request */
#define CTL_REPLY_MAX		(1 << 20)	/* bytes of one reply */
#define CTL_PAGE		512		/* table entries in one reply (< 1 KiB each) */

#endif /* DPVPN_CONTROL_CTL_PROTO_H */
