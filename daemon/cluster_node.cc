#include "daemon/cluster_node.h"

#include <ctime>

#include "daemon/log.h"

namespace rpmad {
namespace {

Status FromGrpc(const grpc::Status &status) {
    return Status(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT
                      ? StatusCode::kInvalidArgument
                      : StatusCode::kUnavailable,
                  status.error_message());
}

int64_t NowUnix() {
    return static_cast<int64_t>(std::time(nullptr));
}

}  // namespace

StatusOr<std::unique_ptr<ClusterNode>> ClusterNode::Start(const ClusterConfig &config,
                                                          Snapshot snapshot) {
    std::unique_ptr<ClusterNode> node(new ClusterNode());
    // A keep-alive must come back well within the lease.
    if (auto s = rpma::cluster::ConnectEtcd(
            config.etcd_endpoints, config.etcd_ca_file, config.etcd_cert_file, config.etcd_key_file,
            std::chrono::milliseconds(config.lease_ttl_seconds * 1000 / 4), &node->etcd_);
        !s.ok())
        return FromGrpc(s);
    node->config_ = config;
    node->snapshot_ = std::move(snapshot);
    node->keys_ = rpma::cluster::Keys(config.prefix);
    node->state_.node_id = node->snapshot_().node_id();
    node->state_.endpoints = node->etcd_->Endpoints();
    node->state_.problem = "not registered yet";
    node->state_.problem_since_unix = NowUnix();
    node->thread_ = std::thread([n = node.get()] { n->Run(); });
    return node;
}

ClusterNode::~ClusterNode() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
    // Also when the last step failed (a keep-alive slower than its deadline
    // is no sign that etcd is gone): a stop waits at most the etcd
    // timeout per endpoint, and otherwise the lease expires by itself.
    if (state_.lease != 0) {
        if (auto s = etcd_->RevokeLease(state_.lease); s.ok())
            Log().info("cluster: left (node {} unregistered)", state_.node_id);
        else
            Log().warn(
                "cluster: could not unregister node {} ({}); it drops out when its "
                "lease of {} s expires",
                state_.node_id, s.error_message(), config_.lease_ttl_seconds);
    }
}

ClusterNode::State ClusterNode::state() const {
    std::lock_guard lock(mu_);
    return state_;
}

grpc::Status ClusterNode::Step() {
    int64_t lease;
    {
        std::lock_guard lock(mu_);
        lease = state_.lease;
    }
    if (lease != 0) {
        int64_t left = 0;
        if (auto s = etcd_->KeepAlive(lease, &left); !s.ok())
            return s;
        if (left <= 0) {
            // Expired while etcd was out of reach: the record went with it.
            std::lock_guard lock(mu_);
            state_.lease = 0;
            published_.clear();
            return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                "the node's lease expired (etcd was out of reach for longer "
                                "than cluster.lease_ttl_seconds); registering again");
        }
    } else {
        if (auto s = etcd_->GrantLease(std::chrono::seconds(config_.lease_ttl_seconds), &lease);
            !s.ok())
            return s;
        std::lock_guard lock(mu_);
        state_.lease = lease;
        published_.clear();
    }
    // The record again when it changed (free bytes) or is not there yet.
    rpma::cluster::NodeRecord record = snapshot_();
    const std::string now = rpma::cluster::ToJson(record);
    if (now == published_)
        return grpc::Status::OK;
    record.set_updated_unix_seconds(NowUnix());
    if (auto s = etcd_->Put(keys_.Node(record.node_id()), rpma::cluster::ToJson(record), lease);
        !s.ok())
        return s;
    published_ = now;
    return grpc::Status::OK;
}

void ClusterNode::Run() {
    const auto interval = std::chrono::milliseconds(config_.lease_ttl_seconds * 1000 / 3);
    std::unique_lock lock(mu_);
    while (!stop_) {
        lock.unlock();
        const grpc::Status s = Step();
        lock.lock();
        state_.registered = s.ok();
        if (s.ok() && !state_.problem.empty()) {
            Log().info("cluster: registered as node {} (zone '{}') in etcd {} under {}",
                       state_.node_id, config_.zone, state_.endpoints, config_.prefix);
            state_.problem.clear();
            state_.problem_since_unix = 0;
        } else if (!s.ok() && state_.problem != s.error_message()) {
            // Once per change of problem, not every step.
            Log().warn("cluster: {}; serving existing sessions meanwhile", s.error_message());
            state_.problem = s.error_message();
            if (state_.problem_since_unix == 0)
                state_.problem_since_unix = NowUnix();
        }
        // Sooner after a failure, so that a lease about to expire is saved.
        wake_.wait_for(lock, s.ok() ? interval : interval / 3, [&] { return stop_; });
    }
}

}  // namespace rpmad
