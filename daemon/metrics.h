// rpmad's Prometheus metrics (metrics.listen): what GetStats reports, per
// region where it makes sense, the latency histograms, the process's own
// metrics and the build, in the exposition format's families. The domain
// counts (counters.h, latency_histogram.h) and knows nothing of Prometheus;
// this file only reads and names, as the control plane's handlers do.
//
// Names follow Prometheus' conventions: the rpmad_ prefix, base units
// (_bytes, _seconds), counters end in _total; the process_ families are the
// ones every Prometheus client library exports. README "Metrics" lists them.
#ifndef DAEMON_METRICS_H
#define DAEMON_METRICS_H

#include <memory>
#include <string>
#include <vector>

#include <prometheus/metric_family.h>

#include "daemon/daemon.h"
#include "daemon/status.h"

namespace prometheus {
class Exposer;
class Collectable;
}  // namespace prometheus

namespace rpmad {

// Per-region series (label `region`) are exported for at most this many
// regions, the first by name; rpmad_region_series_omitted says how many
// were left out. Keeps a scrape's size bounded under limits.max_regions
// (1024 by default); the totals always cover every region.
inline constexpr size_t kMaxRegionSeries = 64;

// One scrape's families, in the order they are exposed.
std::vector<prometheus::MetricFamily> CollectMetrics(const Daemon &daemon);

// An HTTP listener (prometheus-cpp's Exposer, on civetweb) that answers
// GET /metrics with CollectMetrics in the text format.
class MetricsServer {
  public:
    // Listens on `listen` (host:port, port 0: a free one); UNAVAILABLE when
    // it cannot. `daemon` must outlive the server.
    static StatusOr<std::unique_ptr<MetricsServer>> Start(const Daemon &daemon,
                                                          const std::string &listen);
    ~MetricsServer();
    MetricsServer(const MetricsServer &) = delete;
    MetricsServer &operator=(const MetricsServer &) = delete;

    // host:port it listens on, the port as bound.
    const std::string &address() const { return address_; }

  private:
    MetricsServer() = default;

    std::shared_ptr<prometheus::Collectable> collector_;
    std::unique_ptr<prometheus::Exposer> exposer_;
    std::string address_;
};

}  // namespace rpmad

#endif  // DAEMON_METRICS_H
