#include "daemon/persistence_policy.h"

namespace rpmad {

StatusOr<Persistence> ChoosePersistence(Persistence configured, bool tcp, Granularity granularity,
                                        const std::string &region) {
    const bool apm_persists = tcp || granularity == Granularity::kByte;
    if (configured == Persistence::kAuto)
        return apm_persists ? Persistence::kApm : Persistence::kGpspm;
    if (configured == Persistence::kGpspm || apm_persists)
        return configured;
    const std::string why =
        granularity == Granularity::kPage
            ? "is on a page-cache file, where a persistent flush over verbs does not reach the "
              "persistence domain (it needs an msync)"
            : "is of cache-line granularity (DAX without eADR): an RNIC's writes land in the "
              "CPU cache (DDIO) and a persistent flush over verbs does not write them back, so "
              "a power cut would lose bytes it acknowledged";
    return Status(StatusCode::kFailedPrecondition,
                  "region '" + region + "' " + why +
                      ": data.persistence apm is refused on verbs for it; use gpspm (or auto), "
                      "or a platform with eADR (byte granularity)");
}

}  // namespace rpmad
