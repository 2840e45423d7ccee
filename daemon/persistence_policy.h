// How clients of a region persist (APM or GPSPM), decided from the
// configured data.persistence, the provider and the region's granularity;
// and the refusal of an APM that would acknowledge what a power cut loses.
//
// On verbs an APM flush is an RDMA read (or a native FLUSH) that the RNIC
// completes once the written bytes are in the server's memory hierarchy.
// With DDIO they sit in the CPU cache, which only eADR platforms (byte
// granularity) keep across a power cut; a DAX file of cache-line
// granularity needs its lines written back, which only the CPU can do
// (rpmad, for a GPSPM request), and a page-cache file needs an msync.
// A device whose persistent flush persists whatever memory it registered
// (rpma_ext_device_query's flush_persists: the tcp provider persists the
// range itself before it acknowledges) needs none of that.
#ifndef DAEMON_PERSISTENCE_POLICY_H
#define DAEMON_PERSISTENCE_POLICY_H

#include <string>

#include "daemon/config.h"
#include "daemon/region.h"
#include "daemon/status.h"

namespace rpmad {

// kApm or kGpspm for a region named `region` of `granularity` served by a
// device whose persistent flush reaches the persistence domain whatever
// the memory (`flush_persists`) or only on byte-granular memory. kAuto picks APM where it is safe,
// GPSPM elsewhere. An explicit kApm where it is not safe is
// FAILED_PRECONDITION naming data.persistence and why.
StatusOr<Persistence> ChoosePersistence(Persistence configured, bool flush_persists,
                                        Granularity granularity, const std::string &region);

}  // namespace rpmad

#endif  // DAEMON_PERSISTENCE_POLICY_H
