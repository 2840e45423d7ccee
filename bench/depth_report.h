// IOPS and latency at several depths for several clients in one run, the
// floors between them, and the CSV bench/plot.sh draws as IOPS against
// depth.
#ifndef RPMA_BENCH_DEPTH_REPORT_H
#define RPMA_BENCH_DEPTH_REPORT_H

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_stats.h"
#include "bench/workload.h"

namespace rpma_bench {

struct DepthPoint {
    std::string series;
    int depth;
    double iops;
    double p50_us;
    double p99_us;
};

class DepthReport {
  public:
    // Every series at every depth, in that order within a depth, after a
    // warm-up of a tenth (at least `depth` operations).
    void Measure(const std::vector<std::pair<std::string, Client *>> &series,
                 const std::vector<int> &depths, size_t size, int operations) {
        for (int depth : depths)
            for (const auto &[name, client] : series) {
                fprintf(stderr, "  measuring %s at depth %d...\n", name.c_str(), depth);
                client->DurableWriteAtDepth(size, depth, std::max(depth, operations / 10));
                DepthResult r = client->DurableWriteAtDepth(size, depth, operations);
                const Summary s = Summarize(std::move(r.samples));
                points_.push_back({name, depth,
                                   operations * 1e9 / static_cast<double>(r.elapsed_ns),
                                   s.median_us, s.p99_us});
            }
    }

    const DepthPoint &At(const std::string &series, int depth) const {
        for (const DepthPoint &p : points_)
            if (p.series == series && p.depth == depth)
                return p;
        fprintf(stderr, "depth report: no point %s at depth %d\n", series.c_str(), depth);
        exit(1);
    }

    void PrintTable(const char *title) const {
        printf("\n%s\n%-36s %6s %10s %10s %10s\n", title, "series", "depth", "IOPS", "p50 us",
               "p99 us");
        for (const DepthPoint &p : points_)
            printf("%-36s %6d %10.0f %10.1f %10.1f\n", p.series.c_str(), p.depth, p.iops, p.p50_us,
                   p.p99_us);
    }

    // One row per depth, one IOPS column per series (in first-seen order):
    // bench/plot.sh draws a curve per column.
    void WriteCsv(const std::string &path) const {
        std::vector<std::string> series;
        std::vector<int> depths;
        for (const DepthPoint &p : points_) {
            if (std::find(series.begin(), series.end(), p.series) == series.end())
                series.push_back(p.series);
            if (std::find(depths.begin(), depths.end(), p.depth) == depths.end())
                depths.push_back(p.depth);
        }
        FILE *f = fopen(path.c_str(), "w");
        if (f == nullptr) {
            fprintf(stderr, "cannot write %s: %s\n", path.c_str(), strerror(errno));
            exit(1);
        }
        fprintf(f, "workload,depth");
        for (const std::string &s : series)
            fprintf(f, ",%s", CsvName(s).c_str());
        fprintf(f, "\n");
        for (int depth : depths) {
            fprintf(f, "write_persist_iops,%d", depth);
            for (const std::string &s : series) {
                const DepthPoint *found = nullptr;
                for (const DepthPoint &p : points_)
                    if (p.series == s && p.depth == depth)
                        found = &p;
                if (found != nullptr)
                    fprintf(f, ",%.0f", found->iops);
                else
                    fprintf(f, ",NaN");  // gnuplot's undefined
            }
            fprintf(f, "\n");
        }
        fclose(f);
        fprintf(stderr, "wrote %s\n", path.c_str());
    }

  private:
    // "library, 3 replicas" -> "library_3_replicas"
    static std::string CsvName(const std::string &series) {
        std::string out;
        for (char c : series) {
            if (c == ',')
                continue;
            out += (c == ' ' || c == '-') ? '_' : c;
        }
        return out;
    }

    std::vector<DepthPoint> points_;
};

// A floor of the issue, judged and printed; never fails the run.
struct Floor {
    std::string what;
    double ratio;
    double floor;
    bool at_least;  // ratio >= floor passes; otherwise ratio <= floor
};

inline void PrintFloors(const char *title, const std::vector<Floor> &floors) {
    printf("\n%s\n", title);
    for (const Floor &f : floors) {
        const bool pass = f.at_least ? f.ratio >= f.floor : f.ratio <= f.floor;
        printf("  %-62s %6.2f  %s %.2f  %s\n", f.what.c_str(), f.ratio,
               f.at_least ? ">=" : "<=", f.floor, pass ? "PASS" : "BELOW");
    }
}

}  // namespace rpma_bench

#endif  // RPMA_BENCH_DEPTH_REPORT_H
