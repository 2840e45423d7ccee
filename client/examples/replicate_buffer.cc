// replicate_buffer: the C++ API's example. Writes a buffer into region
// REGION on the rpmad replicas given, durable on every one of them (or on a
// quorum, with --quorum N), then reads it back from each live replica and
// compares.
//
//   replicate_buffer [--quorum N] REGION HOST:PORT [HOST:PORT...]
//
// Built against the installed library:
//   c++ -std=c++20 replicate_buffer.cc $(pkg-config --cflags --libs rpma-client)
// Exit status 0 when every live replica holds the buffer's bytes.
#include <rpma/client/region.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using rpma::client::OpenOptions;
using rpma::client::Region;
using rpma::client::ReplicaSet;
using rpma::client::ReplicaState;

int main(int argc, char *argv[]) {
    OpenOptions options;
    int arg = 1;
    if (arg + 1 < argc && strcmp(argv[arg], "--quorum") == 0) {
        options.quorum = strtoul(argv[arg + 1], nullptr, 10);
        arg += 2;
    }
    if (argc - arg < 2) {
        fprintf(stderr, "usage: %s [--quorum N] REGION HOST:PORT [HOST:PORT...]\n", argv[0]);
        return 2;
    }
    const std::string name = argv[arg++];
    ReplicaSet replicas;
    for (; arg < argc; ++arg)
        replicas.addresses.push_back(argv[arg]);

    // 1 MiB of a pattern that differs in every 8 bytes, written in 64 KiB
    // pieces made durable together (one Batch), then once more as a whole.
    std::vector<std::byte> buffer(1 << 20);
    for (size_t i = 0; i < buffer.size(); ++i)
        buffer[i] = static_cast<std::byte>((i * 131 + i / 8) & 0xff);
    options.create_size = buffer.size();
    options.on_failure = [](const rpma::client::Status &error) {
        fprintf(stderr, "replicate_buffer: replica failed: %s\n", error.ToString().c_str());
    };

    auto region = Region::Open(replicas, name, options);
    if (!region.ok()) {
        fprintf(stderr, "replicate_buffer: open: %s\n", region.status().ToString().c_str());
        return 1;
    }
    rpma::client::Batch batch;
    for (size_t offset = 0; offset < buffer.size(); offset += 64 << 10)
        batch.Write(offset, std::span(buffer).subspan(offset, 64 << 10));
    if (auto status = (*region)->Commit(batch); !status.ok()) {
        fprintf(stderr, "replicate_buffer: commit: %s\n", status.ToString().c_str());
        return 1;
    }
    if (auto status = (*region)->WritePersist(0, buffer); !status.ok()) {
        fprintf(stderr, "replicate_buffer: write+persist: %s\n", status.ToString().c_str());
        return 1;
    }

    int failed = 0;
    const auto infos = (*region)->replicas();
    std::vector<std::byte> back(buffer.size());
    for (size_t r = 0; r < infos.size(); ++r) {
        if (infos[r].state != ReplicaState::kLive)
            continue;
        if (auto status = (*region)->Read(0, back, r); !status.ok()) {
            fprintf(stderr, "replicate_buffer: read from replica %zu: %s\n", r,
                    status.ToString().c_str());
            ++failed;
        } else if (back != buffer) {
            fprintf(stderr, "replicate_buffer: replica %zu (%s) differs\n", r,
                    infos[r].address.c_str());
            ++failed;
        } else {
            printf("replica %zu (%s): %zu bytes verified\n", r, infos[r].address.c_str(),
                   buffer.size());
        }
    }
    return failed == 0 ? 0 : 1;
}
