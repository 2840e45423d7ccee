#include "daemon/persistence_policy.h"

namespace rpmad {

StatusOr<Persistence> ChoosePersistence(Persistence configured, bool flush_persists,
                                        Granularity granularity, const std::string &region) {
    const bool apm_persists = flush_persists || granularity == Granularity::kByte;
    if (configured == Persistence::kAuto)
        return apm_persists ? Persistence::kApm : Persistence::kGpspm;
    if (configured == Persistence::kGpspm || apm_persists)
        return configured;
    const std::string why =
        granularity == Granularity::kPage
            ? "is on a page-cache file, where this device's persistent flush does not reach the "
              "persistence domain (it needs an msync)"
            : "is of cache-line granularity (DAX without eADR): an RNIC's writes land in the "
              "CPU cache (DDIO) and this device's persistent flush does not write them back, so "
              "a power cut would lose bytes it acknowledged";
    return Status(
        StatusCode::kFailedPrecondition,
        "region '" + region + "' " + why +
            ": data.persistence apm is refused on this device for it; use gpspm (or auto), "
            "or a platform with eADR (byte granularity)");
}

}  // namespace rpmad
