#include "proto/rpmad/v1/data_plane_wire.h"

#include <gtest/gtest.h>

#include <cstring>

namespace rpmad::wire {
namespace {

std::span<const std::byte> AsBytes(const auto &array) {
    return std::as_bytes(std::span(array.data(), array.size()));
}

SessionToken SomeToken() {
    SessionToken token;
    token.session_id = 0x0123456789abcdefull;
    for (size_t i = 0; i < token.secret.size(); ++i)
        token.secret[i] = static_cast<uint8_t>(0xa0 + i);
    return token;
}

TEST(DataPlaneWire, ConnectRequestRoundTripsAndFitsRdmaCm) {
    const auto encoded = EncodeConnectRequest(SomeToken());
    EXPECT_LE(encoded.size(), 56u);
    SessionToken decoded;
    ASSERT_EQ(DecodeConnectRequest(AsBytes(encoded), &decoded), RequestProblem::kNone);
    EXPECT_EQ(decoded.session_id, SomeToken().session_id);
    EXPECT_EQ(decoded.secret, SomeToken().secret);
}

TEST(DataPlaneWire, ConnectRequestPaddedByVerbsStillDecodes) {
    const auto encoded = EncodeConnectRequest(SomeToken());
    std::vector<std::byte> padded(56);
    std::memcpy(padded.data(), encoded.data(), encoded.size());
    SessionToken decoded;
    EXPECT_EQ(DecodeConnectRequest(padded, &decoded), RequestProblem::kNone);
}

TEST(DataPlaneWire, BadConnectRequestsSayWhy) {
    auto encoded = EncodeConnectRequest(SomeToken());
    SessionToken decoded;
    EXPECT_EQ(DecodeConnectRequest(AsBytes(encoded).first(31), &decoded), RequestProblem::kLength);
    EXPECT_EQ(DecodeConnectRequest({}, &decoded), RequestProblem::kLength);
    auto wrong_magic = encoded;
    wrong_magic[0] = 'X';
    EXPECT_EQ(DecodeConnectRequest(AsBytes(wrong_magic), &decoded), RequestProblem::kMagic);
    auto wrong_version = encoded;
    wrong_version[4] = 2;
    EXPECT_EQ(DecodeConnectRequest(AsBytes(wrong_version), &decoded), RequestProblem::kVersion);
    EXPECT_STRNE(RequestProblemText(RequestProblem::kMagic), "unknown");
}

TEST(DataPlaneWire, AcceptRoundTripsWithinTheLimitAndIgnoresPadding) {
    ConnectAccept accept;
    accept.persistence = AcceptedPersistence::kGpspm;
    accept.region_size = 1ull << 40;
    accept.region_descriptor.assign(21, std::byte{7});
    accept.peer_cfg_descriptor.assign(1, std::byte{1});
    auto encoded = EncodeConnectAccept(accept);
    EXPECT_LE(encoded.size(), kMaxAcceptSize);
    encoded.resize(196);  // padding
    auto decoded = DecodeConnectAccept(encoded);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->persistence, AcceptedPersistence::kGpspm);
    EXPECT_EQ(decoded->region_size, 1ull << 40);
    EXPECT_EQ(decoded->region_descriptor, accept.region_descriptor);
    EXPECT_EQ(decoded->peer_cfg_descriptor, accept.peer_cfg_descriptor);
}

TEST(DataPlaneWire, AcceptWithAnUnknownPersistenceIsRefused) {
    ConnectAccept accept;
    accept.region_descriptor.assign(21, std::byte{7});
    auto encoded = EncodeConnectAccept(accept);
    ASSERT_TRUE(DecodeConnectAccept(encoded).has_value());
    for (const uint8_t persistence : {0, 3, 255}) {
        encoded[5] = std::byte{persistence};
        EXPECT_FALSE(DecodeConnectAccept(encoded).has_value()) << int{persistence};
    }
}

TEST(DataPlaneWire, TruncatedAcceptIsRefused) {
    ConnectAccept accept;
    accept.region_descriptor.assign(21, std::byte{7});
    const auto encoded = EncodeConnectAccept(accept);
    for (size_t size = 0; size < encoded.size(); ++size)
        EXPECT_FALSE(DecodeConnectAccept(std::span(encoded).first(size)).has_value()) << size;
}

TEST(DataPlaneWire, FlushMessagesRoundTrip) {
    std::array<std::byte, kFlushRequestSize> request;
    EncodeFlushRequest({42, 4096, 8192}, request);
    auto decoded = DecodeFlushRequest(request);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->request_id, 42u);
    EXPECT_EQ(decoded->offset, 4096u);
    EXPECT_EQ(decoded->length, 8192u);
    EXPECT_FALSE(DecodeFlushRequest(std::span(request).first(31)).has_value());
    request[0] = std::byte{0};
    EXPECT_FALSE(DecodeFlushRequest(request).has_value());

    std::array<std::byte, kFlushResponseSize> response;
    EncodeFlushResponse({42, FlushStatus::kOutOfRange}, response);
    auto answer = DecodeFlushResponse(response);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->request_id, 42u);
    EXPECT_EQ(answer->status, FlushStatus::kOutOfRange);
    response[6] = std::byte{9};  // no such status
    EXPECT_FALSE(DecodeFlushResponse(response).has_value());
}

TEST(DataPlaneWire, SessionIdsPrintAndParse) {
    EXPECT_EQ(SessionIdString(0x0123456789abcdefull), "0123456789abcdef");
    EXPECT_EQ(ParseSessionId("0123456789abcdef"), 0x0123456789abcdefull);
    EXPECT_FALSE(ParseSessionId("0123456789ABCDEF").has_value());
    EXPECT_FALSE(ParseSessionId("123").has_value());
    EXPECT_FALSE(ParseSessionId("0123456789abcdeg").has_value());
}

}  // namespace
}  // namespace rpmad::wire
