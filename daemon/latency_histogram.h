// How long something took, as a histogram of fixed buckets: recorded from
// any thread without a lock, read as a snapshot for the metrics
// (rpmad_*_duration_seconds). The domain counts; metrics.cc formats.
#ifndef DAEMON_LATENCY_HISTOGRAM_H
#define DAEMON_LATENCY_HISTOGRAM_H

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>

namespace rpmad {

class LatencyHistogram {
  public:
    // Upper bounds in seconds, 10 µs to 10 s: a GPSPM flush of a few pages
    // sits in the first buckets, a catalog commit's fsyncs in the
    // milliseconds, an msync of a GiB in the seconds.
    static constexpr std::array<double, 19> kBounds = {
        10e-6, 25e-6, 50e-6,  100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
        25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1.0,    2.5,  5.0,    10.0};

    struct Snapshot {
        // Observations per bucket (not cumulative); the last is above every bound.
        std::array<uint64_t, kBounds.size() + 1> buckets{};
        uint64_t count = 0;
        double sum_seconds = 0;
    };

    void Observe(std::chrono::nanoseconds duration) {
        const double seconds = std::chrono::duration<double>(duration).count();
        size_t bucket = 0;
        while (bucket < kBounds.size() && seconds > kBounds[bucket])
            ++bucket;
        buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
        sum_nanoseconds_.fetch_add(static_cast<uint64_t>(duration.count()),
                                   std::memory_order_relaxed);
    }

    // Observations recorded meanwhile may be in some fields and not yet in
    // others: a scrape is a moment's view, and the next one catches up.
    Snapshot Read() const {
        Snapshot snapshot;
        for (size_t i = 0; i < buckets_.size(); ++i) {
            snapshot.buckets[i] = buckets_[i].load(std::memory_order_relaxed);
            snapshot.count += snapshot.buckets[i];
        }
        snapshot.sum_seconds =
            static_cast<double>(sum_nanoseconds_.load(std::memory_order_relaxed)) / 1e9;
        return snapshot;
    }

  private:
    std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};
    std::atomic<uint64_t> sum_nanoseconds_{0};
};

}  // namespace rpmad

#endif  // DAEMON_LATENCY_HISTOGRAM_H
