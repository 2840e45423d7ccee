#include "proto/rpmad/v1/data_plane_wire.h"

#include <cstdio>
#include <cstring>

namespace rpmad::wire {
namespace {

constexpr char kRequestMagic[4] = {'R', 'P', 'M', 'C'};
constexpr char kAcceptMagic[4] = {'R', 'P', 'M', 'A'};
constexpr char kFlushRequestMagic[4] = {'R', 'P', 'F', 'Q'};
constexpr char kFlushResponseMagic[4] = {'R', 'P', 'F', 'R'};
constexpr size_t kAcceptHeaderSize = 16;

void Put64(std::byte *out, uint64_t value) {
    for (int i = 0; i < 8; ++i)
        out[i] = static_cast<std::byte>(value >> (8 * i));
}

uint64_t Get64(const std::byte *in) {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i)
        value |= static_cast<uint64_t>(in[i]) << (8 * i);
    return value;
}

void Put16(std::byte *out, uint16_t value) {
    out[0] = static_cast<std::byte>(value);
    out[1] = static_cast<std::byte>(value >> 8);
}

uint16_t Get16(const std::byte *in) {
    return static_cast<uint16_t>(static_cast<uint16_t>(in[0]) | static_cast<uint16_t>(in[1]) << 8);
}

bool HasMagic(std::span<const std::byte> bytes, const char (&magic)[4]) {
    return bytes.size() >= 4 && std::memcmp(bytes.data(), magic, 4) == 0;
}

// A 4-byte magic, the version, then zero padding: the header of both
// fixed-size messages.
void PutMagic(std::byte *out, const char (&magic)[4]) {
    std::memcpy(out, magic, 4);
}

}  // namespace

std::array<uint8_t, kTokenSize> EncodeToken(const SessionToken &token) {
    std::array<uint8_t, kTokenSize> out{};
    Put64(reinterpret_cast<std::byte *>(out.data()), token.session_id);
    std::memcpy(out.data() + 8, token.secret.data(), token.secret.size());
    return out;
}

std::optional<SessionToken> DecodeToken(std::span<const std::byte> bytes) {
    if (bytes.size() != kTokenSize)
        return std::nullopt;
    SessionToken token;
    token.session_id = Get64(bytes.data());
    std::memcpy(token.secret.data(), bytes.data() + 8, token.secret.size());
    return token;
}

std::string SessionIdString(uint64_t session_id) {
    char text[17];
    std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(session_id));
    return text;
}

std::optional<uint64_t> ParseSessionId(const std::string &text) {
    if (text.size() != 16)
        return std::nullopt;
    uint64_t id = 0;
    for (char c : text) {
        int digit;
        if (c >= '0' && c <= '9')
            digit = c - '0';
        else if (c >= 'a' && c <= 'f')
            digit = c - 'a' + 10;
        else
            return std::nullopt;
        id = id << 4 | static_cast<uint64_t>(digit);
    }
    return id;
}

std::array<uint8_t, kConnectRequestSize> EncodeConnectRequest(const SessionToken &token) {
    std::array<uint8_t, kConnectRequestSize> out{};
    auto *bytes = reinterpret_cast<std::byte *>(out.data());
    PutMagic(bytes, kRequestMagic);
    out[4] = kProtocolVersion;
    const auto encoded = EncodeToken(token);
    std::memcpy(out.data() + 8, encoded.data(), encoded.size());
    return out;
}

const char *RequestProblemText(RequestProblem problem) {
    switch (problem) {
        case RequestProblem::kNone:
            return "none";
        case RequestProblem::kLength:
            return "private data too short for an rpmad connection request";
        case RequestProblem::kMagic:
            return "private data is not an rpmad connection request (wrong magic)";
        case RequestProblem::kVersion:
            return "unsupported rpmad data-plane protocol version";
    }
    return "unknown";
}

RequestProblem DecodeConnectRequest(std::span<const std::byte> private_data, SessionToken *token) {
    // The verbs provider pads private data: only the first 32 bytes count.
    if (private_data.size() < kConnectRequestSize)
        return RequestProblem::kLength;
    if (!HasMagic(private_data, kRequestMagic))
        return RequestProblem::kMagic;
    if (static_cast<uint8_t>(private_data[4]) != kProtocolVersion)
        return RequestProblem::kVersion;
    *token = *DecodeToken(private_data.subspan(8, kTokenSize));
    return RequestProblem::kNone;
}

std::vector<std::byte> EncodeConnectAccept(const ConnectAccept &accept) {
    std::vector<std::byte> out(kAcceptHeaderSize);
    PutMagic(out.data(), kAcceptMagic);
    out[4] = static_cast<std::byte>(kProtocolVersion);
    out[5] = static_cast<std::byte>(accept.persistence);
    out[6] = static_cast<std::byte>(accept.region_descriptor.size());
    out[7] = static_cast<std::byte>(accept.peer_cfg_descriptor.size());
    Put64(out.data() + 8, accept.region_size);
    out.insert(out.end(), accept.region_descriptor.begin(), accept.region_descriptor.end());
    out.insert(out.end(), accept.peer_cfg_descriptor.begin(), accept.peer_cfg_descriptor.end());
    return out;
}

std::optional<ConnectAccept> DecodeConnectAccept(std::span<const std::byte> private_data) {
    if (private_data.size() < kAcceptHeaderSize || !HasMagic(private_data, kAcceptMagic) ||
        static_cast<uint8_t>(private_data[4]) != kProtocolVersion)
        return std::nullopt;
    ConnectAccept accept;
    const auto persistence = static_cast<AcceptedPersistence>(private_data[5]);
    if (persistence != AcceptedPersistence::kApm && persistence != AcceptedPersistence::kGpspm)
        return std::nullopt;
    accept.persistence = persistence;
    const size_t region_len = static_cast<uint8_t>(private_data[6]);
    const size_t cfg_len = static_cast<uint8_t>(private_data[7]);
    if (private_data.size() < kAcceptHeaderSize + region_len + cfg_len)
        return std::nullopt;
    accept.region_size = Get64(private_data.data() + 8);
    const auto region = private_data.subspan(kAcceptHeaderSize, region_len);
    const auto cfg = private_data.subspan(kAcceptHeaderSize + region_len, cfg_len);
    accept.region_descriptor.assign(region.begin(), region.end());
    accept.peer_cfg_descriptor.assign(cfg.begin(), cfg.end());
    return accept;
}

void EncodeFlushRequest(const FlushRequest &request, std::span<std::byte, kFlushRequestSize> out) {
    std::memset(out.data(), 0, out.size());
    PutMagic(out.data(), kFlushRequestMagic);
    out[4] = static_cast<std::byte>(kProtocolVersion);
    Put64(out.data() + 8, request.request_id);
    Put64(out.data() + 16, request.offset);
    Put64(out.data() + 24, request.length);
}

std::optional<FlushRequest> DecodeFlushRequest(std::span<const std::byte> bytes) {
    if (bytes.size() != kFlushRequestSize || !HasMagic(bytes, kFlushRequestMagic) ||
        static_cast<uint8_t>(bytes[4]) != kProtocolVersion)
        return std::nullopt;
    return FlushRequest{Get64(bytes.data() + 8), Get64(bytes.data() + 16),
                        Get64(bytes.data() + 24)};
}

void EncodeFlushResponse(const FlushResponse &response,
                         std::span<std::byte, kFlushResponseSize> out) {
    std::memset(out.data(), 0, out.size());
    PutMagic(out.data(), kFlushResponseMagic);
    out[4] = static_cast<std::byte>(kProtocolVersion);
    Put16(out.data() + 6, static_cast<uint16_t>(response.status));
    Put64(out.data() + 8, response.request_id);
}

std::optional<FlushResponse> DecodeFlushResponse(std::span<const std::byte> bytes) {
    if (bytes.size() != kFlushResponseSize || !HasMagic(bytes, kFlushResponseMagic) ||
        static_cast<uint8_t>(bytes[4]) != kProtocolVersion)
        return std::nullopt;
    const uint16_t status = Get16(bytes.data() + 6);
    if (status > static_cast<uint16_t>(FlushStatus::kFailed))
        return std::nullopt;
    return FlushResponse{Get64(bytes.data() + 8), static_cast<FlushStatus>(status)};
}

}  // namespace rpmad::wire
