#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# control/testdata/make_pki.sh: (re)make the certificate fixtures of
# test_config.c's auth = pubkey cases in pki/ with the openssl CLI.  The
# config loader checks that files parse and that the key is the
# certificate's, not dates: the fixtures are valid for 100 years anyway.
# These keys are test fixtures, public by being here: never use them.
set -eu
cd "$(dirname "$0")/pki"
days=36500
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key \
	-subj "/CN=Test CA/O=Example" -days $days -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout gw.key \
	-subj "/CN=gw.example.org/O=Example" -out gw.csr 2>/dev/null
printf 'subjectAltName=DNS:gw.example.org\n' > gw.ext
openssl x509 -req -in gw.csr -CA ca.pem -CAkey ca.key -set_serial 7 -days $days \
	-extfile gw.ext -out gw.pem 2>/dev/null
openssl genpkey -algorithm ed25519 -out other.key
# An empty CRL of the CA.
printf '' > index.txt
cat > ca.cnf <<CNF
[ca]
default_ca = d
[d]
database = index.txt
crlnumber = crlnumber
default_md = sha256
default_crl_days = $days
CNF
echo 01 > crlnumber
openssl ca -config ca.cnf -gencrl -keyfile ca.key -cert ca.pem -out crl.pem 2>/dev/null
rm -f gw.csr gw.ext index.txt* crlnumber* ca.cnf ca.key
