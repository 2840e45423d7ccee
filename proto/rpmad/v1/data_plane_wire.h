// rpmad's data-plane wire formats, shared by the daemon and its clients:
// the private data of a connection request and of its acceptance, and the
// GPSPM flush request and response messages. All integers little-endian;
// every decoder checks length, magic and version before it trusts a byte.
#ifndef PROTO_RPMAD_V1_DATA_PLANE_WIRE_H
#define PROTO_RPMAD_V1_DATA_PLANE_WIRE_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rpmad::wire {

inline constexpr uint8_t kProtocolVersion = 1;

// A session token: a public id that names the session and a secret that
// proves the right to it (compared in constant time). 24 bytes on the wire.
struct SessionToken {
    uint64_t session_id = 0;
    std::array<uint8_t, 16> secret{};
};
inline constexpr size_t kTokenSize = 24;
std::array<uint8_t, kTokenSize> EncodeToken(const SessionToken &token);
std::optional<SessionToken> DecodeToken(std::span<const std::byte> bytes);
// The session id as clients and logs show it: 16 lowercase hex digits.
std::string SessionIdString(uint64_t session_id);
std::optional<uint64_t> ParseSessionId(const std::string &text);

// Connection request private data: "RPMC", version, 3 reserved bytes, the
// token. 32 bytes: within rdma_cm's 56 for a connection request.
inline constexpr size_t kConnectRequestSize = 32;
std::array<uint8_t, kConnectRequestSize> EncodeConnectRequest(const SessionToken &token);
// Why a request's private data was refused, for the daemon's log.
enum class RequestProblem { kNone, kLength, kMagic, kVersion };
const char *RequestProblemText(RequestProblem problem);
RequestProblem DecodeConnectRequest(std::span<const std::byte> private_data, SessionToken *token);

// How the client makes its writes durable, as the acceptance says it (the
// same numbers as rpmad.v1.Persistence, whose UNSPECIFIED is never sent).
enum class AcceptedPersistence : uint8_t { kApm = 1, kGpspm = 2 };

// Acceptance private data: "RPMA", version, persistence (AcceptedPersistence),
// descriptor lengths, the region size, the region's memory descriptor, the
// daemon's peer-config descriptor. At most 196 bytes (rdma_cm's limit for an
// accept); the verbs provider may pad it, so decoding ignores trailing bytes.
// An unknown persistence is refused: a client must not guess how to persist.
struct ConnectAccept {
    AcceptedPersistence persistence = AcceptedPersistence::kApm;
    uint64_t region_size = 0;
    std::vector<std::byte> region_descriptor;
    std::vector<std::byte> peer_cfg_descriptor;
};
inline constexpr size_t kMaxAcceptSize = 196;
std::vector<std::byte> EncodeConnectAccept(const ConnectAccept &accept);
std::optional<ConnectAccept> DecodeConnectAccept(std::span<const std::byte> private_data);

// GPSPM: the client sends a FlushRequest after its writes; the daemon
// persists [offset, offset + length) of the session's region and answers
// with a FlushResponse carrying the same request id. A connection may have
// up to kMaxFlushesInFlight requests outstanding.
inline constexpr uint32_t kMaxFlushesInFlight = 16;
struct FlushRequest {
    uint64_t request_id = 0;
    uint64_t offset = 0;
    uint64_t length = 0;
};
enum class FlushStatus : uint16_t { kOk = 0, kOutOfRange = 1, kMalformed = 2, kFailed = 3 };
struct FlushResponse {
    uint64_t request_id = 0;
    FlushStatus status = FlushStatus::kOk;
};
inline constexpr size_t kFlushRequestSize = 32;
inline constexpr size_t kFlushResponseSize = 16;
void EncodeFlushRequest(const FlushRequest &request, std::span<std::byte, kFlushRequestSize> out);
std::optional<FlushRequest> DecodeFlushRequest(std::span<const std::byte> bytes);
void EncodeFlushResponse(const FlushResponse &response,
                         std::span<std::byte, kFlushResponseSize> out);
std::optional<FlushResponse> DecodeFlushResponse(std::span<const std::byte> bytes);

}  // namespace rpmad::wire

#endif  // PROTO_RPMAD_V1_DATA_PLANE_WIRE_H
