#include "client/rpmactl/progress_bar.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace rpmactl {
namespace {

TEST(ProgressBarRender, ShowsFractionRateAndTimeLeft) {
    // 16 MiB of 64 MiB in 2 s: 8 MiB/s, 48 MiB left, 6 s.
    EXPECT_EQ(ProgressBar::Render(ProgressBar::Style::kBar, "put", 16 << 20, 64 << 20, 2.0, 8),
              "put [##......] 25% 16.0 MiB/64.0 MiB 8.0 MiB/s ETA 0:06");
    EXPECT_EQ(ProgressBar::Render(ProgressBar::Style::kLines, "put", 16 << 20, 64 << 20, 2.0),
              "put: 16.0 MiB/64.0 MiB (25%) 8.0 MiB/s ETA 0:06");
}

TEST(ProgressBarRender, HasNoEtaBeforeARateAndZeroWhenDone) {
    EXPECT_EQ(ProgressBar::Render(ProgressBar::Style::kLines, "get", 0, 4096, 0.0),
              "get: 0 B/4.0 KiB (0%) - ETA -");
    EXPECT_EQ(ProgressBar::Render(ProgressBar::Style::kLines, "get", 4096, 4096, 1.0),
              "get: 4.0 KiB/4.0 KiB (100%) 4.0 KiB/s ETA 0:00");
}

// Lines mode writes at most one line a second, then a last one.
TEST(ProgressBar, LinesAreThrottledToOneASecondPlusTheLast) {
    char *text = nullptr;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ASSERT_NE(out, nullptr);
    double now = 0;
    {
        ProgressBar bar("put", 100, out, ProgressBar::Style::kLines, [&] { return now; });
        for (int i = 1; i <= 100; ++i) {
            now = i * 0.05;  // 5 s in all
            bar.Update(static_cast<uint64_t>(i));
        }
        bar.Finish();
        bar.Finish();  // once only
    }
    fclose(out);
    const std::string output(text, size);
    free(text);
    size_t lines = 0;
    for (char c : output)
        lines += c == '\n';
    EXPECT_EQ(lines, 6u) << output;  // at 1, 2, 3, 4, 5 s and the last
    EXPECT_NE(output.find("put: 100 B/100 B (100%)"), std::string::npos) << output;
    EXPECT_EQ(output.find('\r'), std::string::npos);
}

TEST(ProgressBar, BarRedrawsInPlaceAndEndsItsLine) {
    char *text = nullptr;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    double now = 0;
    {
        ProgressBar bar("get", 10, out, ProgressBar::Style::kBar, [&] { return now; });
        now = 0.5;
        bar.Update(5);
        now = 1.0;
        bar.Update(10);
        bar.Finish();
    }
    fclose(out);
    const std::string output(text, size);
    free(text);
    EXPECT_EQ(output.front(), '\r');
    EXPECT_EQ(output.back(), '\n');
    EXPECT_NE(output.find("] 50%"), std::string::npos) << output;
    EXPECT_NE(output.find("] 100%"), std::string::npos) << output;
    EXPECT_EQ(output.find('\n'), output.size() - 1) << "one line, redrawn: " << output;
}

}  // namespace
}  // namespace rpmactl
