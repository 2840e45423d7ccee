// rpmactl's data commands end to end against real rpmads on loopback:
// put/get/verify replicate a file to three daemons and find a replica
// corrupted behind the client library's back; client tokens, a dead
// replica behind a quorum, and bench with its CSV.
#include "tests/integration/rpmactl_fixture.h"

namespace rpma::testing {
namespace {

size_t LinesWith(const std::string &text, const std::string &word) {
    size_t count = 0;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        count += line.find(word) != std::string::npos;
    return count;
}

// put, get and verify open the region through the client library; a
// daemon's refusal reaches the user with the same advice as an admin
// command's (TLS, the admin token, an unreachable address), once per server.
TEST_F(RpmactlTest, DataCommandsSayWhatToDoOncePerServer) {
    const std::string cert = home_ + "/server.pem", key = home_ + "/server.key";
    ASSERT_EQ(SelfSignedCertificate(cert, key), "");
    RpmadOptions options;
    options.pool_dir = TempPath("pool-" + name_);
    options.config_yaml = std::string("control:\n  admin_token: \"") + kToken +
                          "\"\n  tls:\n    cert_file: \"" + cert + "\"\n    key_file: \"" + key +
                          "\"\n";
    std::string error;
    auto secure = Rpmad::Start(options, &error);
    ASSERT_NE(secure, nullptr) << error;
    auto plain = Start();
    ASSERT_NE(plain, nullptr);
    const std::string file = home_ + "/input";
    std::ofstream(file) << std::string(10000, 'x');

    // Plaintext against the TLS port: TLS named, and the flag that fixes it.
    Outcome plaintext =
        Run(Concat(Servers({secure.get()}), {"--timeout", "5", "put", file, "r", "--create"}));
    EXPECT_EQ(plaintext.code(), 3) << plaintext.described;
    EXPECT_NE(plaintext.err.find("--tls"), std::string::npos) << plaintext.err;
    EXPECT_EQ(LinesWith(plaintext.err, secure->control()), 1u) << plaintext.err;
    // TLS with a CA that did not sign the daemon's certificate.
    Outcome untrusted = Run(Concat(Servers({secure.get()}), {"--tls", "--timeout", "5", "verify",
                                                             "r", "--server", plain->control()}));
    EXPECT_EQ(untrusted.code(), 3) << untrusted.described;
    EXPECT_NE(untrusted.err.find("--ca"), std::string::npos) << untrusted.err;
    // --create without the admin token: how to give it.
    Outcome no_token = Run(Concat(Servers({plain.get()}), {"put", file, "r", "--create"}));
    EXPECT_EQ(no_token.code(), 1) << no_token.described;
    EXPECT_NE(no_token.err.find("--admin-token-file"), std::string::npos) << no_token.err;
    EXPECT_EQ(LinesWith(no_token.err, plain->control()), 1u) << no_token.err;
    // One server down among two: its address and what to check, once.
    const std::string nowhere = "127.0.0.1:" + std::to_string(FreePort());
    Outcome down = Run(Concat(Servers({plain.get()}), {"--server", nowhere, "--admin-token-file",
                                                       token_file_, "put", file, "r", "--create"}));
    EXPECT_EQ(down.code(), 3) << down.described;
    EXPECT_NE(down.err.find("check that rpmad runs"), std::string::npos) << down.err;
    EXPECT_EQ(LinesWith(down.err, nowhere), 1u) << down.err;
    EXPECT_EQ(LinesWith(down.err, plain->control()), 0u) << down.err;
}

// --- the data plane: put, get, verify on three replicas ----------------------

TEST_F(RpmactlTest, PutReplicatesAFileGetReadsItBackFromEachAndVerifyFindsCorruption) {
    std::vector<std::unique_ptr<Rpmad>> daemons;
    for (int i = 0; i < 3; ++i) {
        daemons.push_back(Start(/*with_token=*/false));
        ASSERT_NE(daemons.back(), nullptr);
    }
    const auto servers = Servers({daemons[0].get(), daemons[1].get(), daemons[2].get()});
    // Three and a bit chunks, so that the last one is partial.
    const auto bytes = Pattern((3 << 20) + 12345, 3);
    const std::string file = home_ + "/input";
    WriteFile(file, bytes);

    Outcome put = Run(Concat(servers, {"--json", "put", file, "replicated", "--size", "4MiB"}));
    ASSERT_EQ(put.code(), 0) << put.described;
    // Held: a loop over put.json()["replicas"] would read a destroyed
    // temporary (json() parses a new one each call).
    const Json put_json = put.json();
    EXPECT_EQ(put_json["bytes"], bytes.size());
    ASSERT_EQ(put_json["replicas"].size(), 3u);
    for (const Json &replica : put_json["replicas"])
        EXPECT_EQ(replica["state"], "live") << put.out;
    // Not a terminal: progress comes as plain lines on stderr.
    EXPECT_NE(put.err.find("(100%)"), std::string::npos) << put.err;
    EXPECT_EQ(put.err.find('\r'), std::string::npos);

    for (int r = 0; r < 3; ++r) {
        const std::string out = home_ + "/output" + std::to_string(r);
        Outcome get = Run(Concat(servers, {"get", "replicated", std::to_string(bytes.size()), out,
                                           "--replica", std::to_string(r)}));
        ASSERT_EQ(get.code(), 0) << get.described;
        std::ifstream in(out, std::ios::binary);
        std::vector<char> read((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        ASSERT_EQ(read.size(), bytes.size()) << "replica " << r;
        EXPECT_EQ(memcmp(read.data(), bytes.data(), bytes.size()), 0) << "replica " << r;
    }

    // region info shows what the data plane did on each replica: the file
    // written once and read back once.
    Outcome info = Run(Concat(servers, {"region", "info", "replicated"}));
    ASSERT_EQ(info.code(), 0) << info.described;
    for (const char *row : {"bytes written ", "bytes read "}) {
        const size_t at = info.out.find(row);
        ASSERT_NE(at, std::string::npos) << row << "\n" << info.out;
        const std::string line = info.out.substr(at, info.out.find('\n', at) - at);
        const std::string exact = "(" + std::to_string(bytes.size()) + ")";
        size_t replicas = 0;
        for (size_t p = line.find(exact); p != std::string::npos; p = line.find(exact, p + 1))
            ++replicas;
        EXPECT_EQ(replicas, 3u) << line;
    }

    // get --json: one object, the server read from among the replicas.
    Outcome got = Run(Concat(servers, {"--json", "get", "replicated:4096", "100",
                                       home_ + "/json-out", "--replica", "2"}));
    ASSERT_EQ(got.code(), 0) << got.described;
    EXPECT_EQ(got.json()["region"], "replicated");
    EXPECT_EQ(got.json()["offset"], 4096);
    EXPECT_EQ(got.json()["bytes"], 100);
    // Every replica is opened (read-only), to tell which are in sync; the
    // one read from is named.
    ASSERT_EQ(got.json()["replicas"].size(), 3u) << got.out;
    EXPECT_EQ(got.json()["replica"], 2);
    EXPECT_EQ(got.json()["server"], daemons[2]->control());

    // An offset: the second half lands where asked.
    Outcome at_offset = Run(Concat(servers, {"put", file, "replicated:65536"}));
    ASSERT_EQ(at_offset.code(), 0) << at_offset.described;
    Outcome get_back = Run(Concat(servers, {"get", "replicated:65536", "4096", home_ + "/at"}));
    ASSERT_EQ(get_back.code(), 0) << get_back.described;
    std::ifstream at(home_ + "/at", std::ios::binary);
    std::vector<char> head((std::istreambuf_iterator<char>(at)), std::istreambuf_iterator<char>());
    ASSERT_EQ(head.size(), 4096u);
    EXPECT_EQ(memcmp(head.data(), bytes.data(), 4096), 0);

    Outcome same = Run(Concat(servers, {"--json", "verify", "replicated"}));
    ASSERT_EQ(same.code(), 0) << same.described;
    EXPECT_EQ(same.json()["identical"], true);
    EXPECT_EQ(same.json()["ranges"].size(), 0u);

    // Corrupt replica 1 behind the library's back: a session of its own.
    constexpr uint64_t kCorruptAt = (2 << 20) + 100;
    const auto garbage = Pattern(300, 200);
    {
        v1::OpenSessionResponse session;
        ASSERT_TRUE(daemons[1]->OpenSession("replicated", &session).ok());
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        ASSERT_NE(client, nullptr) << rpma_utils_conn_event_2str(event);
        ASSERT_EQ(client->Write(kCorruptAt, garbage), IBV_WC_SUCCESS);
        ASSERT_EQ(client->Flush(kCorruptAt, garbage.size()), IBV_WC_SUCCESS);
        EXPECT_TRUE(client->Disconnect());
    }
    // The garbage bytes that differ from what put wrote.
    std::vector<std::byte> written(bytes.size() + 65536);
    std::copy(bytes.begin(), bytes.begin() + 65536, written.begin());
    std::copy(bytes.begin(), bytes.end(), written.begin() + 65536);
    uint64_t differing = 0;
    for (uint64_t i = 0; i < garbage.size(); ++i)
        differing += garbage[i] != written[kCorruptAt + i];
    ASSERT_NE(differing, 0u);

    // The daemons' 1 MiB extent checksums: the extent that holds the
    // garbage, replica 1 against the other two.
    Outcome differ = Run(Concat(servers, {"--json", "verify", "replicated"}));
    EXPECT_EQ(differ.code(), 1) << differ.described;
    Json report = differ.json();
    EXPECT_EQ(report["identical"], false);
    ASSERT_EQ(report["ranges"].size(), 1u) << differ.out;
    EXPECT_EQ(report["ranges"][0]["offset"], 2 << 20);
    EXPECT_EQ(report["ranges"][0]["length"], 1 << 20);
    EXPECT_EQ(report["ranges"][0]["differing"], Json::array({1}));
    EXPECT_EQ(report["ranges"][0]["agreeing"], Json::array({0, 2}));
    EXPECT_EQ(report["ranges"][0]["differing_bytes"][0]["bytes"], differing) << differ.out;
    EXPECT_EQ(report["replicas"][1]["server"], daemons[1]->control());

    Outcome table = Run(Concat(servers, {"verify", "replicated"}));
    EXPECT_EQ(table.code(), 1) << table.described;
    EXPECT_NE(table.out.find("[2 MiB, 3 MiB)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("replica 1 (" + daemons[1]->control() + ")"), std::string::npos)
        << table.out;
}

// With --quorum 2 of 3 and one daemon gone, put still makes the file
// durable on the other two, names the failed replica, and exits 1 so that a
// script knows a resync is due.
// A daemon that wants a client token to open sessions: put and get pass
// --client-token-file's token on OpenSession (and the admin token on
// CreateRegion); without it the refusal says which flag gives it.
TEST_F(RpmactlTest, DataCommandsPassTheClientTokenAndWithoutItSayHowToGiveIt) {
    const std::string clients = home_ + "/clients";
    std::ofstream(clients) << "backup t-backup\n";
    const std::string client_token = home_ + "/client-token";
    std::ofstream(client_token) << "t-backup\n";
    RpmadOptions options;
    options.pool_dir = TempPath("pool-" + name_);
    options.config_yaml = std::string("control:\n  admin_token: \"") + kToken +
                          "\"\nsessions:\n  client_tokens_file: " + clients + "\n";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    const auto servers = Servers({rpmad.get()});
    const auto bytes = Pattern(10000, 7);
    const std::string file = home_ + "/input";
    WriteFile(file, bytes);

    Outcome put = Run(Concat(servers, {"--admin-token-file", token_file_, "--client-token-file",
                                       client_token, "put", file, "r", "--size", "1MiB"}));
    ASSERT_EQ(put.code(), 0) << put.described;

    const std::string out = home_ + "/output";
    Outcome refused = Run(Concat(servers, {"get", "r", std::to_string(bytes.size()), out}));
    EXPECT_NE(refused.code(), 0) << refused.described;
    EXPECT_NE(refused.err.find("--client-token-file"), std::string::npos) << refused.err;

    Outcome get = Run(Concat(servers, {"--client-token-file", client_token, "get", "r",
                                       std::to_string(bytes.size()), out}));
    ASSERT_EQ(get.code(), 0) << get.described;
    std::ifstream in(out, std::ios::binary);
    std::vector<char> read((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(read.size(), bytes.size());
    EXPECT_EQ(memcmp(read.data(), bytes.data(), bytes.size()), 0);
}

TEST_F(RpmactlTest, PutWithAQuorumReportsADeadReplicaAndStillReplicates) {
    std::vector<std::unique_ptr<Rpmad>> daemons;
    for (int i = 0; i < 3; ++i) {
        daemons.push_back(Start(/*with_token=*/false));
        ASSERT_NE(daemons.back(), nullptr);
    }
    for (const auto &daemon : daemons)
        ASSERT_TRUE(daemon->CreateRegion("q", 1 << 20).ok());
    const auto servers = Servers({daemons[0].get(), daemons[1].get(), daemons[2].get()});
    daemons[2]->process().Kill();

    // Not reached, and not recorded stale either: a read of it is refused
    // with the reason, not as a replica that missed writes.
    Outcome unreached =
        Run(Concat(servers, {"get", "q", "4096", home_ + "/none", "--replica", "2"}));
    EXPECT_EQ(unreached.code(), 1) << unreached.described;
    EXPECT_NE(unreached.err.find("is not known to be in sync ("), std::string::npos)
        << unreached.err;
    EXPECT_NE(unreached.err.find(daemons[2]->control()), std::string::npos) << unreached.err;
    EXPECT_EQ(unreached.err.find("missed writes"), std::string::npos) << unreached.err;

    const auto bytes = Pattern(100000, 9);
    const std::string file = home_ + "/input";
    WriteFile(file, bytes);
    Outcome put = Run(Concat(servers, {"--json", "put", file, "q", "--quorum", "2"}));
    EXPECT_EQ(put.code(), 1) << put.described;
    const Json report = put.json();
    ASSERT_EQ(report["replicas"].size(), 3u) << put.out;
    EXPECT_EQ(report["replicas"][0]["state"], "live");
    EXPECT_EQ(report["replicas"][1]["state"], "live");
    // Not reached when the put opened the region: stale (recorded so).
    EXPECT_EQ(report["replicas"][2]["state"], "stale") << put.out;
    EXPECT_NE(report["replicas"][2]["error"].get<std::string>().find(daemons[2]->control()),
              std::string::npos)
        << put.out;
    EXPECT_NE(put.err.find(daemons[2]->control()), std::string::npos) << put.err;

    for (int r = 0; r < 2; ++r) {
        const std::string out = home_ + "/out" + std::to_string(r);
        Outcome get = Run(Concat(servers, {"get", "q", std::to_string(bytes.size()), out,
                                           "--replica", std::to_string(r)}));
        ASSERT_EQ(get.code(), 0) << get.described;
        std::ifstream in(out, std::ios::binary);
        std::vector<char> read((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
        ASSERT_EQ(read.size(), bytes.size());
        EXPECT_EQ(memcmp(read.data(), bytes.data(), bytes.size()), 0) << "replica " << r;
    }
    // Without the quorum, all three must answer: the put fails as unreachable.
    Outcome all = Run(Concat(servers, {"put", file, "q"}));
    EXPECT_EQ(all.code(), 3) << all.described;
}

TEST_F(RpmactlTest, PutOfAnUnknownRegionSaysHowToCreateItAndAFileThatDoesNotFitIsRefused) {
    auto a = Start(/*with_token=*/false);
    ASSERT_TRUE(a);
    const std::string file = home_ + "/small";
    std::ofstream(file) << std::string(10000, 'x');
    Outcome unknown = Run(Concat(Servers({a.get()}), {"put", file, "absent"}));
    EXPECT_EQ(unknown.code(), 1) << unknown.described;
    EXPECT_NE(unknown.err.find("absent"), std::string::npos) << unknown.err;
    EXPECT_NE(unknown.err.find("--create"), std::string::npos) << unknown.err;

    ASSERT_TRUE(a->CreateRegion("tiny", 4096).ok());
    Outcome too_big = Run(Concat(Servers({a.get()}), {"put", file, "tiny"}));
    EXPECT_EQ(too_big.code(), 1) << too_big.described;
    EXPECT_NE(too_big.err.find("does not fit"), std::string::npos) << too_big.err;
}

// bench measures with 1, 2, ... up to every server (issue #11: "1..N
// replicas"), in the table, the CSV and the JSON.
TEST_F(RpmactlTest, BenchMeasuresEachReplicaCountAndWritesACsvThatPlotShReads) {
    auto a = Start(/*with_token=*/false), b = Start(/*with_token=*/false),
         c = Start(/*with_token=*/false);
    ASSERT_TRUE(a && b && c);
    const auto servers = Servers({a.get(), b.get(), c.get()});
    const std::vector<std::string> small = {"bench",   "--iterations",  "20",
                                            "--sizes", "64,4KiB",       "--stream",
                                            "4MiB",    "--region-size", "4MiB"};
    const std::string csv = home_ + "/bench.csv";
    Outcome bench = Run(Concat(Concat(servers, small), {"--csv", csv}));
    ASSERT_EQ(bench.code(), 0) << bench.described;
    for (const char *column : {"1 REPLICA ", "2 REPLICAS", "3 REPLICAS"})
        EXPECT_NE(bench.out.find(column), std::string::npos) << column << "\n" << bench.out;
    EXPECT_NE(bench.out.find("write+persist (us)  4.0 KiB"), std::string::npos) << bench.out;
    std::ifstream in(csv);
    std::string line;
    std::vector<std::string> lines;
    while (std::getline(in, line))
        lines.push_back(line);
    ASSERT_EQ(lines.size(), 4u);
    // bench/plot.sh reads the write_flush_latency rows: size, then two
    // median/p99 pairs (the whole set, one replica); the counts between
    // follow the ratio.
    EXPECT_EQ(lines[0],
              "workload,size,replicated,replicated_p99,single,single_p99,ratio,replicas_2,"
              "replicas_2_p99");
    EXPECT_EQ(lines[1].rfind("write_flush_latency,64,", 0), 0u) << lines[1];
    EXPECT_EQ(lines[2].rfind("write_flush_latency,4096,", 0), 0u) << lines[2];
    EXPECT_EQ(std::count(lines[2].begin(), lines[2].end(), ','), 8) << lines[2];
    EXPECT_EQ(lines[3].rfind("stream_bandwidth,1048576,", 0), 0u) << lines[3];
    EXPECT_EQ(std::count(lines[3].begin(), lines[3].end(), ','), 8) << lines[3];
    // And it plots, each replica count a series of its own.
    std::string error;
    auto plot = Process::Start({"/bin/bash", Runfile("bench/plot.sh"), csv, home_ + "/bench.png"},
                               {}, &error);
    ASSERT_NE(plot, nullptr) << error;
    auto plotted = plot->Wait(kRunTimeout);
    ASSERT_TRUE(plotted && plotted->Success()) << plot->Describe();
    for (const char *series :
         {"series: all replicas\n", "series: 1 replica\n", "series: 2 replicas\n", "wrote "})
        EXPECT_NE(plot->Stdout().find(series), std::string::npos) << series << plot->Describe();

    Outcome json = Run(Concat(Concat(servers, small), {"--json"}));
    ASSERT_EQ(json.code(), 0) << json.described;
    std::map<std::pair<std::string, uint64_t>, std::vector<size_t>> counts;
    const Json report = json.json();
    for (const Json &result : report["results"])
        counts[{result["workload"].get<std::string>(), result["size"].get<uint64_t>()}].push_back(
            result["replicas"].get<size_t>());
    const std::vector<size_t> each = {1, 2, 3};
    EXPECT_EQ((counts[{"write_persist_latency", 64}]), each) << json.out;
    EXPECT_EQ((counts[{"write_persist_latency", 4096}]), each) << json.out;
    EXPECT_EQ((counts[{"stream_bandwidth", 1 << 20}]), each) << json.out;
    // The region bench created is gone again.
    for (const Rpmad *daemon : {a.get(), b.get(), c.get()}) {
        grpc::Status status;
        GetRegion(*daemon, "rpmactl-bench", &status);
        EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    }

    // --depth keeps that many write + persists outstanding (issue #25) and
    // reports latency and IOPS at that depth for each replica count.
    Outcome deep = Run(Concat(Concat(servers, small), {"--depth", "4"}));
    ASSERT_EQ(deep.code(), 0) << deep.described;
    EXPECT_NE(deep.out.find("depth 4,"), std::string::npos) << deep.out;
    EXPECT_NE(deep.out.find("write+persist (us)  4.0 KiB"), std::string::npos) << deep.out;
    EXPECT_NE(deep.out.find("write+persist IOPS  4.0 KiB"), std::string::npos) << deep.out;
    Outcome deep_json = Run(Concat(Concat(servers, small), {"--depth", "4", "--json"}));
    ASSERT_EQ(deep_json.code(), 0) << deep_json.described;
    // Kept: a range-for over a member of the temporary json() would outlive it.
    const Json parsed = deep_json.json();
    EXPECT_EQ(parsed["depth"].get<int>(), 4) << deep_json.out;
    for (const Json &result : parsed["results"]) {
        if (result["workload"] == "write_persist_latency") {
            EXPECT_GT(result["iops"].get<double>(), 0) << deep_json.out;
        }
    }
    Outcome zero = Run(Concat(Concat(servers, small), {"--depth", "0"}));
    EXPECT_EQ(zero.code(), 2) << zero.described;
    EXPECT_NE(zero.err.find("--depth"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace rpma::testing
