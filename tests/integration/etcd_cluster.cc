#include "tests/integration/etcd_cluster.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace rpma::testing {
namespace {

// A member of a new cluster elects a leader once a majority runs: about a
// second, more on a loaded machine.
constexpr auto kStartTimeout = std::chrono::seconds(60);

}  // namespace

std::unique_ptr<EtcdCluster> EtcdCluster::Start(size_t members, std::string *error) {
    std::unique_ptr<EtcdCluster> cluster(new EtcdCluster());
    const std::string tag = std::to_string(FreePort());
    for (size_t i = 0; i < members; ++i) {
        Member m;
        m.name = "m" + std::to_string(i);
        m.data = TempPath("etcd-" + tag + "-" + m.name);
        std::filesystem::create_directories(m.data);
        m.client = "127.0.0.1:" + std::to_string(FreePort());
        m.peer = "127.0.0.1:" + std::to_string(FreePort());
        cluster->initial_cluster_ += (i == 0 ? "" : ",") + m.name + "=http://" + m.peer;
        cluster->members_.push_back(std::move(m));
    }
    for (size_t i = 0; i < members; ++i)
        if (!cluster->Launch(i, "new", error))
            return nullptr;
    for (size_t i = 0; i < members; ++i)
        if (!cluster->Await(i, error))
            return nullptr;
    return cluster;
}

EtcdCluster::~EtcdCluster() {
    for (size_t i = 0; i < members_.size(); ++i)
        Kill(i);
}

std::string EtcdCluster::Endpoints() const {
    std::string all;
    for (const Member &m : members_)
        all += (all.empty() ? "" : ",") + m.client;
    return all;
}

bool EtcdCluster::Launch(size_t i, const std::string &state, std::string *error) {
    Member &m = members_[i];
    m.process = Process::Start({"/usr/bin/etcd",
                                "--name",
                                m.name,
                                "--data-dir",
                                m.data,
                                "--listen-client-urls",
                                "http://" + m.client,
                                "--advertise-client-urls",
                                "http://" + m.client,
                                "--listen-peer-urls",
                                "http://" + m.peer,
                                "--initial-advertise-peer-urls",
                                "http://" + m.peer,
                                "--initial-cluster",
                                initial_cluster_,
                                "--initial-cluster-state",
                                state,
                                "--initial-cluster-token",
                                "rpma-test",
                                "--logger",
                                "zap",
                                "--log-level",
                                "warn"},
                               {}, error);
    if (m.process == nullptr) {
        *error += " (etcd-server: tools/install-deps.sh installs it)";
        return false;
    }
    return true;
}

bool EtcdCluster::Await(size_t i, std::string *error) {
    Member &m = members_[i];
    auto channel = grpc::CreateChannel(m.client, grpc::InsecureChannelCredentials());
    auto kv = etcdserverpb::KV::NewStub(channel);
    etcdserverpb::RangeRequest probe;
    probe.set_key("probe");
    etcdserverpb::RangeResponse answer;
    // A linearizable read answers only once the cluster has a leader.
    const auto deadline = std::chrono::system_clock::now() + kStartTimeout;
    grpc::Status status;
    while (std::chrono::system_clock::now() < deadline) {
        grpc::ClientContext context;
        context.set_deadline(deadline);
        context.set_wait_for_ready(true);
        status = kv->Range(&context, probe, &answer);
        if (status.ok())
            return true;
        // "etcdserver: leader changed" and the like answer at once: ask again.
        if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
            break;
    }
    *error = "etcd member " + m.name + " at " + m.client +
             " did not answer: " + status.error_message() + "\n" + m.process->Describe();
    return false;
}

void EtcdCluster::Kill(size_t i) {
    if (members_[i].process != nullptr) {
        members_[i].process->Kill();
        members_[i].process.reset();
    }
}

bool EtcdCluster::Restart(size_t i, std::string *error, bool await) {
    Kill(i);
    if (!Launch(i, "existing", error))
        return false;
    return !await || Await(i, error);
}

}  // namespace rpma::testing
