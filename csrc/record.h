// The fixed-size POD record every timestamp is stored in; integer ids only, never strings.
#pragma once

#include <cstdint>
#include <type_traits>

namespace pyfxprof {

// Kinds the Python layer gives meaning to; the buffer itself treats them as opaque.
enum RecordKind : uint16_t {
  kKindMark = 0,        // node boundary (the hot path)
  kKindRangeBegin = 1,  // user range opened
  kKindRangeEnd = 2,    // user range closed
  kKindRunBegin = 3,    // one model call starts
  kKindRunEnd = 4,      // one model call ends
};

struct Record {
  int64_t timestamp_ns;  // on the process clock (clock.h)
  uint64_t sequence;     // slot index + 1, stored last with release: the "published" flag
  uint32_t id;           // caller-chosen integer id
  uint32_t thread;       // small per-thread number, 1-based, in order of first mark
  uint16_t kind;         // RecordKind
  uint16_t reserved16;
  uint32_t reserved32;
};

static_assert(sizeof(Record) == 32, "Record must stay 32 bytes: two per cache line");
static_assert(std::is_trivially_copyable_v<Record> && std::is_standard_layout_v<Record>,
              "Record must be a POD");

}  // namespace pyfxprof
