#include "cluster_authority.h"

#include <ctime>
#include <map>

#include "util/time_text.h"

namespace rpma::client {
namespace {

using rpma::cluster::RegionRecord;

Status FromEtcd(const grpc::Status &status) {
    return FromGrpc(status, "etcd");
}

int64_t NowUnix() {
    return static_cast<int64_t>(std::time(nullptr));
}

}  // namespace

Result<std::unique_ptr<ClusterAuthority>> ClusterAuthority::Open(const Cluster &cluster,
                                                                 const std::string &name,
                                                                 bool writer,
                                                                 const std::string &who) {
    std::unique_ptr<ClusterAuthority> a(new ClusterAuthority());
    a->cluster_ = cluster;
    a->name_ = name;
    if (auto s = rpma::cluster::CheckPrefix(cluster.prefix); !s.ok())
        return Status(StatusCode::kInvalidArgument, s.error_message());
    if (auto s = rpma::cluster::ConnectEtcd(cluster.etcd_endpoints, cluster.etcd_ca_file,
                                            cluster.etcd_cert_file, cluster.etcd_key_file,
                                            cluster.options.timeout, &a->etcd_);
        !s.ok())
        return Status(StatusCode::kInvalidArgument, s.error_message());
    a->keys_ = rpma::cluster::Keys(cluster.prefix);

    std::optional<rpma::cluster::Versioned<RegionRecord>> read;
    if (auto s = rpma::cluster::GetRegion(*a->etcd_, a->keys_, name, &read); !s.ok())
        return FromEtcd(s);
    if (!read)
        return Status(StatusCode::kNotFound,
                      "region " + name + " is not in the cluster (etcd " + a->etcd_->Endpoints() +
                          ", prefix " + cluster.prefix +
                          "): create it with `rpmactl --etcd ... region create " + name + " SIZE`");
    if (read->record.state() != RegionRecord::STATE_READY)
        return Status(
            StatusCode::kFailedPrecondition,
            "region " + name + " is being " +
                (read->record.state() == RegionRecord::STATE_CREATING ? "created" : "deleted") +
                " (by " + read->record.changed_by() + "): open it once that is done");
    a->region_ = std::move(*read);
    if (writer) {
        if (Status s = a->TakeWriter(who); !s.ok())
            return s;
        // What a writer that died had in flight, to reconcile before this
        // one writes.
        std::optional<rpma::cluster::KeyValue> left;
        if (auto s = a->etcd_->Get(a->keys_.Activity(name), &left); !s.ok())
            return FromEtcd(s);
        if (left) {
            rpma::cluster::v1::ActivityLog log;
            if (auto s = rpma::cluster::FromJson(left->value, left->key, &log); !s.ok())
                return FromEtcd(s);
            a->inherited_.assign(log.extents().begin(), log.extents().end());
            a->inherited_extent_bytes_ = log.extent_bytes();
        }
    }

    std::vector<rpma::cluster::NodeRecord> nodes;
    if (auto s = rpma::cluster::ListNodes(*a->etcd_, a->keys_, &nodes); !s.ok())
        return FromEtcd(s);
    std::map<std::string, const rpma::cluster::NodeRecord *> live;
    for (const auto &node : nodes)
        live[node.node_id()] = &node;
    a->replicas_.options = cluster.options;
    for (const auto &m : a->record().members()) {
        auto node = live.find(m.daemon_id());
        a->replicas_.addresses.push_back(node != live.end() ? node->second->control_address()
                                                            : m.address());
        // The data plane where the node says clients reach it (its
        // advertise_data), not where its daemon listens.
        a->replicas_.data_addresses.push_back(node != live.end() ? node->second->data_address()
                                                                 : "");
    }
    return a;
}

Status ClusterAuthority::TakeWriter(const std::string &who) {
    if (auto s = etcd_->GrantLease(cluster_.writer_lease, &lease_); !s.ok())
        return FromEtcd(s);
    const std::string writer_key = keys_.Writer(name_);
    // The region may change between the read and the take (a repair
    // recording its progress): read again and retry, a few times.
    for (int attempt = 0; attempt < 5; ++attempt) {
        RegionRecord next = region_.record;
        next.set_writer_epoch(next.writer_epoch() + 1);
        next.set_changed_by(who);
        next.set_reason("writer epoch " + std::to_string(next.writer_epoch()) + " opened");
        etcdserverpb::TxnRequest txn;
        auto *no_writer = txn.add_compare();
        no_writer->set_key(writer_key);
        no_writer->set_target(etcdserverpb::Compare::CREATE);
        no_writer->set_result(etcdserverpb::Compare::EQUAL);
        no_writer->set_create_revision(0);
        rpma::cluster::CompareModRevision(&txn, keys_.Region(name_), region_.revision);
        auto *take = txn.add_success()->mutable_request_put();
        take->set_key(writer_key);
        take->set_value(who + ", epoch " + std::to_string(next.writer_epoch()) + ", since " +
                        util::FormatUnixTime(NowUnix()));
        take->set_lease(lease_);
        auto *epoch = txn.add_success()->mutable_request_put();
        epoch->set_key(keys_.Region(name_));
        epoch->set_value(rpma::cluster::ToJson(next));
        etcdserverpb::TxnResponse response;
        if (auto s = etcd_->Txn(txn, &response); !s.ok())
            return FromEtcd(s);
        if (response.succeeded()) {
            region_.record = std::move(next);
            region_.revision = response.header().revision();
            keeper_ = std::thread([this] { KeepAlive(); });
            return Status();
        }
        std::optional<rpma::cluster::KeyValue> holder;
        if (auto s = etcd_->Get(writer_key, &holder); !s.ok())
            return FromEtcd(s);
        if (holder) {
            (void)etcd_->RevokeLease(lease_);
            lease_ = 0;
            return Status(StatusCode::kFailedPrecondition,
                          "region " + name_ + " has a writer already (" + holder->value +
                              "): one writer at a time; open it read-only, or once that writer "
                              "closes it (one that died frees it when its lease of its own "
                              "writer_lease expires)");
        }
        std::optional<rpma::cluster::Versioned<RegionRecord>> read;
        if (auto s = rpma::cluster::GetRegion(*etcd_, keys_, name_, &read); !s.ok())
            return FromEtcd(s);
        if (!read || read->record.state() != RegionRecord::STATE_READY)
            return Status(StatusCode::kFailedPrecondition,
                          "region " + name_ + " was deleted while it was opened");
        region_ = std::move(*read);
    }
    (void)etcd_->RevokeLease(lease_);
    lease_ = 0;
    return Status(StatusCode::kUnavailable,
                  "region " + name_ + " kept changing in etcd while it was opened: open it again");
}

void ClusterAuthority::KeepAlive() {
    const auto interval = std::chrono::milliseconds(cluster_.writer_lease) / 3;
    std::unique_lock lock(mu_);
    while (!wake_.wait_for(lock, interval, [&] { return stop_; })) {
        lock.unlock();
        int64_t left = 1;
        const grpc::Status s = etcd_->KeepAlive(lease_, &left);
        lock.lock();
        // etcd out of reach is not a lost lease: a new leader extends every
        // lease, and no other writer can take the region without etcd.
        if (s.ok() && left <= 0) {
            lost_ = true;
            return;
        }
    }
}

Status ClusterAuthority::Held() const {
    if (!lost_.load(std::memory_order_relaxed))
        return Status();
    return Status(StatusCode::kFailedPrecondition,
                  "the writer's lease on region " + name_ +
                      " expired (this process was paused or cut off from etcd for longer than "
                      "its writer_lease): another writer may hold it now; open it again");
}

void ClusterAuthority::StillOurs(etcdserverpb::TxnRequest *txn) const {
    auto *ours = txn->add_compare();
    ours->set_key(keys_.Writer(name_));
    ours->set_target(etcdserverpb::Compare::LEASE);
    ours->set_result(etcdserverpb::Compare::EQUAL);
    ours->set_lease(lease_);
}

Status ClusterAuthority::PutActivity(const std::vector<uint64_t> &extents) {
    rpma::cluster::v1::ActivityLog log;
    log.set_writer_epoch(writer_epoch());
    log.set_extent_bytes(activity_.extent_bytes());
    for (uint64_t e : extents)
        log.add_extents(e);
    log.set_updated_unix_seconds(NowUnix());
    etcdserverpb::TxnRequest txn;
    StillOurs(&txn);
    auto *put = txn.add_success()->mutable_request_put();
    put->set_key(keys_.Activity(name_));
    put->set_value(rpma::cluster::ToJson(log));
    etcdserverpb::TxnResponse response;
    if (auto s = etcd_->Txn(txn, &response); !s.ok())
        return Status(StatusCode::kUnavailable,
                      "recording region " + name_ +
                          "'s activity log in etcd: " + s.error_message() +
                          ": a write into an extent not written recently waits for etcd; writes "
                          "into recent ones go on");
    if (!response.succeeded())
        return Status(StatusCode::kFailedPrecondition,
                      "the writer's lease on region " + name_ +
                          " is gone: another writer may hold it now; open it again");
    return Status();
}

Status ClusterAuthority::RecordActivity(uint64_t offset, uint64_t length) {
    if (Status held = Held(); !held.ok())
        return held;
    const std::vector<uint64_t> extents = activity_.With(offset, length);
    if (Status s = PutActivity(extents); !s.ok())
        return s;
    activity_.Set(extents);
    return Status();
}

Status ClusterAuthority::ClearInherited() {
    if (Status s = PutActivity({}); !s.ok())
        return s;
    inherited_.clear();
    return Status();
}

Status ClusterAuthority::Refresh(bool *changed) {
    *changed = false;
    std::optional<rpma::cluster::Versioned<RegionRecord>> now;
    if (auto s = rpma::cluster::GetRegion(*etcd_, keys_, name_, &now); !s.ok())
        return Status(StatusCode::kUnavailable, "etcd: " + s.error_message());
    if (!now || now->record.state() != RegionRecord::STATE_READY)
        return Status(StatusCode::kFailedPrecondition, "region " + name_ + " is being deleted");
    if (now->revision == region_.revision)
        return Status();
    region_ = std::move(*now);
    *changed = true;
    return Status();
}

Status ClusterAuthority::ReadMaintenance(
    std::optional<rpma::cluster::v1::MaintenanceRequest> *request) {
    request->reset();
    std::optional<rpma::cluster::KeyValue> kv;
    if (auto s = etcd_->Get(keys_.Maintenance(name_), &kv); !s.ok())
        return FromEtcd(s);
    if (!kv)
        return Status();
    request->emplace();
    if (auto s = rpma::cluster::FromJson(kv->value, kv->key, &**request); !s.ok())
        return FromEtcd(s);
    return Status();
}

Status ClusterAuthority::Commit(const ::rpmad::v1::ReplicaSetRecord &record) {
    if (Status held = Held(); !held.ok())
        return held;
    RegionRecord next = region_.record;
    *next.mutable_replica_set() = record;
    next.set_changed_by(record.writer());
    next.set_reason(record.reason());
    etcdserverpb::TxnRequest txn;
    rpma::cluster::CompareModRevision(&txn, keys_.Region(name_), region_.revision);
    if (lease_ != 0) {
        // Still this writer's: a change of a writer whose lease expired is
        // refused even if nobody took the region yet.
        StillOurs(&txn);
    }
    auto *put = txn.add_success()->mutable_request_put();
    put->set_key(keys_.Region(name_));
    put->set_value(rpma::cluster::ToJson(next));
    etcdserverpb::TxnResponse response;
    if (auto s = etcd_->Txn(txn, &response); !s.ok())
        return Status(StatusCode::kUnavailable,
                      "recording the replica set of region " + name_ +
                          " in etcd: " + s.error_message() +
                          ": membership changes wait for etcd; writes to the replicas in sync "
                          "go on");
    if (!response.succeeded()) {
        std::optional<rpma::cluster::Versioned<RegionRecord>> now;
        std::string by = "it was deleted";
        if (rpma::cluster::GetRegion(*etcd_, keys_, name_, &now).ok() && now)
            by = "by " + now->record.changed_by() + ": " + now->record.reason();
        return Status(StatusCode::kFailedPrecondition, "the record of region " + name_ +
                                                           " changed in etcd under this Region (" +
                                                           by + "): open it again");
    }
    region_.record = std::move(next);
    region_.revision = response.header().revision();
    return Status();
}

ClusterAuthority::~ClusterAuthority() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    if (keeper_.joinable())
        keeper_.join();
    if (lease_ == 0)
        return;
    if (!keep_activity_ && inherited_.empty()) {
        // Closed with every write confirmed by every replica in sync:
        // nothing for the next writer to reconcile.
        etcdserverpb::TxnRequest txn;
        StillOurs(&txn);
        txn.add_success()->mutable_request_delete_range()->set_key(keys_.Activity(name_));
        etcdserverpb::TxnResponse response;
        (void)etcd_->Txn(txn, &response);
    }
    (void)etcd_->RevokeLease(lease_);
}

}  // namespace rpma::client
