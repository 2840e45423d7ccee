// rpma::MemoryRegion owns an rpma_mr_local: memory registered with a Peer,
// which must outlive it, and whose bytes must outlive it in turn.
// rpma::RemoteMemory owns an rpma_mr_remote: the other side's region, made
// from the descriptor it sent; independent of every local object.
#ifndef RPMA_CORE_INCLUDE_RPMA_MR_HPP
#define RPMA_CORE_INCLUDE_RPMA_MR_HPP

#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "librpma.h"
#include "rpma/error.hpp"
#include "rpma/owner.hpp"
#include "rpma/peer.hpp"
#include "rpma_ext.h"

namespace rpma {

class MemoryRegion {
  public:
    MemoryRegion() = default;
    MemoryRegion(MemoryRegion &&other) noexcept
        : mr_(std::move(other.mr_)), bytes_(std::exchange(other.bytes_, {})) {}
    MemoryRegion &operator=(MemoryRegion &&other) noexcept {
        mr_ = std::move(other.mr_);
        bytes_ = std::exchange(other.bytes_, {});
        return *this;
    }

    // usage: RPMA_MR_USAGE_* bits.
    static Result<MemoryRegion> Register(Peer &peer, std::span<std::byte> bytes, int usage) {
        rpma_mr_local *mr = nullptr;
        detail::Returned made =
            detail::Check(rpma_mr_reg(peer.get(), bytes.data(), bytes.size(), usage, &mr));
        if (made.code != 0)
            return detail::Failure(made, "rpma_mr_reg", std::to_string(bytes.size()) + " bytes");
        return MemoryRegion(mr, bytes);
    }

    // What the other side needs for RemoteMemory::FromDescriptor.
    Result<std::vector<std::byte>> Descriptor() const {
        size_t size = 0;
        detail::Returned sized = detail::Check(rpma_mr_get_descriptor_size(mr_.get(), &size));
        if (sized.code != 0)
            return detail::Failure(sized, "rpma_mr_get_descriptor_size");
        std::vector<std::byte> descriptor(size);
        detail::Returned got = detail::Check(rpma_mr_get_descriptor(mr_.get(), descriptor.data()));
        if (got.code != 0)
            return detail::Failure(got, "rpma_mr_get_descriptor");
        return descriptor;
    }

    // rpma_ext_mr_get_remote_stats (rpma_ext.h): what peers wrote, read and
    // persisted here so far; RPMA_E_NOSUPP on verbs, where nothing sees it.
    Result<rpma_ext_mr_remote_stats> RemoteStats() const {
        rpma_ext_mr_remote_stats stats{};
        detail::Returned got = detail::Check(rpma_ext_mr_get_remote_stats(mr_.get(), &stats));
        if (got.code != 0)
            return detail::Failure(got, "rpma_ext_mr_get_remote_stats");
        return stats;
    }

    // The registered bytes; empty when this object is empty.
    std::span<std::byte> bytes() const { return bytes_; }
    rpma_mr_local *get() const { return mr_.get(); }

  private:
    MemoryRegion(rpma_mr_local *mr, std::span<std::byte> bytes) : mr_(mr), bytes_(bytes) {}

    detail::Owner<rpma_mr_local, rpma_mr_dereg> mr_;
    std::span<std::byte> bytes_;
};

class RemoteMemory {
  public:
    RemoteMemory() = default;

    static Result<RemoteMemory> FromDescriptor(std::span<const std::byte> descriptor) {
        rpma_mr_remote *mr = nullptr;
        detail::Returned made = detail::Check(
            rpma_mr_remote_from_descriptor(descriptor.data(), descriptor.size(), &mr));
        if (made.code != 0)
            return detail::Failure(made, "rpma_mr_remote_from_descriptor",
                                   std::to_string(descriptor.size()) + " bytes");
        return RemoteMemory(mr);
    }

    Result<size_t> size() const {
        size_t size = 0;
        detail::Returned got = detail::Check(rpma_mr_remote_get_size(mr_.get(), &size));
        if (got.code != 0)
            return detail::Failure(got, "rpma_mr_remote_get_size");
        return size;
    }

    // RPMA_MR_USAGE_FLUSH_TYPE_* bits the region was registered with.
    Result<int> FlushType() const {
        int type = 0;
        detail::Returned got = detail::Check(rpma_mr_remote_get_flush_type(mr_.get(), &type));
        if (got.code != 0)
            return detail::Failure(got, "rpma_mr_remote_get_flush_type");
        return type;
    }

    rpma_mr_remote *get() const { return mr_.get(); }

  private:
    explicit RemoteMemory(rpma_mr_remote *mr) : mr_(mr) {}

    detail::Owner<rpma_mr_remote, rpma_mr_remote_delete> mr_;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_MR_HPP
