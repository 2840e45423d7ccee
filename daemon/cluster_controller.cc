#include "daemon/cluster_controller.h"

#include <ctime>
#include <set>

#include "daemon/log.h"
#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "rpma/client/control_plane.h"
#include "rpma/client/region.h"

namespace rpmad {
namespace {

using rpma::cluster::RegionRecord;

constexpr size_t kHistoryKept = 50;

int64_t NowUnix() {
    return static_cast<int64_t>(std::time(nullptr));
}

}  // namespace

StatusOr<std::unique_ptr<ClusterController>> ClusterController::Start(Options options) {
    std::unique_ptr<ClusterController> c(new ClusterController());
    const ClusterConfig &config = options.config;
    if (auto s = rpma::cluster::ConnectEtcd(
            config.etcd_endpoints, config.etcd_ca_file, config.etcd_cert_file, config.etcd_key_file,
            std::chrono::milliseconds(config.lease_ttl_seconds * 1000 / 4), &c->etcd_);
        !s.ok())
        return Status(StatusCode::kInvalidArgument, s.error_message());
    c->keys_ = rpma::cluster::Keys(options.config.prefix);
    c->cluster_.etcd_endpoints = options.config.etcd_endpoints;
    c->cluster_.etcd_ca_file = options.config.etcd_ca_file;
    c->cluster_.etcd_cert_file = options.config.etcd_cert_file;
    c->cluster_.etcd_key_file = options.config.etcd_key_file;
    c->cluster_.prefix = options.config.prefix;
    c->cluster_.options = options.connect;
    c->cluster_.writer_lease = std::chrono::seconds(options.config.lease_ttl_seconds);
    c->cluster_.maintain = false;  // it repairs itself, then closes
    c->options_ = std::move(options);
    c->thread_ = std::thread([p = c.get()] { p->Run(); });
    return c;
}

ClusterController::~ClusterController() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

void ClusterController::Run() {
    const auto interval = std::chrono::milliseconds(
        std::max<uint32_t>(options_.config.lease_ttl_seconds, 3) * 1000 / 3);
    std::unique_lock lock(mu_);
    while (!stop_) {
        lock.unlock();
        Step();
        lock.lock();
        wake_.wait_for(lock, interval, [&] { return stop_; });
    }
}

bool ClusterController::Lead(int64_t lease) {
    const std::string key = keys_.Controller();
    bool took = false;
    if (lease != 0 && etcd_->CompareAndPut(key, options_.node_id, 0, &took, nullptr, lease).ok() &&
        took)
        return true;
    std::optional<rpma::cluster::KeyValue> holder;
    if (!etcd_->Get(key, &holder).ok() || !holder)
        return false;
    return lease != 0 && holder->value == options_.node_id && holder->lease == lease;
}

void ClusterController::Record(const std::string &event) {
    Log().info("cluster controller: {}", event);
    history_.push_back(std::to_string(NowUnix()) + " " + event);
    while (history_.size() > kHistoryKept)
        history_.pop_front();
    rpma::cluster::v1::ControllerStatus status;
    status.set_leader(options_.node_id);
    status.set_updated_unix_seconds(NowUnix());
    for (const std::string &h : history_)
        status.add_history(h);
    for (const auto &[region, waiting] : last_waiting_)
        if (!waiting.empty())
            status.add_waiting(region + ": " + waiting);
    (void)etcd_->Put(keys_.ControllerStatus(), rpma::cluster::ToJson(status));
}

void ClusterController::Step() {
    const bool leading = Lead(options_.lease());
    if (leading != leading_) {
        leading_ = leading;
        Log().info("cluster controller: {} on node {}", leading ? "leading" : "not leading",
                   options_.node_id);
        if (leading)
            Record("node " + options_.node_id + " leads the controller");
    }
    if (!leading) {
        asked_.clear();
        orphans_.clear();
        orphaned_activity_.clear();
        return;
    }
    std::vector<rpma::cluster::NodeRecord> live;
    std::vector<rpma::cluster::Versioned<RegionRecord>> regions;
    std::vector<rpma::cluster::KeyValue> writers, activities;
    if (!rpma::cluster::ListNodes(*etcd_, keys_, &live).ok() ||
        !rpma::cluster::ListRegions(*etcd_, keys_, &regions).ok() ||
        !etcd_->List(keys_.Writers(), &writers).ok() ||
        !etcd_->List(keys_.Activities(), &activities).ok())
        return;  // etcd out of reach: membership changes wait for it
    const int64_t now = NowUnix();
    std::set<std::string> alive, held;
    for (const auto &n : live)
        alive.insert(n.node_id());
    for (const auto &w : writers)
        held.insert(w.key.substr(keys_.Writers().size()));
    std::set<std::string> members;
    for (const auto &r : regions)
        for (const auto &m : r.record.replica_set().members())
            members.insert(m.daemon_id());
    for (const std::string &id : members)
        if (alive.count(id))
            dead_since_.erase(id);
        else
            dead_since_.emplace(id, now);
    for (const auto &versioned : regions) {
        const RegionRecord &region = versioned.record;
        if (region.state() != RegionRecord::STATE_READY)
            continue;
        rpma::cluster::MaintenanceInput input;
        input.region = region;
        input.live = live;
        input.dead_since = dead_since_;
        input.now_unix = now;
        input.replace_after_seconds = options_.config.replace_after_seconds;
        const rpma::cluster::MaintenancePlan plan = rpma::cluster::PlanMaintenance(input);
        std::string waiting;
        for (const std::string &w : plan.waiting)
            waiting += (waiting.empty() ? "" : "; ") + w;
        // A change of what a region waits for is a decision too.
        if (std::string &was = last_waiting_[region.name()]; was != waiting) {
            was = waiting;
            if (!waiting.empty())
                Record("region " + region.name() + ": waiting: " + waiting);
        }
        // A region an application writer holds is repaired by that writer
        // (its record changes would fence the controller's): it is asked.
        Ask(region.name(),
            held.count(region.name()) ? plan.actions : std::vector<rpma::cluster::RepairAction>{});
        if (plan.actions.empty() || held.count(region.name()))
            continue;
        Repair(versioned, plan.actions);
    }
    Reconcile(activities, held);
    // Every fifth step: it asks every live node for its regions.
    if (++steps_ % 5 == 0)
        SweepOrphans(live, regions);
}

rpma::client::Result<std::unique_ptr<rpma::client::Region>> ClusterController::OpenAsWriter(
    const std::string &name, bool take_over_repairs) {
    rpma::client::OpenOptions options;
    // One in-sync replica to copy from is enough.
    options.quorum = 1;
    options.repair_takeover = take_over_repairs;
    options.operation_timeout = std::chrono::milliseconds(options_.config.lease_ttl_seconds * 1000);
    return rpma::client::Region::Open(cluster_, name, options);
}

void ClusterController::Reconcile(const std::vector<rpma::cluster::KeyValue> &activities,
                                  const std::set<std::string> &held) {
    const int64_t now = NowUnix();
    std::map<std::string, int64_t> orphaned;
    for (const auto &kv : activities) {
        const std::string name = kv.key.substr(keys_.Activities().size());
        rpma::cluster::v1::ActivityLog log;
        if (held.count(name) || !rpma::cluster::FromJson(kv.value, kv.key, &log).ok() ||
            log.extents().empty())
            continue;
        // A writer that died left it. Its application gets a lease's time
        // to open the region again (which reconciles as well), then the
        // controller opens it as a writer, which reconciles those extents,
        // and closes it, which clears the log.
        const int64_t since = orphaned[name] =
            orphaned_activity_.count(name) ? orphaned_activity_[name] : now;
        if (now - since < options_.config.lease_ttl_seconds)
            continue;
        auto opened = OpenAsWriter(name, /*take_over_repairs=*/false);
        const std::string outcome =
            std::to_string(log.extents_size()) +
            " extent(s) a writer that died may have left differing " +
            (opened.ok() ? "reconciled" : "not reconciled yet: " + opened.status().ToString());
        // Once per outcome, not every step.
        if (std::string &was = last_reconciled_[name]; was != outcome) {
            was = outcome;
            Record("region " + name + ": " + outcome);
        }
    }
    orphaned_activity_ = std::move(orphaned);
}

void ClusterController::Ask(const std::string &region,
                            const std::vector<rpma::cluster::RepairAction> &actions) {
    rpma::cluster::v1::MaintenanceRequest request;
    for (const auto &a : actions) {
        auto *action = request.add_actions();
        action->set_member(a.member);
        action->set_node_id(a.node_id);
        action->set_control_address(a.control_address);
        action->set_data_address(a.data_address);
        action->set_replacement(a.replacement);
        action->set_moved_from_address(a.moved_from_address);
        action->set_reason(a.reason);
    }
    const std::string asked = actions.empty() ? "" : rpma::cluster::ToJson(request);
    // Unknown yet (this leader's first step): whatever an earlier leader
    // asked is replaced.
    if (auto was = asked_.find(region); was != asked_.end() && was->second == asked)
        return;
    const std::string key = keys_.Maintenance(region);
    if (asked.empty()) {
        if (etcd_->Delete(key).ok())
            asked_[region] = asked;
        return;
    }
    request.set_controller(options_.node_id);
    request.set_requested_unix_seconds(NowUnix());
    if (!etcd_->Put(key, rpma::cluster::ToJson(request)).ok())
        return;
    asked_[region] = asked;
    for (const auto &a : actions)
        Record("region " + region + ": asked its writer: " + a.reason);
}

void ClusterController::SweepOrphans(
    const std::vector<rpma::cluster::NodeRecord> &live,
    const std::vector<rpma::cluster::Versioned<RegionRecord>> &regions) {
    // A copy a node holds of a region whose record does not place it there:
    // a node that was dead while its replica was placed elsewhere, or a
    // move whose delete did not reach it. Deleted once seen so twice at the
    // same revision of the record, so that a copy being created for a
    // replacement (before its record names it) is left alone.
    std::map<std::string, const rpma::cluster::Versioned<RegionRecord> *> by_name;
    for (const auto &r : regions)
        by_name[r.record.name()] = &r;
    std::map<std::string, int64_t> orphans;
    for (const auto &node : live) {
        auto control =
            rpma::client::ControlPlane::Connect(node.control_address(), options_.connect);
        if (!control.ok())
            continue;
        ::rpmad::v1::ListRegionsResponse held;
        if (!(*control)->regions().ListRegions((*control)->Context().get(), {}, &held).ok())
            continue;
        for (const auto &copy : held.regions()) {
            auto region = by_name.find(copy.name());
            if (region == by_name.end() ||
                region->second->record.state() != RegionRecord::STATE_READY)
                continue;  // not the cluster's, or being created or deleted
            bool placed = false;
            for (const auto &m : region->second->record.replica_set().members())
                placed = placed || m.daemon_id() == node.node_id();
            if (placed)
                continue;
            const std::string key = node.node_id() + "/" + copy.name();
            orphans[key] = region->second->revision;
            auto seen = orphans_.find(key);
            if (seen == orphans_.end() || seen->second != region->second->revision)
                continue;
            ::rpmad::v1::DeleteRegionRequest request;
            request.set_name(copy.name());
            request.set_force(true);
            ::rpmad::v1::DeleteRegionResponse response;
            const grpc::Status deleted =
                (*control)->regions().DeleteRegion((*control)->Context().get(), request, &response);
            Record("region " + copy.name() + ": the copy left on node " + node.node_id() +
                   ", which its record no longer places there, " +
                   (deleted.ok() ? "deleted" : "not deleted: " + deleted.error_message()));
        }
    }
    orphans_ = std::move(orphans);
}

bool ClusterController::StaleBeforeMoving(const rpma::cluster::Versioned<RegionRecord> &region,
                                          const std::vector<rpma::cluster::RepairAction> &actions) {
    using Member = ::rpmad::v1::ReplicaSetMember;
    RegionRecord next = region.record;
    auto *set = next.mutable_replica_set();
    std::string moved;
    for (const auto &action : actions) {
        Member *m = set->mutable_members(action.member);
        if (m->state() != Member::STATE_IN_SYNC)
            continue;
        m->set_state(Member::STATE_STALE);
        m->set_stale_since(set->generation() + 1);
        moved += (moved.empty() ? "" : ", ") + std::to_string(action.member);
    }
    if (moved.empty())
        return true;
    int in_sync = 0;
    for (const auto &m : set->members())
        in_sync += m.state() == Member::STATE_IN_SYNC;
    if (in_sync == 0) {
        Record("region " + region.record.name() +
               ": waiting: no other replica is in sync to copy from while replica " + moved +
               " moves");
        return false;
    }
    set->set_generation(set->generation() + 1);
    set->set_writer("rpmad controller on node " + options_.node_id);
    set->set_updated_unix_seconds(NowUnix());
    set->set_reason("moving replica " + moved + " off a draining node");
    next.set_changed_by(set->writer());
    next.set_reason(set->reason());
    if (!rpma::cluster::PutRegion(*etcd_, keys_, next, region.revision).ok())
        return false;  // changed meanwhile: the next step sees the new record
    Record("region " + region.record.name() + ": replica " + moved +
           " recorded stale to move it off its draining node");
    return true;
}

void ClusterController::Repair(const rpma::cluster::Versioned<RegionRecord> &versioned,
                               const std::vector<rpma::cluster::RepairAction> &actions) {
    const RegionRecord &region = versioned.record;
    if (!StaleBeforeMoving(versioned, actions))
        return;
    // A repair left REPAIRING by a controller that died is taken over.
    auto opened = OpenAsWriter(region.name(), /*take_over_repairs=*/true);
    if (!opened.ok()) {
        Record("region " + region.name() + ": cannot repair it now: " + opened.status().ToString());
        return;
    }
    for (const auto &action : actions) {
        Record("region " + region.name() + ": " + action.reason);
        rpma::client::RepairOptions repair;
        if (action.replacement)
            repair.new_address = action.control_address;
        repair.new_data_address = action.data_address;
        const rpma::client::Status done = (*opened)->Repair(action.member, repair);
        Record("region " + region.name() + ": replica " + std::to_string(action.member) +
               (done.ok() ? " in sync on node " + action.node_id
                          : " not repaired: " + done.ToString()));
        if (!done.ok() || action.moved_from_address.empty())
            continue;
        // Moved off a node that is still there (draining): its copy goes.
        auto control =
            rpma::client::ControlPlane::Connect(action.moved_from_address, options_.connect);
        ::rpmad::v1::DeleteRegionRequest request;
        request.set_name(region.name());
        request.set_force(true);
        ::rpmad::v1::DeleteRegionResponse response;
        const grpc::Status deleted =
            control.ok() ? (*control)->regions().DeleteRegion((*control)->Context().get(), request,
                                                              &response)
                         : grpc::Status(grpc::StatusCode::UNAVAILABLE, "cannot connect");
        Record("region " + region.name() + ": the old copy on " + action.moved_from_address +
               (deleted.ok() ? " deleted" : " not deleted: " + deleted.error_message()));
    }
}

}  // namespace rpmad
