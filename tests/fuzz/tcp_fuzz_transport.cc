// The transport between the harness and the provider: the pieces a step's
// bytes go out in, the waits (which pump instead of sleeping), reading the
// provider's messages, and driving the provider's application (its request,
// QP, receives, events and completions).

#include "tests/fuzz/tcp_fuzz_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "rpma_core/src/provider/tcp/tcp_listener.h"
#include "tests/fuzz/fuzz_support.h"

namespace tcp_fuzz {

// The pieces: the first `first_piece` bytes (0: all at once), then pieces of
// other_pieces * 16 + 1 bytes, at most eight in all. A connection reads
// each piece before the next leaves, so that it sees the message split
// that way; the listener only peeks at a request until it is whole (the
// bytes stay unread), so before the application took the request the
// harness only gives the progress thread a moment.
void Session::Deliver(const std::vector<uint8_t> &bytes, uint8_t first_piece,
                      uint8_t other_pieces) {
    size_t sent = 0;
    size_t piece = first_piece == 0 ? bytes.size() : first_piece;
    bool provider_reads = true;
    for (int pieces = 1; sent < bytes.size() && !closed_ && !stalled_; ++pieces) {
        const size_t length =
            pieces == 8 ? bytes.size() - sent : std::min(piece, bytes.size() - sent);
        if (!SendPiece(bytes.data() + sent, length))
            return;
        sent += length;
        piece = static_cast<size_t>(other_pieces) * 16 + 1;
        if (std::exchange(deregister_next_, false))
            target_mr_.reset();
        if (std::exchange(destroy_qp_next_, false) && id_) {
            id_->DestroyQp();
            qp_ready_ = false;  // the CQs stay, with nothing feeding them
            free_receives_.clear();
        }
        if (provider_reads) {
            // A provider that stops reading (for want of a receive, or after
            // an error) gets the rest of the message at once.
            provider_reads =
                WaitUntil([&] { return Ended() || !ProviderHasUnread(); }, id_ ? kConsumeMs : 2);
        }
    }
}

bool Session::SendPiece(const uint8_t *bytes, size_t length) {
    while (length > 0) {
        const ssize_t sent = send(socket_, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (sent > 0) {
            bytes += sent;
            length -= static_cast<size_t>(sent);
            continue;
        }
        if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            closed_ = true;  // reset by the provider
            return false;
        }
        const bool writable = WaitUntil(
            [&] {
                pollfd out{socket_, POLLOUT, 0};
                return closed_ || (poll(&out, 1, 0) == 1 && (out.revents & POLLOUT));
            },
            kConsumeMs);
        if (!writable || closed_) {
            // The provider does not read (it may rightly hold a message for
            // want of a receive): the rest of the script is dropped.
            stalled_ = true;
            Unpredictable();
            return false;
        }
    }
    return true;
}

bool Session::ProviderHasUnread() const {
    if (provider_socket_ < 0 || !IsProviderSocket(provider_socket_))
        return false;  // closed (its number may already serve another fd)
    int unread = 0;
    return ioctl(provider_socket_, FIONREAD, &unread) == 0 && unread > 0;
}

// Pumps until `done` or for at most bound_ms; never sleeps: it spins a
// little, then blocks in poll on the fds that announce progress.
bool Session::WaitUntil(const std::function<bool()> &done, int bound_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(bound_ms);
    for (int round = 0;; ++round) {
        Pump();
        if (done())
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        if (round >= 8)
            RepostReceives();
        if (round < 64) {
            std::this_thread::yield();
            continue;
        }
        pollfd fds[3] = {{socket_, POLLIN, 0}, {p_.listener->Fd(), POLLIN, 0}, {-1, POLLIN, 0}};
        if (id_)
            fds[2].fd = id_->EventFd();
        poll(fds, 3, 1);
    }
}

void Session::Pump() {
    ReadFromProvider();
    TakeRequest();
    HandleEvents();
    DrainCompletions();
}

void Session::ReadFromProvider() {
    if (closed_ || socket_ < 0)
        return;
    uint8_t buffer[64 << 10];
    for (;;) {
        const ssize_t got = recv(socket_, buffer, sizeof(buffer), MSG_DONTWAIT);
        if (got > 0) {
            inbox_.insert(inbox_.end(), buffer, buffer + got);
            continue;
        }
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            closed_ = true;
        break;
    }
    // Whole messages only; whatever the provider sends must parse.
    size_t at = 0;
    while (inbox_.size() - at >= wire::kHeaderSize) {
        uint8_t raw[wire::kHeaderSize];
        memcpy(raw, inbox_.data() + at, sizeof(raw));
        wire::Header header;
        const wire::ParseError error = wire::ParseHeader(raw, &header);
        if (error != wire::ParseError::kNone)
            fprintf(stderr, "the provider sent a header that does not parse: %s\n",
                    wire::ParseErrorString(error));
        FUZZ_CHECK(error == wire::ParseError::kNone);
        const size_t length = wire::PayloadLength(header);
        if (inbox_.size() - at - wire::kHeaderSize < length)
            break;
        const uint8_t *payload = inbox_.data() + at + wire::kHeaderSize;
        OnProviderMessage(header, std::vector<uint8_t>(payload, payload + length));
        at += wire::kHeaderSize + length;
    }
    inbox_.erase(inbox_.begin(), inbox_.begin() + static_cast<ptrdiff_t>(at));
}

void Session::TakeRequest() {
    std::unique_ptr<provider::CmId> id;
    if (p_.listener->NextRequest(&id) != 0)
        return;
    // A request whose peer is not this input's socket was completed by an
    // earlier input's after that one ended: refused, as it is nobody's.
    sockaddr_storage peer{};
    const auto *peer_in = reinterpret_cast<const sockaddr_in *>(&peer);
    if (active_ || id->PeerAddress(&peer) != 0 || peer.ss_family != AF_INET ||
        peer_in->sin_port != local_address_.sin_port ||
        peer_in->sin_addr.s_addr != local_address_.sin_addr.s_addr) {
        id->Reject();
        return;
    }
    if (id_) {
        FUZZ_CHECK(!predictable_);  // one connection, one request
        id->Reject();
        return;
    }
    id_ = std::move(id);
    if (reject_) {
        id_->Reject();
        Unpredictable();
        return;
    }
    CreateQp();
    const uint8_t private_data[] = {'f', 'u', 'z', 'z'};
    id_->Accept(private_data, sizeof(private_data));
}

void Session::CreateQp() {
    FUZZ_CHECK(p_.device->CreateCq(kCqSize, nullptr, &send_cq_) == 0);
    FUZZ_CHECK(p_.device->CreateCq(kCqSize, nullptr, &recv_cq_) == 0);
    provider::QueuePairInit init;
    init.send_cq = send_cq_.get();
    init.recv_cq = recv_cq_.get();
    init.sq_size = kQueueDepth;
    init.rq_size = kReceives;
    FUZZ_CHECK(id_->CreateQp(*p_.pd, init) == 0);
    for (uint64_t i = 0; i < receives_; ++i)
        PostReceive(i);
    qp_ready_ = true;
}

void Session::PostReceive(uint64_t index) {
    ibv_sge sge{p_.local.addr(kLocalSize / 2 + index * kReceiveSize), kReceiveSize,
                local_mr_->Lkey()};
    ibv_recv_wr wr{};
    wr.wr_id = index;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    id_->Qp()->PostRecv(wr);
}

void Session::RepostReceives() {
    if (!qp_ready_)
        return;
    for (const uint64_t index : free_receives_)
        PostReceive(index);
    free_receives_.clear();
}

void Session::HandleEvents() {
    if (!id_)
        return;
    provider::CmEvent event;
    while (id_->NextEvent(&event) == 0) {
        if (event.type == provider::CmEventType::kEstablished)
            continue;
        // Lost, disconnected or refused: as librpma's rpma_conn_disconnect.
        provider_ended_ = true;
        if (event.type == provider::CmEventType::kDisconnected ||
            event.type == provider::CmEventType::kConnectError)
            id_->Disconnect();
    }
}

void Session::DrainCompletions() {
    if (!qp_ready_)
        return;
    ibv_wc wc[16];
    while (send_cq_->Poll(16, wc) > 0) {
    }
    for (int n; (n = recv_cq_->Poll(16, wc)) > 0;) {
        for (int i = 0; i < n; ++i) {
            FUZZ_CHECK(wc[i].wr_id < kReceives);
            if (wc[i].status == IBV_WC_SUCCESS) {
                // A message fits its buffer (a WRITE_WITH_IMM's length is
                // the write's, not the buffer's).
                FUZZ_CHECK(wc[i].opcode != IBV_WC_RECV || wc[i].byte_len <= kReceiveSize);
                if (predictable_)
                    CheckReceive(wc[i]);
                free_receives_.push_back(wc[i].wr_id);
            }
        }
    }
}

}  // namespace tcp_fuzz
