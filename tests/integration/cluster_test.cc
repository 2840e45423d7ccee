// Cluster mode against real processes on loopback: three etcd members
// (Debian's etcd-server) and five rpmads in three zones, registered as
// nodes; rpmactl --etcd placing, listing and deleting regions.
//  - every rpmad registers with its zone, capacity and addresses; a
//    SIGKILLed one drops out when its lease expires, a stopped one at once;
//  - losing every etcd member stops no session: rpmad says so in GetStats
//    and registers again once etcd is back;
//  - region create puts the replicas in distinct zones, records the region
//    in one record (ready, generation 1, every replica in sync) and gives
//    each replica's daemon the same replica-set record; delete removes it
//    everywhere;
//  - a create that fails on one node leaves no record and no file;
//  - the client library opens a region by name: one writer at a time (a
//    second is refused, readers are not), each under a new epoch; a writer
//    whose lease is gone is fenced and lands nothing after the next writer
//    opened; a replica killed under a writer is recorded stale in etcd and
//    the writes go on;
//  - the controller repairs a restarted replica where it is, places the
//    replica of a node dead past replace_after on another node, and moves
//    every replica off a drained node; each copy holds the acknowledged
//    bytes.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd.h"
#include "cluster/records.h"
#include "rpma/client/region.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/etcd_cluster.h"
#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/integration/stopped_daemon.h"

namespace rpma::testing {
namespace {

TEST_F(ClusterTest, NodesRegisterWithTheirZonesAndDropOutWithTheirLease) {
    auto nodes = LiveNodes();
    for (size_t i = 0; i < daemons_.size(); ++i) {
        const std::string id = NodeId(*daemons_[i]);
        ASSERT_TRUE(nodes.count(id)) << "daemon " << i << " (" << id << ") not registered";
        const NodeRecord &n = nodes[id];
        EXPECT_EQ(n.zone(), kZones[i]);
        EXPECT_EQ(n.control_address(), daemons_[i]->control());
        EXPECT_EQ(n.data_address(), "127.0.0.1:" + std::to_string(daemons_[i]->data_port()));
        EXPECT_EQ(n.provider(), "tcp");
        EXPECT_GT(n.capacity_bytes(), 0u);
        EXPECT_GT(n.free_bytes(), 0u);
        EXPECT_LE(n.free_bytes(), n.capacity_bytes());
    }
    const Outcome list = Rpmactl({"node", "list"});
    EXPECT_EQ(list.code, 0) << list.describe;
    for (const auto &[id, node] : nodes)
        EXPECT_NE(list.out.find(id), std::string::npos) << list.out;

    // SIGKILL: gone once its lease expires, not before it was ever renewed.
    const std::string killed = NodeId(*daemons_[4]);
    daemons_[4]->process().Kill();
    EXPECT_TRUE(Eventually([&] { return !LiveNodes().count(killed); }))
        << "a killed node stayed registered";
    // A stop on purpose leaves at once (the lease is revoked).
    const std::string stopped = NodeId(*daemons_[3]);
    kill(daemons_[3]->process().pid(), SIGTERM);
    ASSERT_TRUE(daemons_[3]->process().Wait(kRunTimeout).has_value());
    EXPECT_FALSE(LiveNodes().count(stopped));
}

TEST_F(ClusterTest, LosingEtcdStopsNoSessionAndTheNodeRegistersAgain) {
    ASSERT_TRUE(daemons_[0]->CreateRegion("local", 1 << 20).ok());
    for (size_t i = 0; i < etcd_->size(); ++i)
        etcd_->Kill(i);
    // The node says what is wrong ...
    EXPECT_TRUE(Eventually([&] {
        v1::Stats stats;
        return daemons_[0]
                   ->Daemon()
                   ->GetStats(Rpmad::Context().get(), v1::GetStatsRequest(), &stats)
                   .ok() &&
               !stats.cluster().registered() && !stats.cluster().problem().empty();
    })) << "rpmad did not notice that etcd is gone";
    // ... and goes on serving: a session opens on its region.
    v1::OpenSessionResponse session;
    const grpc::Status opened = daemons_[0]->OpenSession("local", &session);
    EXPECT_TRUE(opened.ok()) << opened.error_message();

    std::string error;
    for (size_t i = 0; i < etcd_->size(); ++i)
        ASSERT_TRUE(etcd_->Restart(i, &error, /*await=*/false)) << error;
    const std::string id = NodeId(*daemons_[0]);
    EXPECT_TRUE(Eventually(
        [&] {
            v1::Stats stats;
            return daemons_[0]
                       ->Daemon()
                       ->GetStats(Rpmad::Context().get(), v1::GetStatsRequest(), &stats)
                       .ok() &&
                   stats.cluster().registered() && LiveNodes().count(id);
        },
        std::chrono::seconds(60)))
        << "rpmad did not register again once etcd came back";
}

TEST_F(ClusterTest, RegionCreatePlacesDistinctZonesAndDeleteRemovesItEverywhere) {
    const Outcome created = Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"});
    ASSERT_EQ(created.code, 0) << created.describe;
    auto record = Region("log");
    ASSERT_TRUE(record.has_value());
    EXPECT_EQ(record->state(), RegionRecord::STATE_READY);
    EXPECT_EQ(record->size_bytes(), 1u << 20);
    EXPECT_EQ(record->replica_set().generation(), 1u);
    ASSERT_EQ(record->replica_set().members_size(), 3);
    auto nodes = LiveNodes();
    std::set<std::string> zones, placed;
    for (const auto &m : record->replica_set().members()) {
        EXPECT_EQ(m.state(), v1::ReplicaSetMember::STATE_IN_SYNC);
        ASSERT_TRUE(nodes.count(m.daemon_id()));
        zones.insert(nodes[m.daemon_id()].zone());
        placed.insert(m.daemon_id());
    }
    EXPECT_EQ(zones, (std::set<std::string>{"a", "b", "c"}));
    // The replicas are where the record says, with its replica-set record.
    for (const auto &d : daemons_) {
        const bool member = placed.count(NodeId(*d)) > 0;
        EXPECT_EQ(Holds(*d, "log"), member) << d->control();
        if (!member)
            continue;
        v1::GetReplicaSetRequest request;
        request.set_region("log");
        v1::ReplicaSetView view;
        ASSERT_TRUE(d->Regions()->GetReplicaSet(Rpmad::Context().get(), request, &view).ok());
        EXPECT_EQ(view.record().set_id(), record->replica_set().set_id());
        EXPECT_EQ(view.record().generation(), 1u);
    }
    const Outcome again = Rpmactl({"region", "create", "log", "1MiB"});
    EXPECT_EQ(again.code, 1) << again.describe;
    EXPECT_NE(again.err.find("exists already"), std::string::npos) << again.err;

    const Outcome list = Rpmactl({"region", "list"});
    EXPECT_EQ(list.code, 0) << list.describe;
    EXPECT_NE(list.out.find("log"), std::string::npos) << list.out;
    EXPECT_NE(list.out.find("3/3"), std::string::npos) << list.out;
    const Outcome info = Rpmactl({"region", "info", "log"});
    EXPECT_EQ(info.code, 0) << info.describe;
    for (const std::string &id : placed)
        EXPECT_NE(info.out.find(id), std::string::npos) << info.out;

    const Outcome deleted = Rpmactl({"region", "delete", "log"});
    ASSERT_EQ(deleted.code, 0) << deleted.describe;
    EXPECT_FALSE(Region("log").has_value());
    for (const auto &d : daemons_)
        EXPECT_FALSE(Holds(*d, "log")) << d->control();
}

// rpmactl's data commands take a region by name from etcd: put, get and
// verify see the replicas the record places, and bench measures them.
TEST_F(ClusterTest, RpmactlPutsGetsVerifiesAndBenchesARegionByName) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "4MiB", "--replicas", "3"}).code, 0);
    const auto bytes = Pattern(3 << 20, 21);
    const std::string in = home_ + "/in.bin", out = home_ + "/out.bin";
    {
        std::ofstream file(in, std::ios::binary);
        file.write(reinterpret_cast<const char *>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
    }
    const Outcome put = Rpmactl({"put", in, "log:4096"});
    ASSERT_EQ(put.code, 0) << put.describe;
    const Outcome get = Rpmactl({"get", "log:4096", std::to_string(bytes.size()), out});
    ASSERT_EQ(get.code, 0) << get.describe;
    std::ifstream file(out, std::ios::binary);
    const std::vector<char> read((std::istreambuf_iterator<char>(file)),
                                 std::istreambuf_iterator<char>());
    ASSERT_EQ(read.size(), bytes.size());
    EXPECT_EQ(std::memcmp(read.data(), bytes.data(), bytes.size()), 0);
    const Outcome verify = Rpmactl({"verify", "log"});
    EXPECT_EQ(verify.code, 0) << verify.describe;
    // Every replica holds what put wrote.
    {
        auto reader = Open("log", [] {
            rpma::client::OpenOptions o;
            o.read_only = true;
            return o;
        }());
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        for (const auto &held : ReadEach(**reader, 4096, 64 << 10))
            EXPECT_EQ(held, std::vector<std::byte>(bytes.begin(), bytes.begin() + (64 << 10)));
    }
    const Outcome bench = Rpmactl(
        {"bench", "--region", "log", "--sizes", "4KiB", "--iterations", "20", "--stream", "1MiB"});
    EXPECT_EQ(bench.code, 0) << bench.describe;
    EXPECT_NE(bench.out.find("3 REPLICAS"), std::string::npos) << bench.out;
    // It wrote through the cluster's writer: the replicas still agree.
    const Outcome after = Rpmactl({"verify", "log"});
    EXPECT_EQ(after.code, 0) << after.describe;
}

TEST_F(ClusterTest, ACreateThatFailsOnOneNodeLeavesNoRecordAndNoFile) {
    // Node 2 (zone b, the only one there) refuses regions over 64 KiB, so a
    // region with a replica in every zone fails there after the others
    // created theirs.
    daemons_[2].reset();
    daemons_[2] = StartNode(2, "limits:\n  max_region_size: 64KiB\n");
    ASSERT_NE(daemons_[2], nullptr);
    const std::string limited = NodeId(*daemons_[2]);
    ASSERT_TRUE(Eventually([&] { return LiveNodes().count(limited) > 0; }));

    const Outcome created = Rpmactl({"region", "create", "big", "1MiB", "--replicas", "3"});
    EXPECT_EQ(created.code, 1) << created.describe;
    EXPECT_NE(created.err.find("nothing was left behind"), std::string::npos) << created.err;
    EXPECT_FALSE(Region("big").has_value());
    for (const auto &d : daemons_)
        EXPECT_FALSE(Holds(*d, "big")) << d->control();
    // Placement that cannot be met says why, and changes nothing.
    const Outcome too_many = Rpmactl({"region", "create", "wide", "1MiB", "--replicas", "6"});
    EXPECT_EQ(too_many.code, 1) << too_many.describe;
    EXPECT_NE(too_many.err.find("5 of 5 live qualify"), std::string::npos) << too_many.err;
    EXPECT_FALSE(Region("wide").has_value());
}

TEST_F(ClusterTest, ARegionOpensByNameWithOneWriterAtATime) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"}).code, 0);
    const auto pattern = Pattern(64 << 10, 7);
    {
        auto writer = Open("log");
        ASSERT_TRUE(writer.ok()) << writer.status().ToString();
        EXPECT_EQ((*writer)->size(), 1u << 20);
        ASSERT_EQ((*writer)->replicas().size(), 3u);
        const auto wrote = (*writer)->WritePersist(4096, pattern);
        ASSERT_TRUE(wrote.ok()) << wrote.ToString();
        for (const auto &bytes : ReadEach(**writer, 4096, pattern.size()))
            EXPECT_EQ(bytes, pattern);
        // A second writer is refused, naming the first; readers are fine.
        auto second = Open("log");
        ASSERT_FALSE(second.ok());
        EXPECT_EQ(second.status().code(), rpma::client::StatusCode::kFailedPrecondition);
        EXPECT_NE(second.status().message().find("has a writer already"), std::string::npos)
            << second.status().ToString();
        rpma::client::OpenOptions read_only;
        read_only.read_only = true;
        auto reader = Open("log", read_only);
        ASSERT_TRUE(reader.ok()) << reader.status().ToString();
        for (const auto &bytes : ReadEach(**reader, 4096, pattern.size()))
            EXPECT_EQ(bytes, pattern);
        EXPECT_EQ(Region("log")->writer_epoch(), 1u);
    }
    // Closed: the next writer opens, under a new epoch and generation.
    auto next = Open("log");
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    const auto record = Region("log");
    EXPECT_EQ(record->writer_epoch(), 2u);
    EXPECT_EQ(record->replica_set().generation(), 3u);  // created 1, two writers' opens
    for (const auto &bytes : ReadEach(**next, 4096, pattern.size()))
        EXPECT_EQ(bytes, pattern);
    // Not a region of the cluster: said so.
    auto missing = Open("nope");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), rpma::client::StatusCode::kNotFound);
}

TEST_F(ClusterTest, AWriterWhoseLeaseIsGoneIsFencedAndLandsNothing) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"}).code, 0);
    auto old_writer = Open("log");
    ASSERT_TRUE(old_writer.ok()) << old_writer.status().ToString();
    const auto first = Pattern(4096, 1);
    ASSERT_TRUE((*old_writer)->WritePersist(0, first).ok());
    // Its lease goes, as if it had been paused past it.
    std::optional<rpma::cluster::KeyValue> holder;
    ASSERT_TRUE(client_->Get(keys_.Writer("log"), &holder).ok());
    ASSERT_TRUE(holder.has_value());
    ASSERT_TRUE(client_->RevokeLease(holder->lease).ok());
    // A new writer takes over and writes.
    auto new_writer = Open("log");
    ASSERT_TRUE(new_writer.ok()) << new_writer.status().ToString();
    const auto second = Pattern(4096, 2);
    ASSERT_TRUE((*new_writer)->WritePersist(0, second).ok());
    // The old writer wakes up: refused, and none of its bytes land.
    const auto late = Pattern(4096, 3);
    const auto refused = (*old_writer)->WritePersist(0, late);
    EXPECT_FALSE(refused.ok());
    const auto refused_elsewhere = (*old_writer)->WritePersist(8192, late);
    EXPECT_FALSE(refused_elsewhere.ok());
    for (const auto &bytes : ReadEach(**new_writer, 0, 4096))
        EXPECT_EQ(bytes, second);
    for (const auto &bytes : ReadEach(**new_writer, 8192, 4096))
        EXPECT_EQ(bytes, std::vector<std::byte>(4096));
}

TEST_F(ClusterTest, AReplicaKilledUnderAWriterIsRecordedStaleInEtcd) {
    auto writer = CreateAndOpenWriter("log");
    ASSERT_NE(writer, nullptr);
    const auto record = Region("log");
    const std::string victim_id = record->replica_set().members(2).daemon_id();
    for (auto &d : daemons_)
        if (NodeId(*d) == victim_id)
            d->process().Kill();
    const auto bytes = Pattern(4096, 9);
    const auto wrote = writer->WritePersist(0, bytes);
    ASSERT_TRUE(wrote.ok()) << wrote.ToString();
    const auto after = Region("log");
    EXPECT_EQ(after->replica_set().members(2).state(), v1::ReplicaSetMember::STATE_STALE);
    EXPECT_EQ(after->replica_set().members(0).state(), v1::ReplicaSetMember::STATE_IN_SYNC);
    EXPECT_GT(after->replica_set().generation(), record->replica_set().generation());
    // Writes go on without it.
    EXPECT_TRUE(writer->WritePersist(4096, bytes).ok());
}

TEST_F(ClusterTest, AReaderNeverReadsAReplicaTheWriterRecordedStale) {
    auto writer = CreateAndOpenWriter("log");
    ASSERT_NE(writer, nullptr);
    const auto before = Pattern(4096, 1), after = Pattern(4096, 2);
    ASSERT_TRUE(writer->WritePersist(0, before).ok());
    rpma::client::OpenOptions read_only;
    read_only.read_only = true;
    auto reader = Open("log", read_only);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (const auto &held : ReadEach(**reader, 0, 4096))
        ASSERT_EQ(held, before);
    // The writer loses replica 2 (its daemon stalls past operation_timeout)
    // and acknowledges without it; the reader still reaches it afterwards.
    const size_t lagging = IndexOf(Region("log")->replica_set().members(2).daemon_id());
    {
        Stopped stalled(daemons_[lagging]->process().pid());
        ASSERT_TRUE(stalled.stopped());
        // This write may still reach it (its kernel took the bytes) ...
        const auto stalled_write = writer->WritePersist(0, Pattern(4096, 3));
        ASSERT_TRUE(stalled_write.ok()) << stalled_write.ToString();
        // ... this one, after it was recorded stale, does not.
        const auto wrote = writer->WritePersist(0, after);
        ASSERT_TRUE(wrote.ok()) << wrote.ToString();
    }
    ASSERT_EQ(Region("log")->replica_set().members(2).state(), v1::ReplicaSetMember::STATE_STALE);
    std::vector<std::byte> got(4096);
    const auto read = (*reader)->Read(0, got, 2);
    if (read.ok())
        EXPECT_EQ(got, after) << "a stale replica's bytes were returned";  // repaired meanwhile
    else
        EXPECT_EQ(read.code(), rpma::client::StatusCode::kFailedPrecondition) << read.ToString();
    ASSERT_TRUE((*reader)->Read(0, got, 0).ok());
    EXPECT_EQ(got, after);
}

TEST_F(ClusterTest, TheControllerRepairsARestartedReplicaWhereItIs) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"}).code, 0);
    const auto bytes = Pattern(64 << 10, 5);
    const std::string node = Region("log")->replica_set().members(2).daemon_id();
    const size_t victim = KillMemberUnderAWrite("log", 2, bytes);
    daemons_[victim] = StartNode(victim);
    ASSERT_NE(daemons_[victim], nullptr);
    EXPECT_TRUE(Eventually([&] { return AllInSync("log"); }, std::chrono::seconds(60)))
        << rpma::cluster::ToJson(*Region("log")) << "\n"
        << Rpmactl({"cluster", "status"}).out;
    EXPECT_EQ(Region("log")->replica_set().members(2).daemon_id(), node);  // where it was
    ExpectEveryReplicaHolds("log", bytes);
    const Outcome status = Rpmactl({"cluster", "status"});
    EXPECT_EQ(status.code, 0) << status.describe;
    EXPECT_NE(status.out.find("repairing it where it is"), std::string::npos) << status.out;
}

TEST_F(ClusterTest, ADrainedNodeEndsUpHoldingNothing) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"}).code, 0);
    const auto bytes = Pattern(64 << 10, 6);
    {
        auto writer = Open("log");
        ASSERT_TRUE(writer.ok()) << writer.status().ToString();
        ASSERT_TRUE((*writer)->WritePersist(0, bytes).ok());
    }
    const std::string drained = Region("log")->replica_set().members(0).daemon_id();
    const Outcome drain = Rpmactl({"node", "drain", drained});
    ASSERT_EQ(drain.code, 0) << drain.describe;
    EXPECT_TRUE(Eventually(
        [&] {
            auto record = Region("log");
            for (const auto &m : record->replica_set().members())
                if (m.daemon_id() == drained)
                    return false;
            return AllInSync("log");
        },
        std::chrono::seconds(60)))
        << rpma::cluster::ToJson(*Region("log")) << "\n"
        << Rpmactl({"cluster", "status"}).out;
    EXPECT_TRUE(Eventually([&] { return !Holds(*daemons_[IndexOf(drained)], "log"); }));
    ExpectEveryReplicaHolds("log", bytes);
    // Nothing new goes to it either.
    const Outcome wide = Rpmactl({"region", "create", "wide", "1MiB", "--replicas", "5"});
    EXPECT_EQ(wide.code, 1) << wide.describe;
    EXPECT_NE(wide.err.find("draining"), std::string::npos) << wide.err;
}

TEST_F(ClusterTest, AWriterRepairsARestartedReplicaWhileItWrites) {
    auto writer = CreateAndOpenWriter("log");
    ASSERT_NE(writer, nullptr);
    const std::string node = Region("log")->replica_set().members(2).daemon_id();
    const size_t victim = IndexOf(node);
    daemons_[victim]->process().Kill();
    std::map<uint64_t, std::vector<std::byte>> acked;
    ASSERT_TRUE(WriteUntil(*writer, 64, &acked, [&] {
        return Region("log")->replica_set().members(2).state() == v1::ReplicaSetMember::STATE_STALE;
    }));
    daemons_[victim] = StartNode(victim);
    ASSERT_NE(daemons_[victim], nullptr);
    // The controller asks the writer, which repairs it while it writes.
    EXPECT_TRUE(WriteUntil(*writer, 64, &acked, [&] { return AllInSync("log"); }))
        << rpma::cluster::ToJson(*Region("log")) << "\n"
        << Rpmactl({"cluster", "status"}).out;
    EXPECT_EQ(Region("log")->replica_set().members(2).daemon_id(), node);
    EXPECT_EQ(writer->replicas()[2].state, rpma::client::ReplicaState::kLive);
    ASSERT_TRUE(WriteUntil(*writer, 64, &acked, [] { return true; }));
    ExpectEveryReplicaHolds(*writer, acked);
    const Outcome status = Rpmactl({"cluster", "status"});
    EXPECT_NE(status.out.find("asked its writer"), std::string::npos) << status.out;
    // region info tells the same of this region, with its writer and the
    // writer's activity log (64 records of 4 KiB: one extent).
    const Outcome info = Rpmactl({"region", "info", "log"});
    EXPECT_EQ(info.code, 0) << info.describe;
    EXPECT_NE(info.out.find("asked its writer"), std::string::npos) << info.out;
    EXPECT_NE(info.out.find("activity log: 1 extent(s) of 4.0 MiB hot"), std::string::npos)
        << info.out;
    EXPECT_EQ(info.out.find("writer: none"), std::string::npos) << info.out;
}

TEST_F(ClusterTest, AWriterMovesItsReplicaOffADrainedNode) {
    auto writer = CreateAndOpenWriter("log");
    ASSERT_NE(writer, nullptr);
    const std::string drained = Region("log")->replica_set().members(0).daemon_id();
    const Outcome drain = Rpmactl({"node", "drain", drained});
    ASSERT_EQ(drain.code, 0) << drain.describe;
    std::map<uint64_t, std::vector<std::byte>> acked;
    EXPECT_TRUE(WriteUntil(*writer, 64, &acked,
                           [&] {
                               return Region("log")->replica_set().members(0).daemon_id() !=
                                          drained &&
                                      AllInSync("log");
                           }))
        << rpma::cluster::ToJson(*Region("log")) << "\n"
        << Rpmactl({"cluster", "status"}).out;
    ASSERT_TRUE(WriteUntil(*writer, 64, &acked, [] { return true; }));
    ExpectEveryReplicaHolds(*writer, acked);
    // Its old copy goes (the controller finds it placed nowhere).
    EXPECT_TRUE(Eventually([&] { return !Holds(*daemons_[IndexOf(drained)], "log"); },
                           std::chrono::seconds(40)))
        << Rpmactl({"cluster", "status"}).out;
}

TEST_F(ClusterTest, ATakeoverReconcilesWhatTheDeadWriterHadInFlight) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "16MiB", "--replicas", "3"}).code, 0);
    auto dead = Open("log");
    ASSERT_TRUE(dead.ok()) << dead.status().ToString();
    const auto bytes = Pattern(4096, 4);
    auto activity = [&] {
        std::optional<rpma::cluster::KeyValue> kv;
        EXPECT_TRUE(client_->Get(keys_.Activity("log"), &kv).ok());
        return kv;
    };
    // Extent 0 (4 MiB) becomes hot with the first write and is recorded
    // once, not on every write.
    ASSERT_TRUE((*dead)->WritePersist(0, bytes).ok());
    const auto first = activity();
    ASSERT_TRUE(first);
    for (int i = 1; i < 20; ++i)
        ASSERT_TRUE((*dead)->WritePersist(i * 4096, bytes).ok());
    EXPECT_EQ(activity()->mod_revision, first->mod_revision);
    ASSERT_TRUE((*dead)->WritePersist(5 << 20, bytes).ok());
    // A batch's writes count each, not the range that spans them.
    rpma::client::Batch batch;
    batch.Write(4096, bytes);
    batch.Write(13 << 20, bytes);
    ASSERT_TRUE((*dead)->Commit(batch).ok());
    const auto second = activity();
    rpma::cluster::v1::ActivityLog hot;
    ASSERT_TRUE(rpma::cluster::FromJson(second->value, second->key, &hot).ok());
    EXPECT_EQ(std::vector<uint64_t>(hot.extents().begin(), hot.extents().end()),
              std::vector<uint64_t>({0, 1, 3}));

    ASSERT_NO_FATAL_FAILURE(DieWithADivergentWrite("log"));
    // The next writer reconciles the dead one's hot extents before it
    // writes: every replica returns the same bytes.
    auto next = Open("log");
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    for (const auto &held : ReadEach(**next, 8192, 4096))
        EXPECT_EQ(held, bytes);
    ASSERT_TRUE(rpma::cluster::FromJson(activity()->value, keys_.Activity("log"), &hot).ok());
    EXPECT_EQ(hot.extents_size(), 0);
    EXPECT_EQ(hot.writer_epoch(), 2u);
    next->reset();
    // Closed cleanly: nothing is left to reconcile.
    EXPECT_FALSE(activity());
}

TEST_F(ClusterTest, WhatAWriterThatDiedLeftIsReconciledByTheControllerWhenNoneComesBack) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "16MiB", "--replicas", "3"}).code, 0);
    auto dead = Open("log");
    ASSERT_TRUE(dead.ok()) << dead.status().ToString();
    const auto bytes = Pattern(4096, 5);
    ASSERT_TRUE((*dead)->WritePersist(8192, bytes).ok());
    ASSERT_NO_FATAL_FAILURE(DieWithADivergentWrite("log"));
    // A lease later, the controller opens it, which reconciles, and closes
    // it, which clears the log.
    EXPECT_TRUE(Eventually([&] {
        std::optional<rpma::cluster::KeyValue> kv;
        return client_->Get(keys_.Activity("log"), &kv).ok() && !kv;
    })) << Rpmactl({"cluster", "status"}).out;
    rpma::client::OpenOptions read_only;
    read_only.read_only = true;
    auto reader = Open("log", read_only);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    for (const auto &held : ReadEach(**reader, 8192, 4096))
        EXPECT_EQ(held, bytes);
    EXPECT_NE(Rpmactl({"cluster", "status"}).out.find("reconciled"), std::string::npos);
}

TEST_F(ClusterReplaceTest, AReplicaOfANodeDeadPastReplaceAfterIsPlacedElsewhereAndCopied) {
    ASSERT_EQ(Rpmactl({"region", "create", "log", "1MiB", "--replicas", "3"}).code, 0);
    const auto bytes = Pattern(64 << 10, 8);
    const std::string dead = Region("log")->replica_set().members(1).daemon_id();
    const size_t victim = KillMemberUnderAWrite("log", 1, bytes);
    EXPECT_TRUE(Eventually(
        [&] {
            return Region("log")->replica_set().members(1).daemon_id() != dead && AllInSync("log");
        },
        std::chrono::seconds(60)))
        << rpma::cluster::ToJson(*Region("log")) << "\n"
        << Rpmactl({"cluster", "status"}).out;
    ExpectEveryReplicaHolds("log", bytes);
    // The dead node comes back with its old copy, which the record no
    // longer places there: the controller deletes it.
    daemons_[victim] = StartNode(victim);
    ASSERT_NE(daemons_[victim], nullptr);
    ASSERT_TRUE(Holds(*daemons_[victim], "log"));
    EXPECT_TRUE(
        Eventually([&] { return !Holds(*daemons_[victim], "log"); }, std::chrono::seconds(40)))
        << Rpmactl({"cluster", "status"}).out;
    ExpectEveryReplicaHolds("log", bytes);
}

}  // namespace
}  // namespace rpma::testing
