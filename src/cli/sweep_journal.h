// The journal of a long size sweep (`trnsim collective ... --resume FILE`): one JSON line
// naming the sweep, then one line per finished size. A sweep stopped by Ctrl-C, SIGTERM or a
// crash starts again where it stopped: the sizes in the journal are not simulated again.
// Rows are appended and flushed one line at a time; a last line cut short by the stop is
// dropped when the journal is read.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace trnsim::cli {

class SweepJournal {
 public:
  // Opens `path` for the sweep `header` describes (its request and trnsim's version), or
  // creates it. Throws InputError naming the file when it holds another sweep or cannot be
  // written.
  SweepJournal(std::string path, nlohmann::json header);

  // The row recorded for a size, or null.
  const nlohmann::json* find(int64_t bytes) const;
  // Records a finished row (its "size_bytes" is the key).
  void record(const nlohmann::json& row);
  size_t resumed() const { return resumed_; }

 private:
  std::string path_;
  std::map<int64_t, nlohmann::json> rows_;
  size_t resumed_ = 0;
  std::ofstream out_;
};

}  // namespace trnsim::cli
