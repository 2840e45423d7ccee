#include "client/rpmactl/differences.h"

#include <algorithm>
#include <cstring>

namespace rpmactl {
namespace {

// Blocks are compared with memcmp first: identical replicas, the common
// case, cost a memcmp per block and replica.
constexpr size_t kBlock = 4096;

}  // namespace

void DifferenceFinder::Mark(uint64_t offset, size_t replica) {
    if (ranges_.empty() || ranges_.back().offset + ranges_.back().length < offset) {
        ranges_.push_back({offset, 1, {replica}});
        return;
    }
    DifferingRange &last = ranges_.back();
    last.length = std::max(last.length, offset + 1 - last.offset);
    if (std::find(last.replicas.begin(), last.replicas.end(), replica) == last.replicas.end()) {
        last.replicas.push_back(replica);
        std::sort(last.replicas.begin(), last.replicas.end());
    }
}

void DifferenceFinder::Compare(uint64_t offset,
                               const std::vector<std::span<const std::byte>> &chunks) {
    if (chunks.size() < 2)
        return;
    const size_t length = chunks[0].size();
    for (size_t block = 0; block < length; block += kBlock) {
        const size_t n = std::min(kBlock, length - block);
        // Bytes in ascending order across replicas, so that ranges grow at
        // their end only.
        bool any = false;
        for (size_t r = 1; r < chunks.size() && !any; ++r)
            any = memcmp(chunks[0].data() + block, chunks[r].data() + block, n) != 0;
        if (!any)
            continue;
        for (size_t i = block; i < block + n; ++i)
            for (size_t r = 1; r < chunks.size(); ++r)
                if (chunks[r][i] != chunks[0][i])
                    Mark(offset + i, r);
    }
}

std::vector<DifferingRange> DifferenceFinder::Ranges() const {
    return ranges_;
}

}  // namespace rpmactl
