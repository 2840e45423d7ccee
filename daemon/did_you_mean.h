// "Did you mean" hints: the candidate closest to a misspelt word.
#ifndef DAEMON_DID_YOU_MEAN_H
#define DAEMON_DID_YOU_MEAN_H

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace rpmad {

// "a, b, c".
std::string JoinNames(std::span<const std::string_view> names);
// The Levenshtein distance of `a` and `b`.
size_t EditDistance(std::string_view a, std::string_view b);
// "; did you mean "x"?" when one candidate is close to `word`, else "".
std::string DidYouMean(std::string_view word, std::span<const std::string_view> candidates);

}  // namespace rpmad

#endif  // DAEMON_DID_YOU_MEAN_H
