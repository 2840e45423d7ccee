// Certificates made at test time with the openssl CLI (package openssl): a
// CA, a server certificate for 127.0.0.1 and localhost, two client
// certificates of the CA, and a client of a second CA nobody trusts.
#ifndef TESTS_INTEGRATION_TEST_PKI_H
#define TESTS_INTEGRATION_TEST_PKI_H

#include <string>

namespace rpma::testing {

struct Pki {
    std::string dir;
    std::string ca, server_cert, server_key, client_cert, client_key;
    std::string second_cert, second_key;                // another client of the CA
    std::string other_ca, stranger_cert, stranger_key;  // a client of the other CA
};

// A P-256 key (dir/name.key) and a certificate (dir/name.pem) for
// `subject`: self-signed when `ca` is empty (a CA), else signed by
// ca/ca_key with the extensions in `extensions`. "" or openssl's output.
std::string MakeCertificate(const std::string &dir, const std::string &name,
                            const std::string &subject, const std::string &ca,
                            const std::string &ca_key, const std::string &extensions);

// Makes them under TempPath("pki"); "" when done, else openssl's output.
std::string MakePki(Pki *pki);

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_TEST_PKI_H
