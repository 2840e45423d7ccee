// The data path's allocation-free containers: SmallVector inline and
// spilled, moves in every combination, and RingQueue across growth.
#include "rpma_core/src/provider/tcp/tcp_containers.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace rpma::provider::tcp {
namespace {

// Holds a reference, as MemorySegment does, so a leak or a double release
// shows in the use count.
using Ref = std::shared_ptr<int>;
using Vec = SmallVector<Ref, 2>;

std::vector<int> Values(const Vec &v) {
    std::vector<int> out;
    for (const Ref &r : v)
        out.push_back(*r);
    return out;
}

Vec Make(int n, const Ref &probe) {
    Vec v;
    for (int i = 0; i < n; ++i)
        v.push_back(i == 0 ? probe : std::make_shared<int>(i));
    return v;
}

TEST(SmallVector, KeepsOrderInlineAndSpilled) {
    auto probe = std::make_shared<int>(0);
    for (int n : {0, 1, 2, 3, 5}) {
        Vec v = Make(n, probe);
        ASSERT_EQ(v.size(), static_cast<size_t>(n));
        for (int i = 0; i < n; ++i)
            EXPECT_EQ(*v[i], i);
    }
    EXPECT_EQ(probe.use_count(), 1) << "every vector released its references";
}

TEST(SmallVector, MoveAssignInEveryCombination) {
    auto probe = std::make_shared<int>(0);
    for (int from : {0, 1, 2, 3}) {
        for (int to : {0, 1, 2, 3}) {
            Vec source = Make(from, probe);
            Vec target = Make(to, std::make_shared<int>(0));
            target = std::move(source);
            EXPECT_EQ(target.size(), static_cast<size_t>(from)) << from << " onto " << to;
            EXPECT_TRUE(source.empty());
            for (int i = 0; i < from; ++i)
                EXPECT_EQ(*target[i], i);
            // The moved-from vector is usable again.
            source.push_back(std::make_shared<int>(7));
            EXPECT_EQ(Values(source), std::vector<int>{7});
        }
    }
    EXPECT_EQ(probe.use_count(), 1);
}

TEST(SmallVector, MoveConstructAndClear) {
    auto probe = std::make_shared<int>(0);
    for (int n : {0, 1, 3}) {
        Vec source = Make(n, probe);
        Vec moved(std::move(source));
        EXPECT_EQ(moved.size(), static_cast<size_t>(n));
        EXPECT_TRUE(source.empty());
        moved.clear();
        EXPECT_TRUE(moved.empty());
        moved.push_back(std::make_shared<int>(9));
        EXPECT_EQ(Values(moved), std::vector<int>{9});
    }
    EXPECT_EQ(probe.use_count(), 1);
}

TEST(RingQueue, FifoAcrossGrowthAndWrapAround) {
    RingQueue<int> q;
    int next_in = 0, next_out = 0;
    for (int round = 0; round < 50; ++round) {
        for (int i = 0; i < round % 13 + 1; ++i)
            q.push_back(next_in++);
        for (int i = 0; i < round % 7 && !q.empty(); ++i) {
            EXPECT_EQ(q.front(), next_out++);
            q.pop_front();
        }
        ASSERT_EQ(q.size(), static_cast<size_t>(next_in - next_out));
        for (size_t i = 0; i < q.size(); ++i)
            EXPECT_EQ(q[i], next_out + static_cast<int>(i));
    }
}

// Popping an empty queue once wrapped its size to 2^64 - 1, and a drain
// loop (`while (!empty()) pop_front()`) then ran practically forever.
TEST(RingQueue, PopOnEmptyIsRefused) {
    RingQueue<int> q;
    q.pop_front();  // never grown
    EXPECT_TRUE(q.empty());
    q.push_back(1);
    q.pop_front();
    q.pop_front();  // grown, empty again
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.size(), 0u);
    q.push_back(2);
    q.push_back(3);
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q.front(), 2);
    q.clear();
    EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace rpma::provider::tcp
