// rpma::PeerCfg: owns an rpma_peer_cfg, the "direct write to PMem" property
// a server states and ships to its clients as a descriptor. Independent of
// every other object.
#ifndef RPMA_CORE_INCLUDE_RPMA_PEER_CFG_HPP
#define RPMA_CORE_INCLUDE_RPMA_PEER_CFG_HPP

#include <cstddef>
#include <span>
#include <vector>

#include "librpma.h"
#include "rpma/error.hpp"
#include "rpma/owner.hpp"

namespace rpma {

class PeerCfg {
  public:
    PeerCfg() = default;

    static Result<PeerCfg> New() {
        rpma_peer_cfg *cfg = nullptr;
        detail::Returned made = detail::Check(rpma_peer_cfg_new(&cfg));
        if (made.code != 0)
            return detail::Failure(made, "rpma_peer_cfg_new");
        return PeerCfg(cfg);
    }

    static Result<PeerCfg> FromDescriptor(std::span<const std::byte> descriptor) {
        rpma_peer_cfg *cfg = nullptr;
        detail::Returned made = detail::Check(
            rpma_peer_cfg_from_descriptor(descriptor.data(), descriptor.size(), &cfg));
        if (made.code != 0)
            return detail::Failure(made, "rpma_peer_cfg_from_descriptor");
        return PeerCfg(cfg);
    }

    Result<void> SetDirectWriteToPmem(bool supported) {
        return detail::Status(
            detail::Check(rpma_peer_cfg_set_direct_write_to_pmem(cfg_.get(), supported)),
            "rpma_peer_cfg_set_direct_write_to_pmem");
    }

    Result<bool> DirectWriteToPmem() const {
        bool supported = false;
        detail::Returned got =
            detail::Check(rpma_peer_cfg_get_direct_write_to_pmem(cfg_.get(), &supported));
        if (got.code != 0)
            return detail::Failure(got, "rpma_peer_cfg_get_direct_write_to_pmem");
        return supported;
    }

    Result<std::vector<std::byte>> Descriptor() const {
        size_t size = 0;
        detail::Returned sized =
            detail::Check(rpma_peer_cfg_get_descriptor_size(cfg_.get(), &size));
        if (sized.code != 0)
            return detail::Failure(sized, "rpma_peer_cfg_get_descriptor_size");
        std::vector<std::byte> descriptor(size);
        detail::Returned got =
            detail::Check(rpma_peer_cfg_get_descriptor(cfg_.get(), descriptor.data()));
        if (got.code != 0)
            return detail::Failure(got, "rpma_peer_cfg_get_descriptor");
        return descriptor;
    }

    rpma_peer_cfg *get() const { return cfg_.get(); }

  private:
    explicit PeerCfg(rpma_peer_cfg *cfg) : cfg_(cfg) {}

    detail::Owner<rpma_peer_cfg, rpma_peer_cfg_delete> cfg_;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_PEER_CFG_HPP
