#include "tests/integration/test_pki.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include "tests/integration/process.h"

namespace rpma::testing {
namespace {

// Runs openssl; "" when it succeeded, its output otherwise.
std::string OpenSsl(const std::vector<std::string> &args) {
    std::vector<std::string> argv = {"/usr/bin/openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string error;
    auto process = Process::Start(argv, {}, &error);
    if (process == nullptr)
        return error + " (is the openssl package installed? tools/install-deps.sh)";
    const auto status = process->Wait(std::chrono::seconds(30));
    return status && status->Success() ? "" : process->Describe();
}

}  // namespace

std::string MakeCertificate(const std::string &dir, const std::string &name,
                            const std::string &subject, const std::string &ca,
                            const std::string &ca_key, const std::string &extensions) {
    const std::string key = dir + "/" + name + ".key", cert = dir + "/" + name + ".pem";
    if (ca.empty())
        return OpenSsl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", subject});
    const std::string csr = dir + "/" + name + ".csr", ext = dir + "/" + name + ".ext";
    std::ofstream(ext) << extensions << "\n";
    std::string failed =
        OpenSsl({"req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-out", csr, "-subj", subject});
    if (!failed.empty())
        return failed;
    return OpenSsl({"x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                    "-out", cert, "-days", "2", "-extfile", ext});
}

std::string MakePki(Pki *pki) {
    pki->dir = TempPath("pki");
    std::filesystem::create_directories(pki->dir);
    const std::string &d = pki->dir;
    for (std::string failed : {
             MakeCertificate(d, "ca", "/CN=rpmad test CA", "", "", ""),
             MakeCertificate(d, "other-ca", "/CN=another CA", "", "", ""),
             MakeCertificate(d, "server", "/CN=localhost", d + "/ca.pem", d + "/ca.key",
                             "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                             "extendedKeyUsage=serverAuth"),
             MakeCertificate(d, "client", "/CN=rpmad test client", d + "/ca.pem", d + "/ca.key",
                             "extendedKeyUsage=clientAuth"),
             MakeCertificate(d, "second", "/CN=second client", d + "/ca.pem", d + "/ca.key",
                             "extendedKeyUsage=clientAuth"),
             MakeCertificate(d, "stranger", "/CN=stranger", d + "/other-ca.pem",
                             d + "/other-ca.key", "extendedKeyUsage=clientAuth"),
         })
        if (!failed.empty())
            return failed;
    pki->ca = d + "/ca.pem";
    pki->server_cert = d + "/server.pem";
    pki->server_key = d + "/server.key";
    pki->client_cert = d + "/client.pem";
    pki->client_key = d + "/client.key";
    pki->second_cert = d + "/second.pem";
    pki->second_key = d + "/second.key";
    pki->other_ca = d + "/other-ca.pem";
    pki->stranger_cert = d + "/stranger.pem";
    pki->stranger_key = d + "/stranger.key";
    return "";
}

}  // namespace rpma::testing
