// The fuzz input's format: a script read front to back, each step an opcode
// byte and the fields that step reads (past the input's end every field is
// 0), the encoder of the same format, and the seeds written with it.

#ifndef TESTS_FUZZ_TCP_FUZZ_SCRIPT_H_
#define TESTS_FUZZ_TCP_FUZZ_SCRIPT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tcp_fuzz {

enum Step : uint8_t {
    kStepConnectRequest,
    kStepReadyToUse,
    kStepWrite,
    kStepWriteWithImm,
    kStepReadRequest,
    kStepAtomicWrite,
    kStepFlush,
    kStepSend,
    kStepSendWithImm,
    kStepAck,
    kStepNak,
    kStepReadResponse,
    kStepAckRequest,
    kStepDisconnect,
    kStepRawBytes,
    kStepFreeHeader,
    kStepProviderPost,
    kStepProviderDisconnect,
    kStepDeregister,
    kStepDestroyQp,
    kStepCount,
};

class Script {
  public:
    Script(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    bool Done() const { return offset_ >= size_; }
    uint8_t U8() { return offset_ < size_ ? data_[offset_++] : 0; }
    uint16_t U16() { return static_cast<uint16_t>(U8() | U8() << 8); }
    uint32_t U32() { return static_cast<uint32_t>(U16() | static_cast<uint32_t>(U16()) << 16); }

  private:
    const uint8_t *data_;
    size_t size_;
    size_t offset_ = 0;
};

// The encoder of the same format, for the seeds.
class ScriptWriter {
  public:
    ScriptWriter &U8(uint8_t v) {
        bytes_.push_back(v);
        return *this;
    }
    ScriptWriter &U16(uint16_t v) { return U8(v & 0xff).U8(v >> 8); }
    ScriptWriter &U32(uint32_t v) { return U16(v & 0xffff).U16(v >> 16); }
    const std::vector<uint8_t> &Bytes() const { return bytes_; }

  private:
    std::vector<uint8_t> bytes_;
};

// Writes the structured seeds of corpus/tcp_connection/ into `dir`.
void WriteSeeds(const char *dir);

}  // namespace tcp_fuzz

#endif  // TESTS_FUZZ_TCP_FUZZ_SCRIPT_H_
