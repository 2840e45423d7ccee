// Progress of a long transfer (put, get, verify, bench) on stderr: a bar
// redrawn in place on a terminal, or plain lines (at most one a second and
// a last one) when stderr is not a terminal or the output is JSON. Both
// show the bytes done, the rate and the time left. No library for this is
// packaged in Debian; it is small enough to own.
#ifndef CLIENT_RPMACTL_PROGRESS_BAR_H
#define CLIENT_RPMACTL_PROGRESS_BAR_H

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace rpmactl {

class ProgressBar {
  public:
    enum class Style { kBar, kLines };

    // kBar when `out` is a terminal and the output is not JSON.
    static Style StyleFor(FILE *out, bool json);

    // `now` returns seconds on a monotonic clock (tests pass their own).
    ProgressBar(std::string label, uint64_t total, FILE *out, Style style,
                std::function<double()> now = nullptr);

    // `done` bytes of `total` so far; draws when it is time to.
    void Update(uint64_t done);
    // Draws the final state (and ends the bar's line).
    void Finish();

    // "LABEL [#####.....] 50% 32.0 MiB/64.0 MiB 10.0 MiB/s ETA 0:03" (kBar,
    // `width` characters of bar) or "LABEL: 32.0 MiB/64.0 MiB (50%) 10.0
    // MiB/s ETA 0:03" (kLines). ETA "-" until a rate is known.
    static std::string Render(Style style, const std::string &label, uint64_t done, uint64_t total,
                              double elapsed_seconds, int width = 24);

  private:
    void Draw(bool last);

    std::string label_;
    uint64_t total_;
    FILE *out_;
    Style style_;
    std::function<double()> now_;
    double start_;
    double last_draw_ = -1;
    uint64_t done_ = 0;
    bool finished_ = false;
};

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_PROGRESS_BAR_H
