// A cluster writer's maintenance: what the controller asks of the region
// this writer holds (<prefix>maintenance/<name>), run on a thread of its
// own through Repair while the application writes. The controller decides
// (cluster/maintenance.h); the writer, whose record changes would fence
// anyone else's, carries it out.
#include "region_impl.h"

namespace rpma::client {
namespace {

// How often the writer looks for a request: one etcd read.
constexpr std::chrono::seconds kMaintenanceInterval{1};

}  // namespace

void Region::Impl::StartMaintenance() {
    maintainer_ = std::thread([this] { MaintenanceLoop(); });
}

void Region::Impl::StopMaintenance() {
    {
        std::lock_guard lock(maintenance_mu_);
        maintenance_stop_ = true;
    }
    maintenance_cv_.notify_all();
    if (maintainer_.joinable())
        maintainer_.join();
}

void Region::Impl::MaintenanceLoop() {
    std::unique_lock lock(maintenance_mu_);
    while (
        !maintenance_cv_.wait_for(lock, kMaintenanceInterval, [&] { return maintenance_stop_; })) {
        lock.unlock();
        std::optional<rpma::cluster::v1::MaintenanceRequest> request;
        // etcd out of reach: the request waits for it, as the controller.
        if (authority_->ReadMaintenance(&request).ok() && request)
            for (const auto &action : request->actions()) {
                {
                    std::lock_guard stopping(maintenance_mu_);
                    if (maintenance_stop_)
                        return;
                }
                Maintain(action);
            }
        lock.lock();
    }
}

void Region::Impl::Maintain(const rpma::cluster::v1::MaintenanceRequest::Action &action) {
    const auto i = static_cast<size_t>(action.member());
    ReplicaState state;
    std::string daemon_id;
    {
        std::lock_guard lock(mu_);
        if (fenced_ || action.member() < 0 || i >= members_.size())
            return;
        state = members_[i].state;
        daemon_id = members_[i].daemon_id;
    }
    if (state == ReplicaState::kResyncing)
        return;  // being repaired already
    if (action.replacement()) {
        if (daemon_id == action.node_id() && state == ReplicaState::kLive)
            return;  // done
        if (state == ReplicaState::kLive)
            if (!Retire(i, action.reason()).ok())
                return;  // the others would not meet the quorum: asked again later
    } else if (state == ReplicaState::kLive) {
        return;
    }
    RepairOptions options;
    options.new_address = action.control_address();
    options.new_data_address = action.data_address();
    (void)Repair(i, options);
}

Status Region::Impl::Retire(size_t i, const std::string &why) {
    const Op op{Op::Kind::kRepair, 0, 0, 0, i};
    std::lock_guard lock(mu_);
    if (members_[i].state != ReplicaState::kLive)
        return Status();
    if (members_.Live() <= members_.quorum())
        return Status(StatusCode::kFailedPrecondition,
                      "replica " + std::to_string(i) + " stays until another is in sync");
    MarkFailed(i, Status(StatusCode::kFailedPrecondition, "moved to another node: " + why), op);
    return Settle(op);
}

}  // namespace rpma::client
