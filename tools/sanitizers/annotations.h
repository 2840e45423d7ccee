// What ThreadSanitizer is told about memory that another party writes
// without any synchronization this process could see: a region's bytes,
// which clients' one-sided operations write (the tcp provider's progress
// thread, or the NIC on verbs). Whoever reads them as they are (a checksum,
// a test polling a flag) hides those reads from ThreadSanitizer with
// IgnoreReadsInScope; everything else stays checked. Empty without
// ThreadSanitizer.
#ifndef RPMA_TOOLS_SANITIZERS_ANNOTATIONS_H
#define RPMA_TOOLS_SANITIZERS_ANNOTATIONS_H

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer's dynamic annotations: its runtime exports them, no header
// declares them.
extern "C" void AnnotateIgnoreReadsBegin(const char *file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char *file, int line);
#endif

namespace rpma::sanitizers {

// The reads of this thread are not checked while it lives.
class IgnoreReadsInScope {
  public:
#if defined(__SANITIZE_THREAD__)
    IgnoreReadsInScope() {
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);
    }
    ~IgnoreReadsInScope() {
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);
    }
#else
    // User-provided, so that a scope's guard is no unused variable.
    IgnoreReadsInScope() {}
    ~IgnoreReadsInScope() {}
#endif
    IgnoreReadsInScope(const IgnoreReadsInScope &) = delete;
    IgnoreReadsInScope &operator=(const IgnoreReadsInScope &) = delete;
};

}  // namespace rpma::sanitizers

#endif  // RPMA_TOOLS_SANITIZERS_ANNOTATIONS_H
