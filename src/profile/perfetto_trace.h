// Perfetto's native trace format (protos/perfetto/trace/trace.proto: a Trace is a sequence of
// TracePackets), which ui.perfetto.dev and the trace processor open. Written by hand with
// protobuf_writer.h, on one packet sequence:
//  - TrackDescriptors: a process per Track::process, a thread track per track, a counter track
//    per Counter (under its process);
//  - a TYPE_SLICE_BEGIN / TYPE_SLICE_END pair per span, its name and category interned
//    (InternedData event_names / event_categories; the first packet clears the incremental
//    state), the label's args as debug annotations (names and string values interned; values
//    that are integers written as integers);
//  - flows as flow_ids on the span depended on and terminating_flow_ids on the dependent one;
//  - TYPE_COUNTER events for counter samples.
// Times are Perfetto's default: ns as uint64, rounded down from ps (rounding down keeps every
// order and nesting of spans; the JSON trace keeps the ps). Spans that partly overlap another
// of their track go to an extra thread track ("pe (2)"), since a track's slices must nest.
// Tracks of one process whose spans are identical (same times and labels, in the same order)
// are written once, named for the group ("dma0-15.q0"): a DMA transfer spread evenly over
// the engines puts the same piece on each of them. The output is a pure function of the trace.
#pragma once

#include <ostream>
#include <string>

#include "profile/trace.h"

namespace trnsim::profile {

struct PerfettoOptions {
  bool merge_identical_tracks = true;
};

void write_perfetto_trace(const Trace& trace, std::ostream& out,
                          const PerfettoOptions& options = {});
std::string perfetto_trace_bytes(const Trace& trace, const PerfettoOptions& options = {});

// Trace file formats by file name: ".json" (Chrome JSON), ".perfetto-trace" or ".pftrace"
// (Perfetto protobuf). kUnknown for any other name.
enum class TraceFormat { kUnknown, kChromeJson, kPerfetto };
TraceFormat trace_format_for(const std::string& path);
// What to tell someone whose file name has no trace format's extension.
inline constexpr const char* kTraceFormatsHelp =
    "name the file .json (Chrome JSON) or .perfetto-trace / .pftrace (Perfetto protobuf); "
    "ui.perfetto.dev opens both";

}  // namespace trnsim::profile
