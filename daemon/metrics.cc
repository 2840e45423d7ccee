#include "daemon/metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <exception>
#include <fstream>
#include <sstream>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>

#include "daemon/log.h"
#include "rpma_version.h"

namespace rpmad {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

class Families {
  public:
    // A family of one sample without labels.
    void Add(const std::string &name, MetricType type, const std::string &help, double value) {
        Start(name, type, help);
        Sample(value);
    }
    // A family whose samples Sample() adds.
    void Start(const std::string &name, MetricType type, const std::string &help) {
        families_.push_back(MetricFamily{name, help, type, {}});
    }
    void Sample(double value, std::vector<ClientMetric::Label> labels = {}) {
        MetricFamily &family = families_.back();
        ClientMetric &metric = family.metric.emplace_back();
        metric.label = std::move(labels);
        if (family.type == MetricType::Counter)
            metric.counter.value = value;
        else
            metric.gauge.value = value;
    }
    void Histogram(const std::string &name, const std::string &help,
                   const LatencyHistogram &histogram) {
        Start(name, MetricType::Histogram, help);
        const LatencyHistogram::Snapshot snapshot = histogram.Read();
        ClientMetric &metric = families_.back().metric.emplace_back();
        metric.histogram.sample_count = snapshot.count;
        metric.histogram.sample_sum = snapshot.sum_seconds;
        // The exposition's buckets are cumulative; the serializer adds +Inf.
        uint64_t cumulative = 0;
        for (size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
            cumulative += snapshot.buckets[i];
            metric.histogram.bucket.push_back({cumulative, LatencyHistogram::kBounds[i]});
        }
    }
    std::vector<MetricFamily> Take() { return std::move(families_); }

  private:
    std::vector<MetricFamily> families_;
};

constexpr auto kCounter = MetricType::Counter;
constexpr auto kGauge = MetricType::Gauge;

void AddDaemon(const StatsView &stats, Families &out) {
    const Counters &counters = *stats.counters;
    out.Start("rpmad_build_info", kGauge, "rpmad's version and data-plane provider; always 1");
    out.Sample(1, {{"provider", stats.provider}, {"version", RPMA_VERSION}});
    out.Add("rpmad_regions", kGauge, "Regions served, unhealthy ones included",
            static_cast<double>(stats.regions));
    out.Add("rpmad_regions_unhealthy", kGauge,
            "Regions that cannot be served (missing, unmappable or damaged file)",
            static_cast<double>(stats.unhealthy_regions));
    out.Add("rpmad_pool_used_bytes", kGauge, "Bytes the pool's regions take together",
            static_cast<double>(stats.pool_used_bytes));
    out.Add("rpmad_pool_capacity_bytes", kGauge,
            "storage.capacity: bytes all regions may use together; 0: the filesystem's free space",
            static_cast<double>(stats.pool_capacity_bytes));
    out.Add("rpmad_sessions", kGauge, "Open sessions, pending and connected",
            static_cast<double>(stats.sessions));
    out.Add("rpmad_sessions_opened_total", kCounter, "Sessions opened since rpmad started",
            static_cast<double>(counters.sessions_opened));
    out.Add("rpmad_connections", kGauge, "Data-plane connections open",
            static_cast<double>(stats.connections));
    out.Add("rpmad_connections_accepted_total", kCounter, "Data-plane connections accepted",
            static_cast<double>(counters.connections_accepted));
    out.Start("rpmad_connections_rejected_total", kCounter,
              "Data-plane connections refused, by reason");
    for (size_t i = 0; i < kRejectionCount; ++i)
        out.Sample(static_cast<double>(counters.rejected_by_reason[i]),
                   {{"reason", std::string(RejectionName(static_cast<Rejection>(i)))}});
    out.Add("rpmad_gpspm_flushes_total", kCounter, "GPSPM flush requests persisted",
            static_cast<double>(counters.flushes));
    out.Add("rpmad_gpspm_flushed_bytes_total", kCounter, "Bytes GPSPM flush requests persisted",
            static_cast<double>(counters.bytes_flushed));
    out.Add("rpmad_gpspm_flushes_rejected_total", kCounter,
            "GPSPM flush requests refused: malformed, out of range or failed",
            static_cast<double>(counters.flushes_rejected));
    out.Add("rpmad_errors_total", kCounter,
            "Errors: connections lost, failed persists, failed data-plane calls",
            static_cast<double>(counters.errors));
    out.Add("rpmad_data_plane_counters_available", kGauge,
            "1 when the provider sees clients' one-sided operations (tcp); 0 on verbs, where "
            "the rpmad_remote_ and rpmad_region_remote_ families are left out",
            stats.traffic_counted ? 1 : 0);
    if (stats.traffic_counted) {
        out.Add("rpmad_remote_written_bytes_total", kCounter,
                "Bytes clients wrote into regions by one-sided operations",
                static_cast<double>(stats.traffic.bytes_written));
        out.Add("rpmad_remote_read_bytes_total", kCounter,
                "Bytes clients read from regions by one-sided operations",
                static_cast<double>(stats.traffic.bytes_read));
        out.Add("rpmad_remote_flushes_total", kCounter, "Clients' persistent flushes (APM)",
                static_cast<double>(stats.traffic.persistent_flushes));
        out.Add("rpmad_remote_persisted_bytes_total", kCounter,
                "Bytes clients' persistent flushes (APM) covered",
                static_cast<double>(stats.traffic.bytes_persisted));
    }
    out.Histogram("rpmad_gpspm_flush_duration_seconds",
                  "GPSPM flush requests from arrival to answer", counters.gpspm_flush_time);
    out.Histogram("rpmad_catalog_commit_duration_seconds",
                  "Replacements of the region catalog (write, fsync, renames, directory fsync)",
                  *stats.catalog_commit_time);
    out.Histogram("rpmad_open_session_duration_seconds", "OpenSession calls as rpmad serves them",
                  counters.open_session_time);
}

void AddRegions(const std::vector<RegionView> &regions, bool traffic_counted, Families &out) {
    const size_t shown = std::min(regions.size(), kMaxRegionSeries);
    auto per_region = [&](const std::string &name, MetricType type, const std::string &help,
                          auto value) {
        out.Start(name, type, help);
        for (size_t i = 0; i < shown; ++i)
            out.Sample(static_cast<double>(value(regions[i])), {{"region", regions[i].info.name}});
    };
    per_region("rpmad_region_size_bytes", kGauge, "The region's size",
               [](const RegionView &r) { return r.info.size; });
    per_region("rpmad_region_healthy", kGauge, "1 when the region is served, 0 when unhealthy",
               [](const RegionView &r) { return r.info.healthy ? 1 : 0; });
    per_region("rpmad_region_sessions", kGauge, "Open sessions on the region",
               [](const RegionView &r) { return r.open_sessions; });
    if (traffic_counted) {
        per_region("rpmad_region_remote_written_bytes_total", kCounter,
                   "Bytes clients wrote into the region by one-sided operations",
                   [](const RegionView &r) { return r.traffic.bytes_written; });
        per_region("rpmad_region_remote_read_bytes_total", kCounter,
                   "Bytes clients read from the region by one-sided operations",
                   [](const RegionView &r) { return r.traffic.bytes_read; });
        per_region("rpmad_region_remote_flushes_total", kCounter,
                   "Clients' persistent flushes (APM) of the region",
                   [](const RegionView &r) { return r.traffic.persistent_flushes; });
        per_region("rpmad_region_remote_persisted_bytes_total", kCounter,
                   "Bytes clients' persistent flushes (APM) of the region covered",
                   [](const RegionView &r) { return r.traffic.bytes_persisted; });
    }
    out.Add("rpmad_region_series_omitted", kGauge,
            "Regions left out of the rpmad_region_ families (only the first " +
                std::to_string(kMaxRegionSeries) + " by name have series)",
            static_cast<double>(regions.size() - shown));
}

// The fields of /proc/self/stat after the command's closing parenthesis
// (field 3, the state, first); empty when unreadable.
std::vector<std::string> ProcStatFields() {
    std::ifstream file("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');
    std::vector<std::string> fields;
    if (paren == std::string::npos)
        return fields;
    std::istringstream rest(text.substr(paren + 1));
    for (std::string field; rest >> field;)
        fields.push_back(field);
    return fields;
}

double BootTimeSeconds() {
    std::ifstream file("/proc/stat");
    for (std::string line; std::getline(file, line);)
        if (line.starts_with("btime "))
            return std::stod(line.substr(6));
    return 0;
}

int OpenFds() {
    DIR *dir = opendir("/proc/self/fd");
    if (dir == nullptr)
        return -1;
    int count = 0;
    while (dirent *entry = readdir(dir))
        if (entry->d_name[0] != '.')
            ++count;
    closedir(dir);
    return count - 1;  // the directory's own descriptor
}

// What every Prometheus client library exports about its process.
void AddProcess(Families &out) {
    const std::vector<std::string> stat = ProcStatFields();
    // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24; stat[0] is field 3.
    constexpr size_t kUtime = 14 - 3, kStime = 15 - 3, kStart = 22 - 3, kVsize = 23 - 3,
                     kRss = 24 - 3;
    if (stat.size() > kRss) {
        const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
        const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
        out.Add("process_cpu_seconds_total", kCounter, "User and system CPU time spent",
                (std::stod(stat[kUtime]) + std::stod(stat[kStime])) / ticks);
        out.Add("process_start_time_seconds", kGauge, "Start time since the Unix epoch",
                BootTimeSeconds() + std::stod(stat[kStart]) / ticks);
        out.Add("process_virtual_memory_bytes", kGauge, "Virtual memory size",
                std::stod(stat[kVsize]));
        out.Add("process_resident_memory_bytes", kGauge, "Resident memory size",
                std::stod(stat[kRss]) * page);
    }
    if (const int fds = OpenFds(); fds >= 0)
        out.Add("process_open_fds", kGauge, "Open file descriptors", fds);
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
        out.Add("process_max_fds", kGauge, "The limit of open file descriptors",
                static_cast<double>(limit.rlim_cur));
}

class Collector final : public prometheus::Collectable {
  public:
    explicit Collector(const Daemon &daemon) : daemon_(daemon) {}
    std::vector<MetricFamily> Collect() const override { return CollectMetrics(daemon_); }

  private:
    const Daemon &daemon_;
};

}  // namespace

std::vector<MetricFamily> CollectMetrics(const Daemon &daemon) {
    Families out;
    const StatsView stats = daemon.Stats();
    AddDaemon(stats, out);
    AddRegions(daemon.ListRegions(), stats.traffic_counted, out);
    AddProcess(out);
    return out.Take();
}

StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const Daemon &daemon,
                                                              const std::string &listen) {
    auto host_port = SplitHostPort(listen, "metrics.listen");
    if (!host_port.ok())
        return host_port.status();
    std::unique_ptr<MetricsServer> server(new MetricsServer());
    server->collector_ = std::make_shared<Collector>(daemon);
    // prometheus-cpp reports a listener it cannot open by throwing; nothing
    // else of it throws here.
    try {
        server->exposer_ = std::make_unique<prometheus::Exposer>(listen);
    } catch (const std::exception &e) {
        return Status(StatusCode::kUnavailable,
                      "cannot serve the metrics on " + listen + " (" + e.what() +
                          "): is the port taken, or the address not of this host? Set "
                          "metrics.listen to a free host:port, or to \"\" for no metrics");
    }
    server->exposer_->RegisterCollectable(server->collector_);
    const std::vector<int> ports = server->exposer_->GetListeningPorts();
    const std::string port = ports.empty() ? host_port->port : std::to_string(ports.front());
    const std::string &host = host_port->host;
    server->address_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
    return server;
}

MetricsServer::~MetricsServer() {
    // The listener stops before the collector it calls goes.
    exposer_.reset();
}

}  // namespace rpmad
