// Chrome / Perfetto trace-event JSON (the "JSON Array/Object Format" that chrome://tracing and
// ui.perfetto.dev open): one process per Track::process, one thread per track, a complete
// ("ph":"X") event per span with the label's name, category and args. Times are microseconds
// written as exact decimals with 6 fractional digits, so picosecond precision is kept (a double
// would round it beyond ~2^53 ps). The output is a pure function of the trace: identical traces
// give byte-identical text.
#pragma once

#include <ostream>
#include <string>

#include "profile/trace.h"

namespace trnsim::profile {

void write_chrome_trace(const Trace& trace, std::ostream& out);
std::string chrome_trace_json(const Trace& trace);

// "12.345678": picoseconds as microseconds with 6 decimals (exact).
std::string ps_to_us_string(Picoseconds t);

}  // namespace trnsim::profile
