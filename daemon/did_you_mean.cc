#include "daemon/did_you_mean.h"

#include <algorithm>
#include <vector>

namespace rpmad {

std::string JoinNames(std::span<const std::string_view> names) {
    std::string joined;
    for (std::string_view name : names) {
        if (!joined.empty())
            joined += ", ";
        joined += name;
    }
    return joined;
}

size_t EditDistance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates) {
    std::string_view best;
    size_t best_distance = 3;
    for (std::string_view candidate : candidates) {
        size_t d = EditDistance(word, candidate);
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best.empty() ? "" : "; did you mean \"" + std::string(best) + "\"?";
}

}  // namespace rpmad
