// The cluster fixture of cluster_test and cluster_scenarios_test: three
// etcd members and five rpmads in three zones registered as nodes, with
// rpmactl --etcd, region records and opening regions by name.
#ifndef RPMA_TESTS_INTEGRATION_CLUSTER_FIXTURE_H
#define RPMA_TESTS_INTEGRATION_CLUSTER_FIXTURE_H

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd.h"
#include "cluster/records.h"
#include "rpma/client/region.h"
#include "tests/integration/etcd_cluster.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {

using rpma::cluster::NodeRecord;
using rpma::cluster::RegionRecord;

inline constexpr auto kRunTimeout = std::chrono::seconds(60);
// Lease of 3 s: a dead node is noticed within about that.
inline constexpr int kLeaseSeconds = 3;
inline const char *const kZones[] = {"a", "a", "b", "c", "c"};

// Polls `done` every 50 ms for up to `timeout`: for what etcd decides by
// time (a lease expiring), which no event announces to a bystander.
inline bool Eventually(const std::function<bool()> &done,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return done();
}

class ClusterTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string error;
        etcd_ = EtcdCluster::Start(3, &error);
        ASSERT_NE(etcd_, nullptr) << error;
        rpma::cluster::EtcdOptions options;
        ASSERT_TRUE(rpma::cluster::ParseEndpoints(etcd_->Endpoints(), &options).ok());
        options.timeout = std::chrono::milliseconds(2000);
        ASSERT_TRUE(rpma::cluster::Etcd::Connect(options, &client_).ok());
        home_ = TempPath("home");
        std::filesystem::create_directories(home_);
        for (size_t i = 0; i < std::size(kZones); ++i)
            daemons_.push_back(StartNode(i));
        for (const auto &d : daemons_)
            ASSERT_NE(d, nullptr);
        ASSERT_TRUE(Eventually([&] { return LiveNodes().size() == std::size(kZones); }))
            << LiveNodes().size() << " nodes registered";
    }

    // cluster.replace_after_seconds of every node.
    virtual int ReplaceAfter() const { return 300; }

    // `data_port`: where its data plane listens (0: a free port).
    std::unique_ptr<Rpmad> StartNode(size_t i, const std::string &extra = "", int data_port = 0) {
        if (pools_.size() <= i)
            pools_.resize(i + 1);
        if (pools_[i].empty())
            pools_[i] = TempPath("pool-" + std::to_string(i));
        RpmadOptions options;
        options.pool_dir = pools_[i];
        options.data_port = data_port;
        options.config_yaml =
            "cluster:\n"
            "  etcd:\n"
            "    endpoints: \"" +
            etcd_->Endpoints() +
            "\"\n"
            "  zone: " +
            kZones[i] +
            "\n"
            "  lease_ttl_seconds: " +
            std::to_string(kLeaseSeconds) +
            "\n"
            "  replace_after_seconds: " +
            std::to_string(ReplaceAfter()) + "\n" + extra;
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    std::map<std::string, NodeRecord> LiveNodes() {
        std::vector<NodeRecord> nodes;
        std::map<std::string, NodeRecord> by_id;
        if (!rpma::cluster::ListNodes(*client_, keys_, &nodes).ok())
            return by_id;
        for (auto &n : nodes)
            by_id[n.node_id()] = n;
        return by_id;
    }

    std::string NodeId(const Rpmad &rpmad) {
        v1::Stats stats;
        EXPECT_TRUE(
            rpmad.Daemon()->GetStats(Rpmad::Context().get(), v1::GetStatsRequest(), &stats).ok());
        return stats.daemon_id();
    }

    struct Outcome {
        int code = -1;
        std::string out, err, describe;
    };

    Outcome Rpmactl(const std::vector<std::string> &args) {
        std::vector<std::string> argv = {Runfile("client/rpmactl/rpmactl"), "--etcd",
                                         etcd_->Endpoints()};
        argv.insert(argv.end(), args.begin(), args.end());
        std::string error;
        auto process = Process::Start(
            argv, {"HOME=" + home_, "XDG_CONFIG_HOME=", "RPMACTL_SERVER=", "RPMACTL_ETCD="},
            &error);
        if (process == nullptr) {
            ADD_FAILURE() << error;
            return {};
        }
        auto status = process->Wait(kRunTimeout);
        if (!status) {
            ADD_FAILURE() << "rpmactl did not finish: " << process->Describe();
            status = process->Kill();
        }
        return {status->exited ? status->code : -1, process->Stdout(), process->Stderr(),
                process->Describe()};
    }

    std::optional<RegionRecord> Region(const std::string &name) {
        std::optional<rpma::cluster::Versioned<RegionRecord>> read;
        EXPECT_TRUE(rpma::cluster::GetRegion(*client_, keys_, name, &read).ok());
        if (!read)
            return std::nullopt;
        return read->record;
    }

    bool Holds(const Rpmad &rpmad, const std::string &region) {
        v1::GetRegionRequest request;
        request.set_name(region);
        v1::Region answer;
        return rpmad.Regions()->GetRegion(Rpmad::Context().get(), request, &answer).ok();
    }

    rpma::client::Cluster ClusterOf() const {
        rpma::client::Cluster cluster;
        cluster.etcd_endpoints = etcd_->Endpoints();
        cluster.writer_lease = std::chrono::seconds(kLeaseSeconds);
        return cluster;
    }

    rpma::client::Result<std::unique_ptr<rpma::client::Region>> Open(
        const std::string &name, rpma::client::OpenOptions options = {}) {
        options.operation_timeout = std::chrono::milliseconds(3000);
        return rpma::client::Region::Open(ClusterOf(), name, options);
    }

    // The bytes of every replica of `region` at [offset, offset + length).
    std::vector<std::vector<std::byte>> ReadEach(rpma::client::Region &region, uint64_t offset,
                                                 size_t length) {
        std::vector<std::vector<std::byte>> all;
        for (size_t i = 0; i < region.replicas().size(); ++i) {
            std::vector<std::byte> bytes(length);
            const auto s = region.Read(offset, bytes, i);
            EXPECT_TRUE(s.ok()) << s.ToString();
            all.push_back(std::move(bytes));
        }
        return all;
    }

    size_t IndexOf(const std::string &node_id) {
        for (size_t i = 0; i < daemons_.size(); ++i)
            if (daemons_[i] && NodeId(*daemons_[i]) == node_id)
                return i;
        ADD_FAILURE() << "no daemon is node " << node_id;
        return 0;
    }

    // Creates region `name` of 1 MiB on three nodes and opens it for writing
    // with quorum 2; nullptr (after a failure) when either fails.
    std::unique_ptr<rpma::client::Region> CreateAndOpenWriter(const std::string &name) {
        const Outcome created = Rpmactl({"region", "create", name, "1MiB", "--replicas", "3"});
        EXPECT_EQ(created.code, 0) << created.describe;
        rpma::client::OpenOptions options;
        options.quorum = 2;
        auto writer = Open(name, options);
        EXPECT_TRUE(writer.ok()) << writer.status().ToString();
        return created.code == 0 && writer.ok() ? std::move(*writer) : nullptr;
    }

    // Kills the node of member `member` of region `name` under a writer
    // with quorum 2, writes `bytes` at 0 (so that the member is recorded
    // stale) and closes the writer; the killed daemon's index.
    size_t KillMemberUnderAWrite(const std::string &name, int member,
                                 const std::vector<std::byte> &bytes) {
        rpma::client::OpenOptions options;
        options.quorum = 2;
        auto writer = Open(name, options);
        EXPECT_TRUE(writer.ok()) << writer.status().ToString();
        if (!writer.ok())
            return 0;
        const size_t victim = IndexOf(Region(name)->replica_set().members(member).daemon_id());
        daemons_[victim]->process().Kill();
        const auto wrote = (*writer)->WritePersist(0, bytes);
        EXPECT_TRUE(wrote.ok()) << wrote.ToString();
        EXPECT_EQ(Region(name)->replica_set().members(member).state(),
                  v1::ReplicaSetMember::STATE_STALE);
        return victim;
    }

    bool AllInSync(const std::string &name) {
        auto record = Region(name);
        if (!record)
            return false;
        for (const auto &m : record->replica_set().members())
            if (m.state() != v1::ReplicaSetMember::STATE_IN_SYNC)
                return false;
        return true;
    }

    // Every replica of `name` holds `bytes` at 0, read by a reader.
    void ExpectEveryReplicaHolds(const std::string &name, const std::vector<std::byte> &bytes) {
        rpma::client::OpenOptions read_only;
        read_only.read_only = true;
        auto reader = Open(name, read_only);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        for (const auto &r : (*reader)->replicas())
            EXPECT_EQ(r.state, rpma::client::ReplicaState::kLive) << r.address;
        for (const auto &held : ReadEach(**reader, 0, bytes.size()))
            EXPECT_EQ(held, bytes);
    }

    // Writes 4 KiB records round-robin over `slots` slots through `writer`
    // until `done` (at most 60 s), remembering each slot's last
    // acknowledged bytes in *acked; false when `done` never was.
    bool WriteUntil(rpma::client::Region &writer, size_t slots,
                    std::map<uint64_t, std::vector<std::byte>> *acked,
                    const std::function<bool()> &done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        for (uint32_t n = 0; std::chrono::steady_clock::now() < deadline; ++n) {
            const uint64_t offset = (n % slots) * 4096;
            auto bytes = Pattern(4096, 100 + n);
            const auto wrote = writer.WritePersist(offset, bytes);
            EXPECT_TRUE(wrote.ok()) << wrote.ToString();
            if (!wrote.ok())
                return false;
            (*acked)[offset] = std::move(bytes);
            if (n % 16 == 0 && done())
                return true;
        }
        return done();
    }

    // The writer of `name` dies (its lease goes) with a write in flight that
    // reached replica 1 only: bytes at 8192 on that replica's file and no
    // other's.
    void DieWithADivergentWrite(const std::string &name) {
        std::optional<rpma::cluster::KeyValue> holder;
        ASSERT_TRUE(client_->Get(keys_.Writer(name), &holder).ok() && holder);
        ASSERT_TRUE(client_->RevokeLease(holder->lease).ok());
        const std::string file =
            pools_[IndexOf(Region(name)->replica_set().members(1).daemon_id())] + "/regions/" +
            name + ".pmem";
        std::FILE *f = std::fopen(file.c_str(), "r+b");
        ASSERT_NE(f, nullptr) << file;
        const auto torn = Pattern(4096, 77);
        ASSERT_EQ(std::fseek(f, 8192, SEEK_SET), 0);
        ASSERT_EQ(std::fwrite(torn.data(), 1, torn.size(), f), torn.size());
        ASSERT_EQ(std::fclose(f), 0);
    }

    // Every replica of `writer` holds every record of `acked`.
    void ExpectEveryReplicaHolds(rpma::client::Region &writer,
                                 const std::map<uint64_t, std::vector<std::byte>> &acked) {
        for (const auto &[offset, bytes] : acked)
            for (const auto &held : ReadEach(writer, offset, bytes.size()))
                ASSERT_EQ(held, bytes) << "at " << offset;
    }

    std::unique_ptr<EtcdCluster> etcd_;
    std::unique_ptr<rpma::cluster::Etcd> client_;
    rpma::cluster::Keys keys_;
    std::string home_;
    std::vector<std::string> pools_;
    std::vector<std::unique_ptr<Rpmad>> daemons_;
};

// Nodes that replace a dead one's replicas after 3 s.
class ClusterReplaceTest : public ClusterTest {
  protected:
    int ReplaceAfter() const override { return kLeaseSeconds; }
};

}  // namespace rpma::testing

#endif  // RPMA_TESTS_INTEGRATION_CLUSTER_FIXTURE_H
