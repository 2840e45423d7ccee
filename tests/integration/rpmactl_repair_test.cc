// rpmactl and replica sets that remember who is in sync (issue 20), with
// real rpmad processes and the real rpmactl binary:
//  - the scenario: three rpmads, a put with --quorum 2, one rpmad
//    SIGKILLed in the middle of it and restarted; then get --replica of it
//    fails saying it is stale, get without --replica returns exactly the
//    acknowledged bytes, region list/info show it stale (never ok/in-sync),
//    region repair brings it back copying only what differs, verify finds
//    nothing, and every replica reads back exactly the put's bytes;
//  - verify on a replica changed behind the replica set's back (a session
//    of its own): differences coalesced into ranges of aligned extents,
//    the differing bytes counted, --limit, exit 1.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/rpmactl_outcome.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr auto kRunTimeout = std::chrono::seconds(120);
constexpr uint64_t kMiB = 1 << 20;

std::vector<std::byte> RandomBytes(size_t size, uint32_t seed) {
    std::mt19937_64 random(seed);
    std::vector<std::byte> bytes(size);
    for (size_t i = 0; i < size; i += 8) {
        const uint64_t word = random();
        memcpy(bytes.data() + i, &word, std::min<size_t>(8, size - i));
    }
    return bytes;
}

std::vector<std::byte> ReadFile(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

// The first offset where `a` and `b` differ, or -1.
int64_t FirstDifference(const std::vector<std::byte> &a, const std::vector<std::byte> &b) {
    if (a.size() != b.size())
        return static_cast<int64_t>(std::min(a.size(), b.size()));
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i])
            return static_cast<int64_t>(i);
    return -1;
}

// The line of `text` that contains `word` ("" if none).
std::string LineWith(const std::string &text, const std::string &word) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (line.find(word) != std::string::npos)
            return line;
    return "";
}

// `text` says "<prefix>G)" with G a generation number. (Not with
// std::regex: GCC 12 warns inside it under the sanitizers' flags.)
bool SaysStaleSince(const std::string &text,
                    const std::string &prefix = "stale (missed writes since generation ") {
    for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at + 1)) {
        size_t end = at + prefix.size();
        while (end < text.size() && isdigit(static_cast<unsigned char>(text[end])))
            ++end;
        if (end > at + prefix.size() && end < text.size() && text[end] == ')')
            return true;
    }
    return false;
}

class RpmactlRepairTest : public ::testing::Test {
  protected:
    void SetUp() override {
        name_ = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        home_ = TempPath("home-" + name_);
        std::filesystem::create_directories(home_);
    }

    // Daemon i on a pool of its own; again on the same pool and ports when
    // restarted.
    std::unique_ptr<Rpmad> Start(int i, const Rpmad *previous = nullptr) {
        RpmadOptions options;
        // TempPath is a new path each call: the pool is kept for a restart.
        if (pools_[i].empty())
            pools_[i] = TempPath("pool-" + name_ + "-" + std::to_string(i));
        options.pool_dir = pools_[i];
        if (previous != nullptr) {
            options.control_port = previous->control_port();
            options.data_port = previous->data_port();
        }
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    std::vector<std::string> Argv(const std::vector<std::string> &args) const {
        std::vector<std::string> argv = {Runfile("client/rpmactl/rpmactl")};
        for (const Rpmad *d : daemons_)
            argv.insert(argv.end(), {"--server", d->control()});
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
    }

    std::vector<std::string> Env() const {
        return {"HOME=" + home_, "XDG_CONFIG_HOME=", "RPMACTL_SERVER="};
    }

    static Outcome Finish(Process &process) {
        auto status = process.Wait(kRunTimeout);
        if (!status) {
            ADD_FAILURE() << "rpmactl did not finish: " << process.Describe();
            status = process.Kill();
        }
        return {*status, process.Stdout(), process.Stderr(), process.Describe()};
    }

    // rpmactl --server (every daemon) `args`.
    Outcome Run(const std::vector<std::string> &args) {
        std::string error;
        auto process = Process::Start(Argv(args), Env(), &error);
        if (process == nullptr) {
            ADD_FAILURE() << error;
            return {};
        }
        return Finish(*process);
    }

    // What `get` of `length` bytes returns (replica: "" for any in sync).
    Outcome Get(uint64_t length, const std::string &out, const std::string &replica = "") {
        std::vector<std::string> args = {"get", "big", std::to_string(length), out};
        if (!replica.empty())
            args.insert(args.end(), {"--replica", replica});
        return Run(args);
    }

    std::string name_;
    std::string home_;
    std::string pools_[3];
    std::vector<const Rpmad *> daemons_;
};

uint64_t BytesWritten(const Rpmad &rpmad, const std::string &region) {
    v1::GetRegionRequest request;
    request.set_name(region);
    v1::Region answer;
    if (!rpmad.Regions()->GetRegion(Rpmad::Context().get(), request, &answer).ok())
        return 0;
    return answer.bytes_written();
}

// The scenario, end to end.
TEST_F(RpmactlRepairTest, AReplicaKilledMidPutIsStaleUntilRepairedAndRepairCopiesOnlyWhatDiffers) {
    constexpr uint64_t kRegion = 192 * kMiB;
    constexpr uint64_t kFile = 64 * kMiB;
    // Daemon 2 dies once it holds this much of the put.
    constexpr uint64_t kKillAfter = 16 * kMiB;
    std::unique_ptr<Rpmad> d[3];
    for (int i = 0; i < 3; ++i) {
        d[i] = Start(i);
        ASSERT_NE(d[i], nullptr);
    }
    daemons_ = {d[0].get(), d[1].get(), d[2].get()};
    const auto bytes = RandomBytes(kFile, 20);
    const std::string file = home_ + "/big";
    WriteFile(file, bytes);

    // The put, and daemon 2 SIGKILLed in the middle of it.
    std::string error;
    auto put = Process::Start(
        Argv({"--json", "put", file, "big", "--size", std::to_string(kRegion), "--quorum", "2"}),
        Env(), &error);
    ASSERT_NE(put, nullptr) << error;
    uint64_t killed_at = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
        killed_at = BytesWritten(*d[2], "big");
        if (killed_at >= kKillAfter)
            break;
        if (put->Wait(std::chrono::milliseconds(1)))
            break;  // finished before: checked below
    }
    ASSERT_GE(killed_at, kKillAfter)
        << "the put ended before daemon 2 got " << kKillAfter << " bytes: " << put->Describe();
    const ExitStatus killed = d[2]->process().Kill();
    EXPECT_FALSE(killed.exited);
    const Outcome put_outcome = Finish(*put);
    ASSERT_LT(killed_at, kFile) << "daemon 2 was killed after it had the whole file";
    // The put went on with two replicas and said so.
    EXPECT_EQ(put_outcome.code(), 1) << put_outcome.described;
    const Json put_json = put_outcome.json();
    ASSERT_EQ(put_json["bytes"], kFile) << put_outcome.out;
    ASSERT_EQ(put_json["replicas"].size(), 3u);
    EXPECT_EQ(put_json["replicas"][0]["state"], "live");
    EXPECT_EQ(put_json["replicas"][1]["state"], "live");
    EXPECT_NE(put_json["replicas"][2]["state"], "live") << put_outcome.out;
    EXPECT_NE(put_outcome.err.find(d[2]->control()), std::string::npos) << put_outcome.err;

    // Daemon 2 back on its pool, where clients knew it.
    auto restarted = Start(2, d[2].get());
    ASSERT_NE(restarted, nullptr);
    d[2] = std::move(restarted);
    daemons_ = {d[0].get(), d[1].get(), d[2].get()};

    // A fresh get of the stale replica fails, saying why and what to do.
    const std::string out = home_ + "/out";
    const Outcome stale_get = Get(kFile, out, "2");
    EXPECT_EQ(stale_get.code(), 1) << stale_get.described;
    EXPECT_NE(stale_get.err.find("replica 2 (" + d[2]->control() + ")"), std::string::npos)
        << stale_get.err;
    EXPECT_TRUE(SaysStaleSince(stale_get.err, "is stale (missed writes since generation "))
        << stale_get.err;
    EXPECT_NE(stale_get.err.find("rpmactl region repair big"), std::string::npos) << stale_get.err;
    // Without --replica: an in-sync one, exactly the acknowledged bytes.
    const Outcome any_get = Run({"--json", "get", "big", std::to_string(kFile), out});
    ASSERT_EQ(any_get.code(), 0) << any_get.described;
    EXPECT_NE(any_get.json()["replica"], 2) << any_get.out;
    EXPECT_EQ(FirstDifference(ReadFile(out), bytes), -1);

    // region list: stale with the generation, never ok or in-sync.
    const Outcome list = Run({"region", "list"});
    ASSERT_EQ(list.code(), 0) << list.described;
    const std::string row = LineWith(list.out, d[2]->control());
    EXPECT_TRUE(SaysStaleSince(row)) << list.out;
    EXPECT_EQ(row.find(" ok"), std::string::npos) << list.out;
    EXPECT_EQ(row.find("in-sync"), std::string::npos) << list.out;
    for (int i = 0; i < 2; ++i)
        EXPECT_NE(LineWith(list.out, d[i]->control()).find("in-sync"), std::string::npos)
            << list.out;
    const Outcome list_json = Run({"--json", "region", "list"});
    ASSERT_EQ(list_json.code(), 0) << list_json.described;
    const Json listed = list_json.json();
    ASSERT_EQ(listed.size(), 3u) << list_json.out;
    ASSERT_EQ(listed[2]["regions"].size(), 1u) << list_json.out;
    const Json &state = listed[2]["regions"][0]["replica_state"];
    EXPECT_EQ(state["state"], "stale") << list_json.out;
    const uint64_t stale_since = state["stale_since"].get<uint64_t>();
    EXPECT_GT(stale_since, 1u) << list_json.out;
    EXPECT_TRUE(state["trusted"].get<bool>());
    // The restarted daemon's own record still says it is in sync at an
    // older generation: it does not decide.
    EXPECT_LT(state["generation"].get<uint64_t>(), state["newest_generation"].get<uint64_t>())
        << list_json.out;
    EXPECT_EQ(listed[0]["regions"][0]["replica_state"]["state"], "in_sync");

    // region info: generations, the writer, the newest record's members.
    const Outcome info = Run({"region", "info", "big"});
    ASSERT_EQ(info.code(), 0) << info.described;
    EXPECT_NE(LineWith(info.out, "generation ").find(std::to_string(stale_since)),
              std::string::npos)
        << info.out;
    EXPECT_NE(LineWith(info.out, "writer ").find("pid"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("STALE since generation " + std::to_string(stale_since)),
              std::string::npos)
        << info.out;

    // verify before the repair: the stale replica differs, as expected,
    // in one range (or a few) from where it died, not thousands.
    const Outcome before = Run({"--json", "verify", "big"});
    EXPECT_EQ(before.code(), 1) << before.described;
    const Json before_json = before.json();
    EXPECT_EQ(before_json["identical"], false);
    EXPECT_EQ(before_json["in_sync_identical"], true) << before.out;
    ASSERT_GE(before_json["ranges"].size(), 1u) << before.out;
    EXPECT_LE(before_json["ranges_total"].get<size_t>(), 3u) << before.out;
    for (const Json &range : before_json["ranges"]) {
        EXPECT_EQ(range["differing"], Json::array({2})) << before.out;
        EXPECT_EQ(range["agreeing"], Json::array({0, 1})) << before.out;
        EXPECT_GE(range["offset"].get<uint64_t>() + range["length"].get<uint64_t>(), killed_at)
            << before.out;
    }
    const Outcome before_text = Run({"verify", "big"});
    EXPECT_EQ(before_text.code(), 1) << before_text.described;
    EXPECT_NE(before_text.out.find("as expected until it is repaired"), std::string::npos)
        << before_text.out;
    EXPECT_EQ(before_text.out.find("damaged"), std::string::npos) << before_text.out;

    // The repair: only what differs is copied.
    const Outcome repair = Run({"--json", "region", "repair", "big"});
    ASSERT_EQ(repair.code(), 0) << repair.described;
    const Json repaired = repair.json();
    ASSERT_EQ(repaired["repaired"].size(), 1u) << repair.out;
    const Json &one = repaired["repaired"][0];
    EXPECT_EQ(one["replica"], 2);
    EXPECT_EQ(one["result"], "repaired") << repair.out;
    EXPECT_EQ(one["bytes_compared"], kRegion) << repair.out;
    // What daemon 2 missed (the file from where it died, 1 MiB extents),
    // not the region.
    EXPECT_LE(one["bytes_copied"].get<uint64_t>(), kFile - killed_at + 2 * kMiB) << repair.out;
    EXPECT_GT(one["bytes_copied"].get<uint64_t>(), 0u) << repair.out;
    for (const Json &replica : repaired["replicas"])
        EXPECT_EQ(replica["state"], "live") << repair.out;
    EXPECT_GT(repaired["generation"].get<uint64_t>(), stale_since) << repair.out;
    // Not a terminal: progress as plain lines, to 100%.
    EXPECT_NE(repair.err.find("(100%)"), std::string::npos) << repair.err;

    // Idempotent: nothing left to repair.
    const Outcome again = Run({"region", "repair", "big"});
    EXPECT_EQ(again.code(), 0) << again.described;
    EXPECT_NE(again.out.find("nothing to repair"), std::string::npos) << again.out;

    const Outcome after = Run({"--json", "verify", "big"});
    EXPECT_EQ(after.code(), 0) << after.described;
    EXPECT_EQ(after.json()["identical"], true) << after.out;
    EXPECT_EQ(after.json()["ranges"].size(), 0u);
    const Outcome list_after = Run({"region", "list"});
    for (int i = 0; i < 3; ++i)
        EXPECT_NE(LineWith(list_after.out, d[i]->control()).find("in-sync"), std::string::npos)
            << list_after.out;
    for (int i = 0; i < 3; ++i) {
        const Outcome got = Get(kFile, out, std::to_string(i));
        ASSERT_EQ(got.code(), 0) << got.described;
        EXPECT_EQ(FirstDifference(ReadFile(out), bytes), -1) << "replica " << i;
    }
}

// Bytes written into one replica with a session of its own (behind the
// replica set's back): verify coalesces the differing extents into ranges,
// names the replica that differs and those that agree, counts the
// differing bytes, and exits 1.
TEST_F(RpmactlRepairTest, VerifyCoalescesDifferencesOfAReplicaChangedBehindTheSetsBack) {
    std::unique_ptr<Rpmad> d[3];
    for (int i = 0; i < 3; ++i) {
        d[i] = Start(i);
        ASSERT_NE(d[i], nullptr);
    }
    daemons_ = {d[0].get(), d[1].get(), d[2].get()};
    const auto bytes = RandomBytes(6 * kMiB, 7);
    const std::string file = home_ + "/input";
    WriteFile(file, bytes);
    const Outcome put = Run({"put", file, "big", "--size", "8MiB"});
    ASSERT_EQ(put.code(), 0) << put.described;
    const Outcome same = Run({"verify", "big"});
    EXPECT_EQ(same.code(), 0) << same.described;
    EXPECT_NE(same.out.find("identical"), std::string::npos) << same.out;

    // Into replica 1: 100 bytes at the end of extent 1 and 50 at the start
    // of extent 2 (one range), 10 bytes in extent 5 (another).
    struct Change {
        uint64_t offset;
        size_t length;
    };
    const std::vector<Change> changes = {{2 * kMiB - 100, 100}, {2 * kMiB, 50}, {5 * kMiB + 7, 10}};
    uint64_t differing = 0;
    {
        v1::OpenSessionResponse session;
        ASSERT_TRUE(d[1]->OpenSession("big", &session).ok());
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        ASSERT_NE(client, nullptr) << rpma_utils_conn_event_2str(event);
        for (const Change &c : changes) {
            std::vector<std::byte> garbage(c.length);
            for (size_t i = 0; i < c.length; ++i) {
                garbage[i] = ~bytes[c.offset + i];  // every byte differs
                ++differing;
            }
            ASSERT_EQ(client->Write(c.offset, garbage), IBV_WC_SUCCESS);
            ASSERT_EQ(client->Flush(c.offset, garbage.size()), IBV_WC_SUCCESS);
        }
        EXPECT_TRUE(client->Disconnect());
    }

    const Outcome differ = Run({"--json", "verify", "big"});
    EXPECT_EQ(differ.code(), 1) << differ.described;
    const Json report = differ.json();
    EXPECT_EQ(report["identical"], false);
    EXPECT_EQ(report["in_sync_identical"], false);
    EXPECT_EQ(report["extent_size"], kMiB);
    ASSERT_EQ(report["ranges"].size(), 2u) << differ.out;
    const Json &first = report["ranges"][0];
    EXPECT_EQ(first["offset"], kMiB);
    EXPECT_EQ(first["length"], 2 * kMiB);
    EXPECT_EQ(first["differing"], Json::array({1}));
    EXPECT_EQ(first["agreeing"], Json::array({0, 2}));
    EXPECT_EQ(first["differing_bytes"][0]["replica"], 1);
    EXPECT_EQ(first["differing_bytes"][0]["bytes"], 150) << differ.out;
    const Json &second = report["ranges"][1];
    EXPECT_EQ(second["offset"], 5 * kMiB);
    EXPECT_EQ(second["length"], kMiB);
    EXPECT_EQ(second["differing_bytes"][0]["bytes"], 10) << differ.out;
    EXPECT_EQ(differing, 160u);

    // For people: the ranges as aligned extents, the damage named.
    const Outcome table = Run({"verify", "big"});
    EXPECT_EQ(table.code(), 1) << table.described;
    EXPECT_NE(LineWith(table.out, "[1 MiB, 3 MiB)").find("1: 150"), std::string::npos) << table.out;
    EXPECT_NE(LineWith(table.out, "[5 MiB, 6 MiB)").find("1: 10"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("although it is in sync"), std::string::npos) << table.out;

    // Finer extents, fewer printed.
    const Outcome fine = Run({"--json", "verify", "big", "--extent", "4KiB", "--limit", "1"});
    EXPECT_EQ(fine.code(), 1) << fine.described;
    const Json fine_json = fine.json();
    EXPECT_EQ(fine_json["ranges_total"], 2) << fine.out;
    EXPECT_EQ(fine_json["truncated"], true);
    ASSERT_EQ(fine_json["ranges"].size(), 1u);
    EXPECT_EQ(fine_json["ranges"][0]["offset"], 2 * kMiB - 4096);
    EXPECT_EQ(fine_json["ranges"][0]["length"], 8192);
    const Outcome limited = Run({"verify", "big", "--extent", "4KiB", "--limit", "1"});
    EXPECT_NE(limited.out.find("1 more range"), std::string::npos) << limited.out;

    const Outcome bad = Run({"verify", "big", "--extent", "3000"});
    EXPECT_EQ(bad.code(), 2) << bad.described;
}

// The repairing client dies mid-way (SIGKILL): the member stays
// "repairing", never in sync; writers are refused naming the repair,
// readers are not; running repair again takes it over and finishes it.
TEST_F(RpmactlRepairTest, ARepairThatDiesIsShownRepairingAndRunningRepairAgainFinishesIt) {
    constexpr uint64_t kFile = 96 * kMiB;
    std::unique_ptr<Rpmad> d[3];
    for (int i = 0; i < 3; ++i) {
        d[i] = Start(i);
        ASSERT_NE(d[i], nullptr);
    }
    daemons_ = {d[0].get(), d[1].get(), d[2].get()};
    const auto bytes = RandomBytes(kFile, 3);
    const std::string file = home_ + "/big";
    WriteFile(file, bytes);
    // Daemon 2 down for the whole put: it misses all of it.
    const int control_port = d[2]->control_port(), data_port = d[2]->data_port();
    d[2]->process().Kill();
    const Outcome put = Run({"put", file, "big", "--size", "128MiB", "--quorum", "2"});
    ASSERT_EQ(put.code(), 1) << put.described;
    {
        RpmadOptions options;
        options.pool_dir = pools_[2];
        options.control_port = control_port;
        options.data_port = data_port;
        std::string error;
        d[2] = Rpmad::Start(options, &error);
        ASSERT_NE(d[2], nullptr) << error;
    }
    daemons_ = {d[0].get(), d[1].get(), d[2].get()};

    // The repair, SIGKILLed once a majority (daemons 0 and 1) recorded
    // daemon 2 REPAIRING (a record on fewer cannot have counted).
    std::string error;
    auto repair = Process::Start(Argv({"region", "repair", "big"}), Env(), &error);
    ASSERT_NE(repair, nullptr) << error;
    auto recorded_repairing = [](const Rpmad &daemon) {
        v1::GetRegionRequest request;
        request.set_name("big");
        v1::Region region;
        return daemon.Regions()->GetRegion(Rpmad::Context().get(), request, &region).ok() &&
               region.replica_set().members_size() == 3 &&
               region.replica_set().members(2).state() == v1::ReplicaSetMember::STATE_REPAIRING;
    };
    bool repairing = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!repairing && std::chrono::steady_clock::now() < deadline) {
        repairing = recorded_repairing(*d[0]) && recorded_repairing(*d[1]);
        if (!repairing && repair->Wait(std::chrono::milliseconds(1)))
            break;
    }
    ASSERT_TRUE(repairing) << "the repair ended before daemons 0 and 1 recorded 2 repairing: "
                           << repair->Describe();
    EXPECT_FALSE(repair->Kill().exited);

    const Outcome list = Run({"--json", "region", "list"});
    ASSERT_EQ(list.code(), 0) << list.described;
    const Json listed = list.json();
    ASSERT_EQ(listed.size(), 3u);
    ASSERT_EQ(listed[2]["regions"].size(), 1u) << list.out;
    EXPECT_EQ(listed[2]["regions"][0]["replica_state"]["state"], "repairing") << list.out;
    const Outcome table = Run({"region", "list"});
    EXPECT_EQ(LineWith(table.out, d[2]->control()).find("in-sync"), std::string::npos) << table.out;
    EXPECT_NE(LineWith(table.out, d[2]->control()).find("repairing"), std::string::npos)
        << table.out;

    // A writer is refused, saying what to do; a reader is not.
    const Outcome writer = Run({"put", file, "big", "--quorum", "2"});
    EXPECT_NE(writer.code(), 0) << writer.described;
    EXPECT_NE(writer.err.find("being repaired"), std::string::npos) << writer.err;
    EXPECT_NE(writer.err.find("rpmactl region repair big"), std::string::npos) << writer.err;
    const std::string out = home_ + "/out";
    const Outcome reader = Get(kFile, out);
    ASSERT_EQ(reader.code(), 0) << reader.described;
    EXPECT_EQ(FirstDifference(ReadFile(out), bytes), -1);
    EXPECT_EQ(Get(kFile, out, "2").code(), 1);

    // Repair again: taken over, finished.
    const Outcome again = Run({"--json", "region", "repair", "big"});
    ASSERT_EQ(again.code(), 0) << again.described;
    const Json result = again.json();
    ASSERT_EQ(result["repaired"].size(), 1u) << again.out;
    EXPECT_EQ(result["repaired"][0]["replica"], 2);
    EXPECT_EQ(result["repaired"][0]["before"], "stale") << again.out;
    EXPECT_EQ(result["repaired"][0]["result"], "repaired") << again.out;
    EXPECT_LE(result["repaired"][0]["bytes_copied"].get<uint64_t>(), kFile + kMiB) << again.out;
    const Outcome verify = Run({"verify", "big"});
    EXPECT_EQ(verify.code(), 0) << verify.described;
    const Outcome got = Get(kFile, out, "2");
    ASSERT_EQ(got.code(), 0) << got.described;
    EXPECT_EQ(FirstDifference(ReadFile(out), bytes), -1);
}

}  // namespace
}  // namespace rpma::testing
