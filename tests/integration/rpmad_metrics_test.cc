// rpmad's Prometheus metrics end to end (issue #23): a real rpmad serving
// metrics.listen on a loopback port it picks, known traffic through the
// control and data planes, a scrape over HTTP, and exact values; then
// promtool, Prometheus' own checker, on the scrape as served.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "rpma_version.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kRegionSize = 1 << 20;

// GET http://address/metrics over a loopback socket: the response's body,
// or "" with *error.
std::string Scrape(const std::string &address, std::string *error) {
    const size_t colon = address.rfind(':');
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to = LoopbackAddress(std::stoi(address.substr(colon + 1)));
    timeval timeout{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    if (connect(fd, reinterpret_cast<sockaddr *>(&to), sizeof(to)) != 0) {
        *error = "cannot connect to " + address;
        close(fd);
        return "";
    }
    // HTTP/1.0: the server closes the connection after the response.
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: " + address + "\r\n\r\n";
    if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
        *error = "cannot send the request";
        close(fd);
        return "";
    }
    std::string response;
    char buffer[65536];
    for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;)
        response.append(buffer, static_cast<size_t>(n));
    close(fd);
    const size_t body = response.find("\r\n\r\n");
    if (!response.starts_with("HTTP/1.") || response.find(" 200 ") > response.find("\r\n") ||
        body == std::string::npos) {
        *error = "not a 200 response: " + response.substr(0, 200);
        return "";
    }
    return response.substr(body + 4);
}

// Every sample of a scrape, by its name and labels as written:
// "rpmad_region_healthy{region=\"journal\"}" -> 1.
std::map<std::string, double> Samples(const std::string &body) {
    std::map<std::string, double> samples;
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line[0] == '#')
            continue;
        const size_t space = line.rfind(' ');
        samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
    return samples;
}

// promtool check metrics on `body`: its output, "" when it found nothing to
// say. No promtool fails the test (it comes with Debian's prometheus package,
// tools/install-deps.sh installs it).
std::string Promtool(const std::string &body) {
    const std::string file = TempPath("scrape.prom");
    std::ofstream(file) << body;
    std::string error;
    auto promtool = Process::Start(
        {"/bin/sh", "-c", "exec promtool check metrics < \"$0\" 2>&1", file}, {}, &error);
    if (promtool == nullptr)
        return error;
    auto status = promtool->Wait(std::chrono::seconds(30));
    if (!status || !status->Success())
        return "promtool failed (is Debian's prometheus package installed?): " +
               promtool->Describe();
    return promtool->Stdout();
}

class RpmadMetricsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        RpmadOptions options;
        options.pool_dir = TempPath(
            "pool-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
        // GPSPM, so that rpmad serves flush requests it can time.
        options.config_yaml = "data:\n  persistence: gpspm\nmetrics:\n  listen: \"127.0.0.1:0\"\n";
        std::string error;
        rpmad_ = Rpmad::Start(options, &error);
        ASSERT_NE(rpmad_, nullptr) << error;
        ASSERT_THAT(rpmad_->metrics(), ::testing::StartsWith("127.0.0.1:"));
    }

    std::map<std::string, double> ScrapeSamples(std::string *body = nullptr) {
        std::string error;
        std::string text = Scrape(rpmad_->metrics(), &error);
        EXPECT_NE(text, "") << error;
        if (body != nullptr)
            *body = text;
        return Samples(text);
    }

    // A session's client, or nullptr with the connection event that ended it.
    std::unique_ptr<SessionClient> Connect(const v1::OpenSessionResponse &session,
                                           rpma_conn_event *event,
                                           std::optional<std::vector<std::byte>> data = {}) {
        return SessionClient::Connect(session, event, std::move(data));
    }

    std::unique_ptr<Rpmad> rpmad_;
};

TEST_F(RpmadMetricsTest, ScrapeAfterKnownTrafficHasExactCountsAndPassesPromtool) {
    const auto before = ScrapeSamples();
    ASSERT_TRUE(rpmad_->CreateRegion("journal", kRegionSize).ok());
    ASSERT_TRUE(rpmad_->CreateRegion("idle", kRegionSize).ok());

    // One connected session: a 4 KiB write, two GPSPM flushes of it, a read.
    v1::OpenSessionResponse session;
    ASSERT_TRUE(rpmad_->OpenSession("journal", &session).ok());
    rpma_conn_event event;
    auto client = Connect(session, &event);
    ASSERT_NE(client, nullptr) << rpma_utils_conn_event_2str(event);
    ASSERT_EQ(client->Write(0, Pattern(4096, 1)), IBV_WC_SUCCESS);
    for (int i = 0; i < 2; ++i) {
        auto flushed = client->GpspmFlush(0, 4096);
        ASSERT_TRUE(flushed.has_value());
        ASSERT_EQ(flushed->status, rpmad::wire::FlushStatus::kOk);
    }
    std::vector<std::byte> read;
    ASSERT_EQ(client->Read(0, 512, &read), IBV_WC_SUCCESS);

    // Three refused connections, each for its own reason; the second
    // session stays pending.
    EXPECT_EQ(Connect(session, &event), nullptr);
    EXPECT_EQ(event, RPMA_CONN_REJECTED);
    v1::OpenSessionResponse wrong;
    ASSERT_TRUE(rpmad_->OpenSession("journal", &wrong).ok());
    wrong.mutable_token()->back() ^= 1;  // the secret's last byte
    EXPECT_EQ(Connect(wrong, &event), nullptr);
    EXPECT_EQ(Connect(session, &event, std::vector<std::byte>(3)), nullptr);

    std::string body;
    const auto after = ScrapeSamples(&body);
    const std::map<std::string, double> expected = {
        {"rpmad_build_info{provider=\"tcp\",version=\"" RPMA_VERSION "\"}", 1},
        {"rpmad_regions", 2},
        {"rpmad_regions_unhealthy", 0},
        {"rpmad_pool_used_bytes", 2 * kRegionSize},
        {"rpmad_sessions", 2},
        {"rpmad_sessions_opened_total", 2},
        {"rpmad_connections", 1},
        {"rpmad_connections_accepted_total", 1},
        {"rpmad_connections_rejected_total{reason=\"malformed\"}", 1},
        {"rpmad_connections_rejected_total{reason=\"wrong_token\"}", 1},
        {"rpmad_connections_rejected_total{reason=\"token_reused\"}", 1},
        {"rpmad_connections_rejected_total{reason=\"token_expired\"}", 0},
        {"rpmad_connections_rejected_total{reason=\"unknown_session\"}", 0},
        {"rpmad_gpspm_flushes_total", 2},
        {"rpmad_gpspm_flushed_bytes_total", 8192},
        {"rpmad_gpspm_flushes_rejected_total", 0},
        {"rpmad_data_plane_counters_available", 1},
        {"rpmad_remote_written_bytes_total", 4096},
        {"rpmad_remote_read_bytes_total", 512},
        {"rpmad_remote_flushes_total", 0},  // GPSPM: no APM flushes
        {"rpmad_region_size_bytes{region=\"journal\"}", kRegionSize},
        {"rpmad_region_healthy{region=\"journal\"}", 1},
        {"rpmad_region_sessions{region=\"journal\"}", 2},
        {"rpmad_region_sessions{region=\"idle\"}", 0},
        {"rpmad_region_remote_written_bytes_total{region=\"journal\"}", 4096},
        {"rpmad_region_remote_read_bytes_total{region=\"journal\"}", 512},
        {"rpmad_region_remote_written_bytes_total{region=\"idle\"}", 0},
        {"rpmad_region_series_omitted", 0},
        {"rpmad_gpspm_flush_duration_seconds_count", 2},
        {"rpmad_gpspm_flush_duration_seconds_bucket{le=\"+Inf\"}", 2},
        {"rpmad_open_session_duration_seconds_count", 2},
    };
    for (const auto &[sample, value] : expected) {
        auto it = after.find(sample);
        ASSERT_NE(it, after.end()) << sample << " missing from\n" << body;
        EXPECT_EQ(it->second, value) << sample;
    }
    // Two creates, one catalog replacement each (the start may have made one).
    EXPECT_EQ(after.at("rpmad_catalog_commit_duration_seconds_count") -
                  before.at("rpmad_catalog_commit_duration_seconds_count"),
              2);
    EXPECT_GT(after.at("rpmad_catalog_commit_duration_seconds_sum"), 0);
    EXPECT_GT(after.at("process_resident_memory_bytes"), 1 << 20);
    EXPECT_GT(after.at("process_open_fds"), 3);
    EXPECT_GT(after.at("process_start_time_seconds"), 1.7e9);
    EXPECT_GT(after.count("process_cpu_seconds_total"), 0u);

    EXPECT_EQ(Promtool(body), "");
}

TEST_F(RpmadMetricsTest, PerRegionSeriesStopAt64RegionsAndTheTotalsCoverAll) {
    constexpr int kRegions = 66;
    for (int i = 0; i < kRegions; ++i) {
        char name[16];
        snprintf(name, sizeof(name), "r%02d", i);
        ASSERT_TRUE(rpmad_->CreateRegion(name, 4096).ok()) << name;
    }
    std::string body;
    const auto samples = ScrapeSamples(&body);
    EXPECT_EQ(samples.at("rpmad_regions"), kRegions);
    EXPECT_EQ(samples.at("rpmad_region_series_omitted"), kRegions - 64);
    int series = 0;
    for (const auto &[sample, value] : samples)
        series += sample.starts_with("rpmad_region_size_bytes{");
    EXPECT_EQ(series, 64);
    // The first by name.
    EXPECT_EQ(samples.count("rpmad_region_size_bytes{region=\"r63\"}"), 1u);
    EXPECT_EQ(samples.count("rpmad_region_size_bytes{region=\"r64\"}"), 0u);
    EXPECT_EQ(Promtool(body), "");
}

}  // namespace
}  // namespace rpma::testing
