// Writes the binary seeds of data_plane_wire_fuzzer and catalog_fuzzer with
// the project's own encoders, so that every seed is what rpmad really sends
// or stores (a hand-made byte string would drift from the format unseen).
//
//   bazel run //tests/fuzz:write_seeds -- "$PWD/tests/fuzz/corpus"
//
// writes <dir>/data_plane_wire/* and <dir>/catalog/*, replacing files of the
// same name. The file names say what each seed is (`valid_*`, `invalid_*`).
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/catalog.h"
#include "proto/rpmad/v1/data_plane_wire.h"

namespace {

namespace wire = rpmad::wire;

bool Write(const std::string &path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
        std::fprintf(stderr, "write_seeds: cannot write %s; does its directory exist?\n",
                     path.c_str());
        return false;
    }
    return true;
}

// The bytes of an encoder's output (an array or a vector of bytes).
template <class Bytes>
std::string_view AsText(const Bytes &bytes) {
    return {reinterpret_cast<const char *>(std::data(bytes)), std::size(bytes)};
}

wire::SessionToken SampleToken() {
    wire::SessionToken token;
    token.session_id = 0x0123456789abcdef;
    for (size_t i = 0; i < token.secret.size(); ++i)
        token.secret[i] = static_cast<uint8_t>(0xa0 + i);
    return token;
}

// The descriptors the daemon sends for a region: the rpma memory-region
// descriptor (21 bytes) and the peer configuration (1 byte).
wire::ConnectAccept SampleAccept(wire::AcceptedPersistence persistence) {
    wire::ConnectAccept accept;
    accept.persistence = persistence;
    accept.region_size = 1 << 20;
    for (int i = 0; i < 21; ++i)
        accept.region_descriptor.push_back(static_cast<std::byte>(0x10 + i));
    accept.peer_cfg_descriptor.push_back(std::byte{1});
    return accept;
}

bool WriteWireSeeds(const std::string &dir) {
    const wire::SessionToken token = SampleToken();
    const auto token_bytes = wire::EncodeToken(token);
    const auto request = wire::EncodeConnectRequest(token);
    std::string padded_request(AsText(request));
    padded_request.resize(56, '\0');  // rdma_cm's private data of a request
    std::string wrong_version(AsText(request));
    wrong_version[4] = static_cast<char>(wire::kProtocolVersion + 1);

    const auto apm = wire::EncodeConnectAccept(SampleAccept(wire::AcceptedPersistence::kApm));
    std::string padded_gpspm(
        AsText(wire::EncodeConnectAccept(SampleAccept(wire::AcceptedPersistence::kGpspm))));
    padded_gpspm.resize(wire::kMaxAcceptSize, '\0');
    std::string short_accept(AsText(apm));
    short_accept.pop_back();  // one byte of the peer configuration missing

    std::byte flush_request[wire::kFlushRequestSize];
    wire::EncodeFlushRequest({.request_id = 7, .offset = 4096, .length = 512}, flush_request);
    std::byte flush_ok[wire::kFlushResponseSize];
    wire::EncodeFlushResponse({.request_id = 7, .status = wire::FlushStatus::kOk}, flush_ok);
    std::byte flush_out_of_range[wire::kFlushResponseSize];
    wire::EncodeFlushResponse({.request_id = 8, .status = wire::FlushStatus::kOutOfRange},
                              flush_out_of_range);
    std::string unknown_status(AsText(flush_ok));
    unknown_status[6] = static_cast<char>(wire::FlushStatus::kFailed) + 1;

    const std::string id = wire::SessionIdString(token.session_id);
    std::string upper_id = id;
    for (char &c : upper_id)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));

    const std::pair<std::string, std::string_view> seeds[] = {
        {"valid_token", AsText(token_bytes)},
        {"valid_connect_request", AsText(request)},
        {"valid_connect_request_padded", padded_request},
        {"invalid_connect_request_version", wrong_version},
        {"valid_connect_accept_apm", AsText(apm)},
        {"valid_connect_accept_gpspm_padded", padded_gpspm},
        {"invalid_connect_accept_cut_short", short_accept},
        {"valid_flush_request", AsText(flush_request)},
        {"valid_flush_response_ok", AsText(flush_ok)},
        {"valid_flush_response_out_of_range", AsText(flush_out_of_range)},
        {"invalid_flush_response_unknown_status", unknown_status},
        {"valid_session_id_text", id},
        {"invalid_session_id_text_upper_case", upper_id},
    };
    for (const auto &[name, bytes] : seeds) {
        if (!Write(dir + "/data_plane_wire/" + name, bytes))
            return false;
    }
    return true;
}

bool WriteCatalogSeeds(const std::string &dir) {
    const rpmad::Catalog empty{.generation = 0, .entries = {}};
    const rpmad::Catalog two{.generation = 42,
                             .entries = {{.name = "orders",
                                          .size = 1 << 20,
                                          .id = 1,
                                          .created_unix = 1700000000,
                                          .file_name = "0000000000000001.region",
                                          .replica_set = {}},
                                         {.name = "ledger-2024",
                                          .size = 64ull << 30,
                                          .id = 2,
                                          .created_unix = 1700000300,
                                          .file_name = "0000000000000002.region",
                                          // Format 2: a region with a record
                                          // (opaque bytes to the catalog).
                                          .replica_set = std::string("\x0a\x04set1\x10\x07", 8)}}};
    const rpmad::Catalog odd{.generation = ~0ull,
                             .entries = {{.name = "",
                                          .size = 0,
                                          .id = ~0ull,
                                          .created_unix = -1,
                                          .file_name = std::string(300, 'f'),
                                          .replica_set = std::string(1000, '\xff')}}};
    const std::string two_bytes = rpmad::EncodeCatalog(two);
    std::string flipped = two_bytes;
    flipped[30] ^= 0x01;  // inside the first record: the checksum must catch it

    const std::pair<std::string, std::string> seeds[] = {
        {"valid_empty", rpmad::EncodeCatalog(empty)},
        {"valid_two_regions", two_bytes},
        {"valid_extreme_values", rpmad::EncodeCatalog(odd)},
        // The fuzzer also decodes each input with its checksum appended:
        // this seed becomes a valid catalog there.
        {"valid_two_regions_without_checksum", two_bytes.substr(0, two_bytes.size() - 4)},
        {"invalid_two_regions_bit_flipped", flipped},
        {"invalid_two_regions_truncated", two_bytes.substr(0, two_bytes.size() / 2)},
    };
    for (const auto &[name, bytes] : seeds) {
        if (!Write(dir + "/catalog/" + name, bytes))
            return false;
    }
    return true;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: write_seeds CORPUS_DIR (tests/fuzz/corpus, absolute)\n");
        return 2;
    }
    const std::string dir = argv[1];
    return WriteWireSeeds(dir) && WriteCatalogSeeds(dir) ? 0 : 1;
}
