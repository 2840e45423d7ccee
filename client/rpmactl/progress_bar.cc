#include "client/rpmactl/progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "client/rpmactl/sizes.h"

namespace rpmactl {
namespace {

// A bar redraws ten times a second; lines come once a second, so that a log
// of a long put stays readable.
constexpr double kBarInterval = 0.1;
constexpr double kLineInterval = 1.0;

std::string Duration(double seconds) {
    const long total = static_cast<long>(seconds + 0.5);
    char text[32];
    if (total >= 3600)
        snprintf(text, sizeof(text), "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
    else
        snprintf(text, sizeof(text), "%ld:%02ld", total / 60, total % 60);
    return text;
}

}  // namespace

ProgressBar::Style ProgressBar::StyleFor(FILE *out, bool json) {
    return !json && isatty(fileno(out)) ? Style::kBar : Style::kLines;
}

ProgressBar::ProgressBar(std::string label, uint64_t total, FILE *out, Style style,
                         std::function<double()> now)
    : label_(std::move(label)), total_(total), out_(out), style_(style), now_(std::move(now)) {
    if (!now_)
        now_ = [] {
            return std::chrono::duration<double>(
                       std::chrono::steady_clock::now().time_since_epoch())
                .count();
        };
    start_ = now_();
}

std::string ProgressBar::Render(Style style, const std::string &label, uint64_t done,
                                uint64_t total, double elapsed_seconds, int width) {
    const double fraction =
        total == 0 ? 1.0 : std::min(1.0, static_cast<double>(done) / static_cast<double>(total));
    const int percent = static_cast<int>(fraction * 100);
    const double rate = elapsed_seconds > 0 ? static_cast<double>(done) / elapsed_seconds : 0;
    const std::string rate_text =
        rate > 0 ? FormatSizeRounded(static_cast<uint64_t>(rate)) + "/s" : "-";
    std::string eta = "-";
    if (done >= total)
        eta = "0:00";
    else if (rate > 0)
        eta = Duration(static_cast<double>(total - done) / rate);
    const std::string amount = FormatSizeRounded(done) + "/" + FormatSizeRounded(total);
    if (style == Style::kLines)
        return label + ": " + amount + " (" + std::to_string(percent) + "%) " + rate_text +
               " ETA " + eta;
    const int filled = static_cast<int>(fraction * width);
    return label + " [" + std::string(filled, '#') + std::string(width - filled, '.') + "] " +
           std::to_string(percent) + "% " + amount + " " + rate_text + " ETA " + eta;
}

void ProgressBar::Update(uint64_t done) {
    done_ = done;
    const double now = now_();
    const double interval = style_ == Style::kBar ? kBarInterval : kLineInterval;
    if (last_draw_ < 0 ? now - start_ >= interval : now - last_draw_ >= interval)
        Draw(false);
}

void ProgressBar::Finish() {
    if (finished_)
        return;
    finished_ = true;
    Draw(true);
}

void ProgressBar::Draw(bool last) {
    const double now = now_();
    last_draw_ = now;
    const std::string text = Render(style_, label_, done_, total_, now - start_);
    if (style_ == Style::kBar)
        // \033[K clears what a longer previous line left behind.
        fprintf(out_, "\r%s\033[K%s", text.c_str(), last ? "\n" : "");
    else
        fprintf(out_, "%s\n", text.c_str());
    fflush(out_);
}

}  // namespace rpmactl
