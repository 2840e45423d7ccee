// The fixture of the rpmad_*_test end-to-end tests that start one rpmad
// each: a real rpmad process on loopback, its control plane over gRPC, its
// data plane through rpma_core's tcp provider, its pool in real files, on
// ports of its own.
#ifndef TESTS_INTEGRATION_RPMAD_FIXTURE_H
#define TESTS_INTEGRATION_RPMAD_FIXTURE_H

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/notify_socket.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {

inline constexpr uint64_t kRegionSize = 1 << 20;

inline RpmadOptions WithConfig(const std::string &yaml) {
    RpmadOptions options;
    options.config_yaml = yaml;
    return options;
}

class RpmadTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pool_dir_ = TempPath(
            "pool-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    }

    std::unique_ptr<Rpmad> StartRpmad(RpmadOptions options = {}) {
        if (options.pool_dir.empty())
            options.pool_dir = pool_dir_;
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    v1::OpenSessionResponse Open(const Rpmad &rpmad, const std::string &region) {
        v1::OpenSessionResponse session;
        const grpc::Status status = rpmad.OpenSession(region, &session);
        EXPECT_TRUE(status.ok()) << status.error_message();
        return session;
    }

    // OpenSession of `region` sending `token` (the admin's or a client's).
    static grpc::Status OpenWithToken(const Rpmad &rpmad, const std::string &region,
                                      const std::string &token,
                                      v1::OpenSessionResponse *out = nullptr) {
        v1::OpenSessionRequest request;
        request.set_region(region);
        v1::OpenSessionResponse response;
        const grpc::Status status =
            rpmad.Sessions()->OpenSession(Rpmad::Context(token).get(), request, &response);
        if (out != nullptr)
            *out = response;
        return status;
    }

    std::unique_ptr<SessionClient> Connect(const v1::OpenSessionResponse &session) {
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        EXPECT_NE(client, nullptr) << "connection ended with " << rpma_utils_conn_event_2str(event);
        return client;
    }

    std::string pool_dir_;
};

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_RPMAD_FIXTURE_H
