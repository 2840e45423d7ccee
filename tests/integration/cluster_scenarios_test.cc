// Cluster mode under faults, with a history checker (cluster_history.h):
// three etcd members, five rpmads in three zones, a region of 3 replicas and
// one writer with quorum 2 in a process of its own (cluster_child_writer)
// writing and reading slots of 4 KiB. At the end of each scenario every
// read was at least as new as the writes acknowledged before it, and every
// in-sync replica holds the same bytes in every slot: the latest
// acknowledged write's or a later unacknowledged one's.
//  a. a replica's rpmad SIGKILLed and restarted: repaired by the writer;
//  b. one killed for good: its replica placed elsewhere and copied;
//  c. the writer SIGSTOPped past its lease, a second takes over, the first
//     continued: nothing it writes after the takeover is acknowledged or
//     lands;
//  d. the writer SIGKILLed mid-stream, a second takes over: the replicas
//     agree on the slots the first had in flight;
//  e. one etcd member killed: the writes go on; two: the writes go on, a
//     region create fails until they are back;
//  f. a replica's data plane cut (cut_proxy.h): recorded stale, the writes
//     go on, repaired once healed.
// Each scenario runs once per round with a seed of its own (printed);
// RPMA_SCENARIO_ROUNDS (default 1) and RPMA_SCENARIO_SEED (default: random)
// make the long randomised mode (README.md, "Cluster mode").
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/cluster_fixture.h"
#include "tests/integration/cluster_history.h"
#include "tests/integration/cut_proxy.h"

namespace rpma::testing {
namespace {

constexpr size_t kSlots = 32;
constexpr size_t kStep = 20;                 // acknowledged writes between two events
constexpr uint64_t kSecondWriter = 1000000;  // first version of a second writer
constexpr auto kSettle = std::chrono::seconds(60);

uint64_t EnvOr(const char *name, uint64_t fallback) {
    const char *value = std::getenv(name);
    return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : fallback;
}

std::string ReadFile(const std::string &path) {
    std::ifstream in(path);
    std::stringstream all;
    all << in.rdbuf();
    return all.str();
}

size_t Count(const std::string &log, const std::string &prefix) {
    size_t n = 0;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
        n += line.rfind(prefix, 0) == 0;
    return n;
}

// A cluster_child_writer and its log.
struct Writer {
    std::unique_ptr<Process> process;
    std::string log, stop;
    std::string History() const { return ReadFile(log); }
    size_t Acks() const { return Count(History(), "ack w "); }
};

class ClusterScenarioTest : public ClusterTest, public ::testing::WithParamInterface<int> {
  protected:
    void SetUp() override {
        seed_ = EnvOr("RPMA_SCENARIO_SEED", std::random_device()()) + GetParam();
        std::cout << "scenario seed " << seed_ << " (RPMA_SCENARIO_SEED=" << seed_ - GetParam()
                  << ", round " << GetParam() << ")" << std::endl;
        RecordProperty("seed", std::to_string(seed_));
        random_.seed(seed_);
        ClusterTest::SetUp();
        if (HasFatalFailure())
            return;
        ASSERT_EQ(Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"}).code, 0);
    }

    Writer StartWriter(uint64_t first_version) {
        Writer w;
        const std::string n = std::to_string(writers_++);
        w.log = TempPath("writer-" + n + ".log");
        w.stop = TempPath("writer-" + n + ".stop");
        std::string error;
        w.process =
            Process::Start({Runfile("tests/integration/cluster_child_writer"), etcd_->Endpoints(),
                            "log", w.log, w.stop, std::to_string(seed_), std::to_string(kSlots),
                            std::to_string(first_version), std::to_string(kLeaseSeconds), "3000"},
                           {}, &error);
        EXPECT_NE(w.process, nullptr) << error;
        return w;
    }

    // Waits for `more` acknowledged writes than `w` has now (a random few
    // more, by the seed, so the events fall at different points).
    void AwaitAcks(const Writer &w, size_t more = kStep) {
        const size_t target = w.Acks() + more + random_() % more;
        ASSERT_TRUE(Eventually([&] { return w.Acks() >= target; }, kSettle))
            << w.Acks() << " of " << target << " acknowledged:\n"
            << Tail(w.History());
    }

    static std::string Tail(const std::string &log) {
        return log.size() > 2000 ? log.substr(log.size() - 2000) : log;
    }

    void StopWriter(Writer &w) {
        std::ofstream(w.stop) << "stop\n";
        const auto status = w.process->Wait(std::chrono::seconds(30));
        ASSERT_TRUE(status.has_value()) << "the writer did not stop";
        EXPECT_TRUE(status->exited && status->code == 0) << Tail(w.History());
    }

    // Stops `pid` and waits until it is stopped (state T in /proc).
    static void Pause(pid_t pid) {
        ASSERT_EQ(kill(pid, SIGSTOP), 0);
        ASSERT_TRUE(Eventually([&] {
            const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
            const size_t paren = stat.rfind(')');
            return paren != std::string::npos && stat.size() > paren + 2 && stat[paren + 2] == 'T';
        }));
    }

    size_t MemberNode(int member) {
        return IndexOf(Region("log")->replica_set().members(member).daemon_id());
    }

    v1::ReplicaSetMember::State MemberState(const std::string &node) {
        const auto record = Region("log");
        for (const auto &m : record->replica_set().members())
            if (m.daemon_id() == node)
                return m.state();
        return v1::ReplicaSetMember::STATE_UNSPECIFIED;
    }

    void AwaitAllInSync() {
        EXPECT_TRUE(Eventually([&] { return AllInSync("log"); }, kSettle))
            << rpma::cluster::ToJson(*Region("log")) << "\n"
            << Rpmactl({"cluster", "status"}).out;
    }

    // The checks of the history made of `logs` (writers one after the
    // other): its reads, then every in-sync replica read by a reader.
    void CheckHistory(const std::vector<std::string> &logs) {
        std::vector<Op> history;
        for (const auto &log : logs) {
            std::string error;
            ASSERT_TRUE(ParseHistory(log, &history, &error)) << error;
        }
        std::cout << "checking " << history.size() << " operations" << std::endl;
        EXPECT_GE(history.size(), 2 * kStep);
        EXPECT_EQ(CheckReads(history), "") << "seed " << seed_;
        rpma::client::OpenOptions read_only;
        read_only.read_only = true;
        auto reader = Open("log", read_only);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        std::vector<std::vector<std::byte>> images;
        const auto replicas = (*reader)->replicas();
        for (size_t i = 0; i < replicas.size(); ++i) {
            if (replicas[i].state != rpma::client::ReplicaState::kLive)
                continue;
            std::vector<std::byte> image(kSlots * kBlock);
            const auto s = (*reader)->Read(0, image, i);
            ASSERT_TRUE(s.ok()) << s.ToString();
            images.push_back(std::move(image));
        }
        EXPECT_EQ(images.size(), 3u) << "replicas in sync";
        EXPECT_EQ(CheckFinal(history, kSlots, seed_, images), "") << "seed " << seed_;
    }

    uint64_t seed_ = 0;
    std::mt19937_64 random_;
    int writers_ = 0;
};

// Nodes that replace a dead one's replicas after 3 s.
class ClusterReplaceScenarioTest : public ClusterScenarioTest {
  protected:
    int ReplaceAfter() const override { return kLeaseSeconds; }
};

const auto kRounds = ::testing::Range(0, static_cast<int>(EnvOr("RPMA_SCENARIO_ROUNDS", 1)));
INSTANTIATE_TEST_SUITE_P(Rounds, ClusterScenarioTest, kRounds);
INSTANTIATE_TEST_SUITE_P(Rounds, ClusterReplaceScenarioTest, kRounds);

TEST_P(ClusterScenarioTest, AKilledReplicaRestartedIsRepairedByTheWriter) {
    const size_t victim = MemberNode(static_cast<int>(random_() % 3));
    const std::string node = NodeId(*daemons_[victim]);
    Writer w = StartWriter(1);
    AwaitAcks(w);
    daemons_[victim]->process().Kill();
    AwaitAcks(w);  // quorum 2 of the other two
    daemons_[victim] = StartNode(victim);
    ASSERT_NE(daemons_[victim], nullptr);
    AwaitAllInSync();
    AwaitAcks(w);
    StopWriter(w);
    EXPECT_NE(MemberState(node), v1::ReplicaSetMember::STATE_UNSPECIFIED) << "repaired in place";
    CheckHistory({w.History()});
}

TEST_P(ClusterReplaceScenarioTest, ANodeDeadForGoodHasItsReplicaPlacedElsewhere) {
    const size_t victim = MemberNode(static_cast<int>(random_() % 3));
    const std::string node = NodeId(*daemons_[victim]);
    Writer w = StartWriter(1);
    AwaitAcks(w);
    daemons_[victim]->process().Kill();
    AwaitAcks(w);
    EXPECT_TRUE(Eventually(
        [&] {
            return MemberState(node) == v1::ReplicaSetMember::STATE_UNSPECIFIED && AllInSync("log");
        },
        kSettle))
        << rpma::cluster::ToJson(*Region("log"));
    AwaitAcks(w);
    StopWriter(w);
    CheckHistory({w.History()});
}

TEST_P(ClusterScenarioTest, APausedWriterPastItsLeaseLandsNothingAfterTheTakeover) {
    Writer first = StartWriter(1);
    AwaitAcks(first);
    Pause(first.process->pid());
    // What it had done when paused: at most its last invoked write may
    // still be acknowledged (it was under way), nothing after.
    std::string before = first.History();
    Writer second = StartWriter(kSecondWriter);
    AwaitAcks(second);
    ASSERT_EQ(kill(first.process->pid(), SIGCONT), 0);
    const auto status = first.process->Wait(std::chrono::seconds(30));
    ASSERT_TRUE(status.has_value()) << "the fenced writer went on:\n" << Tail(first.History());
    EXPECT_NE(status->code, 0) << "its writes were acknowledged after the takeover";
    const std::string after = first.History().substr(before.size());
    std::vector<Op> pending, later;
    std::string error;
    ASSERT_TRUE(ParseHistory(before, &pending, &error)) << error;
    ASSERT_TRUE(ParseHistory(after, &later, &error)) << error;
    for (const Op &op : later) {
        if (op.kind != Op::kAckWrite)
            continue;
        // Only the write under way when it was paused may end acknowledged.
        ASSERT_FALSE(pending.empty());
        EXPECT_TRUE(pending.back().kind == Op::kInvokeWrite && pending.back().version == op.version)
            << "acknowledged after the takeover: w " << op.slot << " " << op.version;
        before += "ack w " + std::to_string(op.slot) + " " + std::to_string(op.version) + "\n";
    }
    AwaitAcks(second);
    StopWriter(second);
    // The first writer's history stops where it was paused: a version it
    // invoked later found on a replica is one the checker never saw invoked.
    CheckHistory({before, second.History()});
}

TEST_P(ClusterScenarioTest, AWriterKilledMidStreamIsTakenOverAndTheReplicasAgree) {
    Writer first = StartWriter(1);
    AwaitAcks(first);
    first.process->Kill();
    Writer second = StartWriter(kSecondWriter);
    AwaitAcks(second);
    StopWriter(second);
    AwaitAllInSync();
    CheckHistory({first.History(), second.History()});
}

TEST_P(ClusterScenarioTest, LosingEtcdMembersStopsNoWriteAndMembershipChangesWaitForThem) {
    Writer w = StartWriter(1);
    AwaitAcks(w);
    const size_t one = random_() % 3, two = (one + 1) % 3;
    etcd_->Kill(one);
    AwaitAcks(w);
    etcd_->Kill(two);
    AwaitAcks(w);
    const Outcome refused = Rpmactl({"region", "create", "other", "1MiB", "--replicas", "3"});
    EXPECT_NE(refused.code, 0) << refused.describe;
    EXPECT_FALSE(refused.err.empty()) << "a create without etcd's quorum says why";
    std::string error;
    ASSERT_TRUE(etcd_->Restart(one, &error, false)) << error;
    ASSERT_TRUE(etcd_->Restart(two, &error)) << error;
    AwaitAcks(w);
    const Outcome created = Rpmactl({"region", "create", "other", "1MiB", "--replicas", "3"});
    EXPECT_EQ(created.code, 0) << created.describe;
    StopWriter(w);
    CheckHistory({w.History()});
}

TEST_P(ClusterScenarioTest, AReplicaCutOffIsRecordedStaleAndRepairedOnceHealed) {
    const size_t victim = MemberNode(static_cast<int>(random_() % 3));
    const std::string node = NodeId(*daemons_[victim]);
    // Its data plane again on the same port, advertised through the proxy.
    const int data_port = daemons_[victim]->data_port();
    daemons_[victim]->process().Kill();
    daemons_[victim].reset();
    CutProxy proxy(data_port);
    const std::string through = "127.0.0.1:" + std::to_string(proxy.port());
    daemons_[victim] = StartNode(victim, "  advertise_data: \"" + through + "\"\n", data_port);
    ASSERT_NE(daemons_[victim], nullptr);
    ASSERT_TRUE(Eventually([&] { return LiveNodes()[node].data_address() == through; }));
    Writer w = StartWriter(1);
    AwaitAcks(w);
    proxy.Cut();
    AwaitAcks(w);
    EXPECT_TRUE(Eventually([&] { return MemberState(node) != v1::ReplicaSetMember::STATE_IN_SYNC; },
                           kSettle));
    AwaitAcks(w);
    proxy.Heal();
    AwaitAllInSync();
    AwaitAcks(w);
    StopWriter(w);
    CheckHistory({w.History()});
}

}  // namespace
}  // namespace rpma::testing
