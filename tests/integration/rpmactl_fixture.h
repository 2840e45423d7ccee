// rpmactl_test's and rpmactl_data_test's fixture: the real rpmactl binary
// run as a child process against real rpmads on loopback, its JSON parsed.
#ifndef TESTS_INTEGRATION_RPMACTL_FIXTURE_H
#define TESTS_INTEGRATION_RPMACTL_FIXTURE_H

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/integration/rpmactl_outcome.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {

inline constexpr char kToken[] = "rpmactl-test-token";
inline constexpr auto kRunTimeout = std::chrono::seconds(60);

class RpmactlTest : public ::testing::Test {
  protected:
    void SetUp() override {
        name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        home_ = TempPath("home-" + name_);
        std::filesystem::create_directories(home_);
        token_file_ = home_ + "/admin-token";
        std::ofstream(token_file_) << kToken << "\n";
    }

    // A daemon with the admin token (when `with_token`), on a pool of its own.
    std::unique_ptr<Rpmad> Start(bool with_token = true) {
        RpmadOptions options;
        options.pool_dir = TempPath("pool-" + name_ + "-" + std::to_string(started_++));
        if (with_token)
            options.config_yaml = std::string("control:\n  admin_token: \"") + kToken + "\"\n";
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    // rpmactl with `args`, in a HOME of the test's (no config file unless the
    // test writes one) and `env` added.
    Outcome Run(const std::vector<std::string> &args, std::vector<std::string> env = {}) {
        std::vector<std::string> argv = {Runfile("client/rpmactl/rpmactl")};
        argv.insert(argv.end(), args.begin(), args.end());
        for (std::string fixed :
             {"HOME=" + home_, std::string("XDG_CONFIG_HOME="), std::string("RPMACTL_SERVER=")}) {
            const std::string name = fixed.substr(0, fixed.find('=') + 1);
            if (std::none_of(env.begin(), env.end(),
                             [&](const std::string &e) { return e.rfind(name, 0) == 0; }))
                env.push_back(fixed);
        }
        std::string error;
        auto process = Process::Start(argv, env, &error);
        Outcome outcome;
        if (process == nullptr) {
            ADD_FAILURE() << error;
            return outcome;
        }
        auto status = process->Wait(kRunTimeout);
        if (!status) {
            ADD_FAILURE() << "rpmactl did not finish: " << process->Describe();
            status = process->Kill();
        }
        outcome.status = *status;
        outcome.out = process->Stdout();
        outcome.err = process->Stderr();
        outcome.described = process->Describe();
        return outcome;
    }

    // --server for each daemon.
    static std::vector<std::string> Servers(const std::vector<const Rpmad *> &daemons) {
        std::vector<std::string> args;
        for (const Rpmad *d : daemons)
            args.insert(args.end(), {"--server", d->control()});
        return args;
    }

    static std::vector<std::string> Concat(std::vector<std::string> a,
                                           const std::vector<std::string> &b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    }

    std::string name_;
    std::string home_;
    std::string token_file_;
    int started_ = 0;
};

inline v1::Region GetRegion(const Rpmad &rpmad, const std::string &name, grpc::Status *status) {
    v1::GetRegionRequest request;
    request.set_name(name);
    v1::Region region;
    *status = rpmad.Regions()->GetRegion(Rpmad::Context().get(), request, &region);
    return region;
}

// --- the admin subcommands against two live daemons --------------------------

// A self-signed certificate for 127.0.0.1, its own CA; "" or openssl's output.
inline std::string SelfSignedCertificate(const std::string &cert, const std::string &key) {
    std::string error;
    auto openssl =
        Process::Start({"/usr/bin/openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert, "-days",
                        "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
                       {}, &error);
    if (openssl == nullptr)
        return error + " (is openssl installed? tools/install-deps.sh)";
    const auto status = openssl->Wait(std::chrono::seconds(30));
    return status && status->Success() ? "" : openssl->Describe();
}

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_RPMACTL_FIXTURE_H
