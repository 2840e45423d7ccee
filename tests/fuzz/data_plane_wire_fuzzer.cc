// rpmad's data-plane decoders on arbitrary bytes: connection private data
// and GPSPM messages arrive from any client on the network, and a session id
// string arrives in gRPC requests. Every decoder sees the whole input; each
// accepts exactly what its format allows and what it accepts re-encodes to
// the bytes it was given (reserved bytes aside, which encoders write as 0).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "proto/rpmad/v1/data_plane_wire.h"
#include "tests/fuzz/fuzz_support.h"

namespace wire = rpmad::wire;

namespace {

bool StartsWith(std::span<const std::byte> bytes, const char (&magic)[5]) {
    return bytes.size() >= 4 && std::memcmp(bytes.data(), magic, 4) == 0;
}

bool HasVersion(std::span<const std::byte> bytes) {
    return bytes.size() > 4 && static_cast<uint8_t>(bytes[4]) == wire::kProtocolVersion;
}

// `encoded` equals `input` except at the reserved offsets, which must be 0.
bool SameExceptReserved(std::span<const std::byte> encoded, std::span<const std::byte> input,
                        std::initializer_list<size_t> reserved) {
    if (encoded.size() != input.size())
        return false;
    for (size_t i = 0; i < input.size(); ++i) {
        const bool is_reserved = std::find(reserved.begin(), reserved.end(), i) != reserved.end();
        if (encoded[i] != (is_reserved ? std::byte{0} : input[i]))
            return false;
    }
    return true;
}

std::span<const std::byte> AsBytes(std::span<const uint8_t> bytes) {
    return std::as_bytes(bytes);
}

void CheckToken(std::span<const std::byte> input) {
    const auto token = wire::DecodeToken(input);
    FUZZ_CHECK(token.has_value() == (input.size() == wire::kTokenSize));
    if (token)
        FUZZ_CHECK(SameExceptReserved(AsBytes(wire::EncodeToken(*token)), input, {}));
}

void CheckConnectRequest(std::span<const std::byte> input) {
    wire::SessionToken token;
    token.session_id = 0x5e471ae1;  // a decoder that refuses must leave it alone
    const wire::SessionToken untouched = token;
    const wire::RequestProblem problem = wire::DecodeConnectRequest(input, &token);
    const char *text = wire::RequestProblemText(problem);
    FUZZ_CHECK(text != nullptr && text[0] != '\0');

    wire::RequestProblem expected = wire::RequestProblem::kNone;
    if (input.size() < wire::kConnectRequestSize)
        expected = wire::RequestProblem::kLength;
    else if (!StartsWith(input, "RPMC"))
        expected = wire::RequestProblem::kMagic;
    else if (!HasVersion(input))
        expected = wire::RequestProblem::kVersion;
    FUZZ_CHECK(problem == expected);
    if (problem != wire::RequestProblem::kNone) {
        FUZZ_CHECK(token.session_id == untouched.session_id && token.secret == untouched.secret);
        return;
    }
    // Bytes past the first 32 are the verbs provider's padding.
    FUZZ_CHECK(SameExceptReserved(AsBytes(wire::EncodeConnectRequest(token)),
                                  input.first(wire::kConnectRequestSize), {5, 6, 7}));
}

void CheckConnectAccept(std::span<const std::byte> input) {
    constexpr size_t kHeaderSize = 16;
    const auto accept = wire::DecodeConnectAccept(input);
    const bool well_formed = input.size() >= kHeaderSize && StartsWith(input, "RPMA") &&
                             HasVersion(input) &&
                             (input[5] == std::byte{1} || input[5] == std::byte{2}) &&
                             input.size() >= kHeaderSize + static_cast<uint8_t>(input[6]) +
                                                 static_cast<uint8_t>(input[7]);
    FUZZ_CHECK(accept.has_value() == well_formed);
    if (!accept)
        return;
    FUZZ_CHECK(accept->region_descriptor.size() == static_cast<uint8_t>(input[6]));
    FUZZ_CHECK(accept->peer_cfg_descriptor.size() == static_cast<uint8_t>(input[7]));
    // Re-encoding gives back the message without the padding after it.
    const std::vector<std::byte> encoded = wire::EncodeConnectAccept(*accept);
    FUZZ_CHECK(encoded.size() <= input.size());
    FUZZ_CHECK(SameExceptReserved(encoded, input.first(encoded.size()), {}));
}

void CheckFlushRequest(std::span<const std::byte> input) {
    const auto request = wire::DecodeFlushRequest(input);
    FUZZ_CHECK(request.has_value() == (input.size() == wire::kFlushRequestSize &&
                                       StartsWith(input, "RPFQ") && HasVersion(input)));
    if (!request)
        return;
    std::byte encoded[wire::kFlushRequestSize];
    wire::EncodeFlushRequest(*request, encoded);
    FUZZ_CHECK(SameExceptReserved(encoded, input, {5, 6, 7}));
}

void CheckFlushResponse(std::span<const std::byte> input) {
    const auto response = wire::DecodeFlushResponse(input);
    const bool well_formed =
        input.size() == wire::kFlushResponseSize && StartsWith(input, "RPFR") &&
        HasVersion(input) && input[7] == std::byte{0} &&
        static_cast<uint8_t>(input[6]) <= static_cast<uint8_t>(wire::FlushStatus::kFailed);
    FUZZ_CHECK(response.has_value() == well_formed);
    if (!response)
        return;
    std::byte encoded[wire::kFlushResponseSize];
    wire::EncodeFlushResponse(*response, encoded);
    FUZZ_CHECK(SameExceptReserved(encoded, input, {5}));
}

bool IsLowerHexDigit(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

void CheckSessionId(std::span<const std::byte> input) {
    const std::string text(reinterpret_cast<const char *>(input.data()), input.size());
    const auto id = wire::ParseSessionId(text);
    FUZZ_CHECK(id.has_value() ==
               (text.size() == 16 && std::all_of(text.begin(), text.end(), IsLowerHexDigit)));
    if (id)
        FUZZ_CHECK(wire::SessionIdString(*id) == text);

    // And the other way: any id survives being shown and read back.
    uint64_t any_id = 0;
    if (!input.empty())
        std::memcpy(&any_id, input.data(), std::min(input.size(), sizeof(any_id)));
    const std::string shown = wire::SessionIdString(any_id);
    FUZZ_CHECK(shown.size() == 16);
    FUZZ_CHECK(wire::ParseSessionId(shown) == any_id);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    // libFuzzer passes each input in an allocation of exactly `size` bytes,
    // so ASan reports any read past its end.
    const std::span<const std::byte> input = AsBytes({data, size});
    CheckToken(input);
    CheckConnectRequest(input);
    CheckConnectAccept(input);
    CheckFlushRequest(input);
    CheckFlushResponse(input);
    CheckSessionId(input);
    return 0;
}
