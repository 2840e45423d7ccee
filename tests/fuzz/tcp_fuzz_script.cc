// The seeds of the tcp connection fuzzer: each a conversation that reaches
// a different part of the receive path when whole, for mutations to start
// from, written with the script encoder (tcp_fuzz_script.h).

#include "tests/fuzz/tcp_fuzz_script.h"

#include <infiniband/verbs.h>

#include <cstdio>
#include <string>

#include "tests/fuzz/fuzz_support.h"

namespace tcp_fuzz {
namespace {

ScriptWriter &Pieces(ScriptWriter &w, uint8_t first = 0, uint8_t others = 0) {
    return w.U8(first).U8(others);
}

// Passive: CONNECT_REQUEST, READY_TO_USE. Active: ACCEPT.
ScriptWriter Handshake(uint8_t first_piece = 0, bool active = false, uint8_t setup = 0) {
    ScriptWriter w;
    w.U8(setup | (active ? 0x80 : 0));  // 0: accept, every receive posted
    w.U8(kStepConnectRequest).U8(16).U8(8).U8(0);
    Pieces(w, first_piece, 1);
    if (!active) {
        w.U8(kStepReadyToUse);
        Pieces(w);
    }
    return w;
}

// Length mode 0 takes raw_length % (64 KiB + 1); address mode 0 an offset,
// 4 the end of the region less the length.
ScriptWriter &Request(ScriptWriter &w, Step step, uint16_t offset, uint16_t length,
                      uint8_t flags = 0x80, uint8_t first_piece = 0, uint8_t address_mode = 0) {
    w.U8(step).U8(0).U16(0).U8(0).U32(0).U8(address_mode).U16(offset).U8(0).U16(length);
    w.U8(flags);
    w.U32(0x11223344).U8(7);
    return Pieces(w, first_piece, 3);
}

void WriteSeed(const char *dir, const char *name, const ScriptWriter &w) {
    const std::string path = std::string(dir) + "/" + name;
    FILE *file = fopen(path.c_str(), "wb");
    FUZZ_CHECK(file != nullptr);
    FUZZ_CHECK(fwrite(w.Bytes().data(), 1, w.Bytes().size(), file) == w.Bytes().size());
    FUZZ_CHECK(fclose(file) == 0);
}

}  // namespace

void WriteSeeds(const char *dir) {
    WriteSeed(dir, "handshake_only", Handshake());
    WriteSeed(dir, "handshake_split", Handshake(5));
    WriteSeed(dir, "active_handshake_split", Handshake(70, true));
    {
        ScriptWriter w = Handshake(0, true);
        Request(w, kStepWrite, 256, 1000);
        Request(w, kStepSend, 0, 64);
        w.U8(kStepProviderPost).U8(0).U8(0).U16(128).U8(1);  // RDMA READ
        w.U8(kStepReadResponse).U8(0).U32(0);
        Pieces(w, 64, 0);
        WriteSeed(dir, "active_requests", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepWrite, 0, 4096);
        Request(w, kStepReadRequest, 0, 4096);
        Request(w, kStepWriteWithImm, 8192, 100, 0x80, 30);
        Request(w, kStepAtomicWrite, 64, 8);
        Request(w, kStepFlush, 0, 8192, 0x80 | 0x02);  // visibility
        Request(w, kStepFlush, 0, 8192, 0x80);         // persistent
        Request(w, kStepSend, 0, 300);
        Request(w, kStepSendWithImm, 0, 4096, 0x80, 64);
        w.U8(kStepAckRequest);
        Pieces(w);
        WriteSeed(dir, "every_request", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepWrite, 0, 0x1234, 0x80, 1, 4);  // up to the region's last byte
        Request(w, kStepReadRequest, 0, 0x1234, 0x80, 7, 4);
        Request(w, kStepWrite, 0, 0x20, 0x80, 0, 5);  // a byte past it
        WriteSeed(dir, "edges_split", w);
    }
    {
        ScriptWriter w = Handshake();
        w.U8(kStepProviderPost).U8(0).U8(0).U16(512).U8(1);  // RDMA READ
        w.U8(kStepProviderPost).U8(1).U8(8).U16(100).U8(1);  // RDMA WRITE
        w.U8(kStepProviderPost).U8(2).U8(0).U16(64).U8(1);   // SEND
        w.U8(kStepReadResponse).U8(0).U32(0);
        Pieces(w, 10, 2);
        w.U8(kStepAck).U8(0).U32(0);
        Pieces(w);
        WriteSeed(dir, "provider_requests_answered", w);
    }
    {
        // The application destroys its QP while the READ's response is
        // arriving (issue #13: once, the progress thread then spun).
        ScriptWriter w = Handshake();
        w.U8(kStepProviderPost).U8(0).U8(0).U16(4096).U8(1);
        w.U8(kStepDestroyQp);
        w.U8(kStepReadResponse).U8(0).U32(0);
        Pieces(w, 100, 40);
        WriteSeed(dir, "qp_destroyed_during_read_response", w);
    }
    {
        ScriptWriter w = Handshake();
        w.U8(kStepProviderPost).U8(0).U8(0).U16(512).U8(1);
        w.U8(kStepNak).U8(0).U32(IBV_WC_REM_ACCESS_ERR);
        Pieces(w);
        WriteSeed(dir, "provider_read_naked", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepWrite, 0x1000, 0x2000);
        // A persistent flush of the whole region (length mode 6): msync on
        // a persist worker, then the WRITE behind it.
        w.U8(kStepFlush).U8(0).U16(0).U8(0).U32(0).U8(0).U16(0).U8(6).U16(0).U8(0x80);
        w.U32(0).U8(0);
        Pieces(w, 0, 0);
        Request(w, kStepWrite, 0x3000, 0x100);
        WriteSeed(dir, "large_persistent_flush", w);
    }
    {
        ScriptWriter w = Handshake(0, false, 0x60);  // a single receive
        Request(w, kStepSend, 0, 2000);
        Request(w, kStepSendWithImm, 0, 10, 0x80, 70);
        Request(w, kStepWriteWithImm, 0, 3000);
        Request(w, kStepSend, 0, 4096);
        WriteSeed(dir, "sends_wait_for_a_receive", w);
    }
    {
        ScriptWriter w = Handshake();
        Request(w, kStepFlush, 0, 0xffff, 0x80);  // persistent: msync
        w.U8(kStepDeregister);
        Request(w, kStepWrite, 0, 0x8000, 0x80, 100);
        WriteSeed(dir, "deregistered_during_a_write", w);
    }
    {
        ScriptWriter w = Handshake();
        w.U8(kStepDisconnect);
        Pieces(w);
        WriteSeed(dir, "peer_disconnects", w);
    }
    {
        ScriptWriter w;
        w.U8(0).U8(kStepRawBytes).U8(18);
        for (const char c : std::string("GET / HTTP/1.1\r\n\r\n"))
            w.U8(static_cast<uint8_t>(c));
        Pieces(w, 3, 0);
        WriteSeed(dir, "not_rpma", w);
    }
}

}  // namespace tcp_fuzz
