// rpma_client.h over rpma::client::Region: the only place with raw
// new/delete, as the C API shim.
#include "rpma_client.h"

#include <string>

#include "rpma/client/region.h"

using rpma::client::Region;
using rpma::client::Status;
using rpma::client::StatusCode;

struct rpma_client_region {
    std::unique_ptr<Region> region;
};

namespace {

thread_local std::string last_error;

int Report(const Status &status) {
    last_error = status.ok() ? "" : status.ToString();
    switch (status.code()) {
        case StatusCode::kOk:
            return RPMA_CLIENT_OK;
        case StatusCode::kInvalidArgument:
            return RPMA_CLIENT_E_INVAL;
        case StatusCode::kNotFound:
            return RPMA_CLIENT_E_NOT_FOUND;
        case StatusCode::kAlreadyExists:
            return RPMA_CLIENT_E_EXISTS;
        case StatusCode::kFailedPrecondition:
            return RPMA_CLIENT_E_PRECONDITION;
        case StatusCode::kPermissionDenied:
            return RPMA_CLIENT_E_PERMISSION;
        case StatusCode::kUnavailable:
            return RPMA_CLIENT_E_UNAVAILABLE;
        case StatusCode::kDeadlineExceeded:
            return RPMA_CLIENT_E_TIMEOUT;
        case StatusCode::kResourceExhausted:
            return RPMA_CLIENT_E_EXHAUSTED;
        case StatusCode::kDataPlane:
            return RPMA_CLIENT_E_DATA_PLANE;
        case StatusCode::kQuorumLost:
            return RPMA_CLIENT_E_QUORUM_LOST;
        case StatusCode::kInternal:
            return RPMA_CLIENT_E_INTERNAL;
    }
    return RPMA_CLIENT_E_INTERNAL;
}

int Invalid(const char *what) {
    return Report(Status(StatusCode::kInvalidArgument, what));
}

std::span<const std::byte> In(const void *buf, size_t len) {
    return {static_cast<const std::byte *>(buf), len};
}

}  // namespace

extern "C" {

int rpma_client_region_open(const char *const *addresses, size_t count, const char *name,
                            const struct rpma_client_options *opts,
                            struct rpma_client_region **region) {
    return rpma_client_region_open_flags(addresses, count, name, opts, 0, region);
}

int rpma_client_region_open_flags(const char *const *addresses, size_t count, const char *name,
                                  const struct rpma_client_options *opts, unsigned flags,
                                  struct rpma_client_region **region) {
    if (addresses == nullptr || name == nullptr || region == nullptr)
        return Invalid("rpma_client_region_open: addresses, name and region must not be NULL");
    if ((flags & ~(RPMA_CLIENT_OPEN_READ_ONLY | RPMA_CLIENT_OPEN_FORCE |
                   RPMA_CLIENT_OPEN_REPAIR_TAKEOVER)) != 0)
        return Invalid("rpma_client_region_open_flags: unknown flags");
    rpma::client::ReplicaSet set;
    for (size_t i = 0; i < count; ++i) {
        if (addresses[i] == nullptr)
            return Invalid("rpma_client_region_open: a NULL address");
        set.addresses.push_back(addresses[i]);
    }
    rpma::client::OpenOptions options;
    if (opts != nullptr) {
        options.create_size = opts->create_size;
        options.quorum = opts->quorum;
        if (opts->operation_timeout_ms != 0)
            options.operation_timeout = std::chrono::milliseconds(opts->operation_timeout_ms);
        if (opts->admin_token != nullptr)
            set.options.admin_token = opts->admin_token;
        if (opts->ca_file != nullptr)
            set.options.ca_file = opts->ca_file;
    }
    options.read_only = (flags & RPMA_CLIENT_OPEN_READ_ONLY) != 0;
    options.force = (flags & RPMA_CLIENT_OPEN_FORCE) != 0;
    options.repair_takeover = (flags & RPMA_CLIENT_OPEN_REPAIR_TAKEOVER) != 0;
    auto opened = Region::Open(set, name, options);
    if (!opened.ok())
        return Report(opened.status());
    *region = new rpma_client_region{std::move(*opened)};
    return Report(Status());
}

void rpma_client_region_close(struct rpma_client_region *region) {
    delete region;
}

uint64_t rpma_client_region_size(const struct rpma_client_region *region) {
    return region ? region->region->size() : 0;
}

int rpma_client_replica_live(const struct rpma_client_region *region, size_t index) {
    if (region == nullptr)
        return 0;
    const auto infos = region->region->replicas();
    return index < infos.size() && infos[index].state == rpma::client::ReplicaState::kLive;
}

int rpma_client_replica_state(const struct rpma_client_region *region, size_t index) {
    if (region == nullptr)
        return Invalid("rpma_client_replica_state: NULL region");
    const auto infos = region->region->replicas();
    if (index >= infos.size())
        return Invalid("rpma_client_replica_state: no such replica");
    switch (infos[index].state) {
        case rpma::client::ReplicaState::kLive:
            return RPMA_CLIENT_REPLICA_LIVE;
        case rpma::client::ReplicaState::kFailed:
            return RPMA_CLIENT_REPLICA_FAILED;
        case rpma::client::ReplicaState::kRepairing:
            return RPMA_CLIENT_REPLICA_REPAIRING;
        case rpma::client::ReplicaState::kStale:
            return RPMA_CLIENT_REPLICA_STALE;
    }
    return RPMA_CLIENT_REPLICA_STALE;
}

uint64_t rpma_client_region_generation(const struct rpma_client_region *region) {
    return region ? region->region->generation() : 0;
}

int rpma_client_write(struct rpma_client_region *region, uint64_t offset, const void *buf,
                      size_t len) {
    if (region == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_write: NULL region or buffer");
    return Report(region->region->Write(offset, In(buf, len)));
}

int rpma_client_persist(struct rpma_client_region *region, uint64_t offset, size_t len) {
    if (region == nullptr)
        return Invalid("rpma_client_persist: NULL region");
    return Report(region->region->Persist(offset, len));
}

int rpma_client_write_persist(struct rpma_client_region *region, uint64_t offset, const void *buf,
                              size_t len) {
    if (region == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_write_persist: NULL region or buffer");
    return Report(region->region->WritePersist(offset, In(buf, len)));
}

int rpma_client_read(struct rpma_client_region *region, size_t replica, uint64_t offset, void *buf,
                     size_t len) {
    if (region == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_read: NULL region or buffer");
    return Report(region->region->Read(offset, {static_cast<std::byte *>(buf), len}, replica));
}

int rpma_client_readd(struct rpma_client_region *region, size_t index, const char *new_address) {
    if (region == nullptr)
        return Invalid("rpma_client_readd: NULL region");
    return Report(region->region->Readd(index, nullptr, new_address ? new_address : ""));
}

const char *rpma_client_last_error(void) {
    return last_error.c_str();
}

}  // extern "C"
