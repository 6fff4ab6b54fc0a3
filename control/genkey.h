/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * genkey.h - dpvpnctl genkey: new random key files that dpvpnd takes as
 * they are (dpvpn.conf(5) *-key-file, psk-file).
 */
#ifndef DPVPN_CONTROL_GENKEY_H
#define DPVPN_CONTROL_GENKEY_H

/* dpvpnctl genkey ARGS, argv[0] being "genkey"; returns the exit status. */
int genkey_main(int argc, char **argv);

#endif /* DPVPN_CONTROL_GENKEY_H */
