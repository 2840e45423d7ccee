// rpma_client.h over rpma::client::Region: the only place with raw
// new/delete, as the C API shim.
#include "rpma_client.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "completion_queue.h"
#include "rpma/client/region.h"

using rpma::client::Batch;
using rpma::client::CompletionQueue;
using rpma::client::Region;
using rpma::client::Status;
using rpma::client::StatusCode;

struct rpma_client_region {
    // Declared first so that it outlives the Region, whose destructor runs
    // the last completions into it.
    CompletionQueue completions;
    std::unique_ptr<Region> region;
};

struct rpma_client_batch {
    Batch batch;
};

namespace {

thread_local std::string last_error;
// While a *_async call submits on this thread: where a submission refused
// for room (RPMA_CLIENT_OPEN_NO_WAIT) leaves its status. The Region runs
// that completion on the submitting thread before the call returns, and
// every other one on its progress thread, where this is null.
thread_local Status *refused_here = nullptr;
// The messages of the calling thread's last rpma_client_poll.
thread_local std::vector<std::string> polled_messages;

int Code(StatusCode code) {
    switch (code) {
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

int Report(const Status &status) {
    last_error = status.ok() ? "" : status.ToString();
    return Code(status.code());
}

int Invalid(const char *what) {
    return Report(Status(StatusCode::kInvalidArgument, what));
}

std::span<const std::byte> In(const void *buf, size_t len) {
    return {static_cast<const std::byte *>(buf), len};
}

// Reads an extensible struct as the kernel's copy_struct_from_user does:
// the bytes that fit into a zeroed one of ours, and a larger one only when
// everything past ours is zero.
Status ReadOpenOptions(const rpma_client_open_options *opts, rpma_client_open_options *out) {
    *out = {};
    out->size = sizeof *out;
    if (opts == nullptr)
        return Status();
    if (opts->size < sizeof opts->size)
        return Status(StatusCode::kInvalidArgument,
                      "rpma_client_region_open_ex: opts->size is " + std::to_string(opts->size) +
                          ": set it to sizeof(struct rpma_client_open_options)");
    const auto *bytes = reinterpret_cast<const unsigned char *>(opts);
    for (size_t i = sizeof *out; i < opts->size; ++i)
        if (bytes[i] != 0)
            return Status(StatusCode::kInvalidArgument,
                          "rpma_client_region_open_ex: opts->size is " +
                              std::to_string(opts->size) + " and sets options past the " +
                              std::to_string(sizeof *out) +
                              " bytes this library knows: it is older than the rpma_client.h the "
                              "program was built with; install a newer librpma_client.so.1");
    std::memcpy(out, opts, std::min(opts->size, sizeof *out));
    out->size = sizeof *out;
    return Status();
}

int Open(const char *const *addresses, size_t count, const char *name,
         const rpma_client_open_options &opts, rpma_client_region **region) {
    if (addresses == nullptr || name == nullptr || region == nullptr)
        return Invalid("rpma_client_region_open: addresses, name and region must not be NULL");
    if ((opts.flags &
         ~(RPMA_CLIENT_OPEN_READ_ONLY | RPMA_CLIENT_OPEN_FORCE | RPMA_CLIENT_OPEN_REPAIR_TAKEOVER |
           RPMA_CLIENT_OPEN_NO_GROUP_COMMIT | RPMA_CLIENT_OPEN_NO_WAIT)) != 0)
        return Invalid("rpma_client_region_open: unknown flags (RPMA_CLIENT_OPEN_*)");
    rpma::client::ReplicaSet set;
    for (size_t i = 0; i < count; ++i) {
        if (addresses[i] == nullptr)
            return Invalid("rpma_client_region_open: a NULL address");
        set.addresses.push_back(addresses[i]);
    }
    rpma::client::OpenOptions options;
    options.create_size = opts.create_size;
    options.quorum = opts.quorum;
    if (opts.operation_timeout_ms != 0)
        options.operation_timeout = std::chrono::milliseconds(opts.operation_timeout_ms);
    options.max_in_flight = opts.max_in_flight;
    options.read_only = (opts.flags & RPMA_CLIENT_OPEN_READ_ONLY) != 0;
    options.force = (opts.flags & RPMA_CLIENT_OPEN_FORCE) != 0;
    options.repair_takeover = (opts.flags & RPMA_CLIENT_OPEN_REPAIR_TAKEOVER) != 0;
    options.group_commit = (opts.flags & RPMA_CLIENT_OPEN_NO_GROUP_COMMIT) == 0;
    options.wait_for_room = (opts.flags & RPMA_CLIENT_OPEN_NO_WAIT) == 0;
    if (opts.admin_token != nullptr)
        set.options.admin_token = opts.admin_token;
    if (opts.client_token != nullptr)
        set.options.client_token = opts.client_token;
    if (opts.ca_file != nullptr)
        set.options.ca_file = opts.ca_file;
    if (opts.cert_file != nullptr)
        set.options.cert_file = opts.cert_file;
    if (opts.key_file != nullptr)
        set.options.key_file = opts.key_file;
    auto opened = Region::Open(set, name, options);
    if (!opened.ok())
        return Report(opened.status());
    *region = new rpma_client_region;
    (*region)->region = std::move(*opened);
    return Report(Status());
}

// The Region's completion of one submission: into the handle's queue, or,
// refused for room, to the submitting call (Submitted).
rpma::client::Completion Enqueue(rpma_client_region *region, int op, void *user_data) {
    return [completions = &region->completions, op, user_data](Status status) {
        if (refused_here != nullptr) {
            *refused_here = std::move(status);
            return;
        }
        completions->Push(
            {user_data, op, Code(status.code()), status.ok() ? "" : status.ToString()});
    };
}

// What `submit` (a Region *Async call with Enqueue's completion) returns
// to C: RPMA_CLIENT_OK, submitted (its completion will be polled), or
// RPMA_CLIENT_E_EXHAUSTED, refused for room, with no completion.
template <class Submit>
int Submitted(const Submit &submit) {
    Status refused;
    refused_here = &refused;
    submit();
    refused_here = nullptr;
    return Report(refused);
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
    rpma_client_open_options all{};
    all.size = sizeof all;
    all.flags = flags;
    if (opts != nullptr) {
        all.create_size = opts->create_size;
        all.quorum = opts->quorum;
        all.operation_timeout_ms = opts->operation_timeout_ms;
        all.admin_token = opts->admin_token;
        all.ca_file = opts->ca_file;
    }
    return Open(addresses, count, name, all, region);
}

int rpma_client_region_open_ex(const char *const *addresses, size_t count, const char *name,
                               const struct rpma_client_open_options *opts,
                               struct rpma_client_region **region) {
    rpma_client_open_options known;
    if (Status s = ReadOpenOptions(opts, &known); !s.ok())
        return Report(s);
    return Open(addresses, count, name, known, region);
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

int rpma_client_write_async(struct rpma_client_region *region, uint64_t offset, const void *buf,
                            size_t len, void *user_data) {
    if (region == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_write_async: NULL region or buffer");
    return Submitted([&] {
        region->region->WriteAsync(offset, In(buf, len),
                                   Enqueue(region, RPMA_CLIENT_OP_WRITE, user_data));
    });
}

int rpma_client_persist_async(struct rpma_client_region *region, uint64_t offset, size_t len,
                              void *user_data) {
    if (region == nullptr)
        return Invalid("rpma_client_persist_async: NULL region");
    return Submitted([&] {
        region->region->PersistAsync(offset, len,
                                     Enqueue(region, RPMA_CLIENT_OP_PERSIST, user_data));
    });
}

int rpma_client_write_persist_async(struct rpma_client_region *region, uint64_t offset,
                                    const void *buf, size_t len, void *user_data) {
    if (region == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_write_persist_async: NULL region or buffer");
    return Submitted([&] {
        region->region->WritePersistAsync(offset, In(buf, len),
                                          Enqueue(region, RPMA_CLIENT_OP_WRITE_PERSIST, user_data));
    });
}

int rpma_client_read_async(struct rpma_client_region *region, size_t replica, uint64_t offset,
                           void *buf, size_t len, void *user_data) {
    if (region == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_read_async: NULL region or buffer");
    return Submitted([&] {
        region->region->ReadAsync(offset, {static_cast<std::byte *>(buf), len}, replica,
                                  Enqueue(region, RPMA_CLIENT_OP_READ, user_data));
    });
}

int rpma_client_poll_fd(struct rpma_client_region *region) {
    if (region == nullptr)
        return Invalid("rpma_client_poll_fd: NULL region");
    const int fd = region->completions.Fd();
    if (fd < 0)
        return Report(Status(StatusCode::kResourceExhausted,
                             std::string("rpma_client_poll_fd: eventfd: ") + std::strerror(errno) +
                                 "; raise the process's open file limit (ulimit -n)"));
    last_error.clear();
    return fd;
}

int rpma_client_poll(struct rpma_client_region *region, struct rpma_client_completion *out,
                     size_t max) {
    if (region == nullptr || (out == nullptr && max > 0))
        return Invalid("rpma_client_poll: NULL region or completions");
    // An int count: more than INT_MAX at once is never asked for in practice.
    max = std::min<size_t>(max, 1 << 20);
    std::vector<CompletionQueue::Entry> taken;
    region->completions.Take(max, &taken);
    polled_messages.clear();
    polled_messages.reserve(taken.size());
    for (size_t i = 0; i < taken.size(); ++i) {
        polled_messages.push_back(std::move(taken[i].message));
        out[i].user_data = taken[i].user_data;
        out[i].status = taken[i].status;
        out[i].op = taken[i].op;
        out[i].message = polled_messages.back().c_str();
    }
    last_error.clear();
    return static_cast<int>(taken.size());
}

int rpma_client_batch_new(struct rpma_client_batch **batch) {
    if (batch == nullptr)
        return Invalid("rpma_client_batch_new: NULL batch");
    *batch = new rpma_client_batch;
    return Report(Status());
}

int rpma_client_batch_add_write(struct rpma_client_batch *batch, uint64_t offset, const void *buf,
                                size_t len) {
    if (batch == nullptr || (buf == nullptr && len > 0))
        return Invalid("rpma_client_batch_add_write: NULL batch or buffer");
    batch->batch.Write(offset, In(buf, len));
    return Report(Status());
}

size_t rpma_client_batch_size(const struct rpma_client_batch *batch) {
    return batch ? batch->batch.size() : 0;
}

void rpma_client_batch_clear(struct rpma_client_batch *batch) {
    if (batch != nullptr)
        batch->batch.Clear();
}

void rpma_client_batch_free(struct rpma_client_batch *batch) {
    delete batch;
}

int rpma_client_commit(struct rpma_client_region *region, const struct rpma_client_batch *batch) {
    if (region == nullptr || batch == nullptr)
        return Invalid("rpma_client_commit: NULL region or batch");
    return Report(region->region->Commit(batch->batch));
}

int rpma_client_commit_async(struct rpma_client_region *region,
                             const struct rpma_client_batch *batch, void *user_data) {
    if (region == nullptr || batch == nullptr)
        return Invalid("rpma_client_commit_async: NULL region or batch");
    // The caller may reuse the batch once this returns; region.h does not
    // promise that CommitAsync is done with it by then, so a copy lives
    // until the completion.
    auto copy = std::make_shared<Batch>(batch->batch);
    return Submitted([&] {
        region->region->CommitAsync(
            *copy, [copy, done = Enqueue(region, RPMA_CLIENT_OP_COMMIT, user_data)](Status status) {
                done(std::move(status));
            });
    });
}

}  // extern "C"
