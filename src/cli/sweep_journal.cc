#include "cli/sweep_journal.h"

#include <fmt/format.h>

#include <filesystem>

#include "base/error.h"

namespace trnsim::cli {

namespace {
constexpr const char* kOption = "--resume";
}  // namespace

SweepJournal::SweepJournal(std::string path, nlohmann::json header) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  const nlohmann::json first{{"trnsim_sweep", std::move(header)}};
  std::error_code ec;
  if (fs::is_directory(path_, ec)) throw InputError(path_, kOption, "is a directory");
  const bool exists = fs::exists(path_, ec);
  if (exists) {
    std::ifstream in(path_);
    std::string line;
    if (!std::getline(in, line) || !nlohmann::json::accept(line) ||
        nlohmann::json::parse(line) != first)
      throw InputError(path_, kOption,
                       "holds another sweep (other options, sizes aside, or another trnsim "
                       "version); remove it or name another file");
    while (std::getline(in, line)) {
      // A line cut short when a run stopped is skipped: that size is simulated again.
      if (!nlohmann::json::accept(line)) continue;
      nlohmann::json row = nlohmann::json::parse(line);
      if (!row.is_object() || !row.contains("size_bytes") || !row["size_bytes"].is_number_integer())
        continue;
      // The key first: json's assignment takes its operand by value, which is initialised
      // (moved from `row`) before the left side is evaluated.
      const auto bytes = row["size_bytes"].get<int64_t>();
      rows_[bytes] = std::move(row);
    }
    resumed_ = rows_.size();
  }
  out_.open(path_, exists ? std::ios::app : std::ios::trunc);
  if (!out_) throw InputError(path_, kOption, "cannot open the file for writing");
  // Appending to a journal: a new line first, in case the last run stopped mid-line.
  out_ << (exists ? std::string("\n") : first.dump() + "\n") << std::flush;
  if (!out_) throw InputError(path_, kOption, "writing the file failed");
}

const nlohmann::json* SweepJournal::find(int64_t bytes) const {
  const auto it = rows_.find(bytes);
  if (it == rows_.end()) return nullptr;
  return &it->second;
}

void SweepJournal::record(const nlohmann::json& row) {
  out_ << row.dump() << "\n" << std::flush;
  if (!out_) throw InputError(path_, kOption, "writing the file failed (disk full?)");
  rows_[row.at("size_bytes").get<int64_t>()] = row;
}

}  // namespace trnsim::cli
