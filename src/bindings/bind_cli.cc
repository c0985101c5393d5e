#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <iostream>
#include <string>

#include "base/interrupt.h"
#include "bindings/bindings.h"
#include "cli/cli.h"
#include "validate/validate.h"

namespace trnsim::bindings {

namespace {

std::string text(const nb::dict& d, const char* key) {
  return d.contains(key) ? nb::cast<std::string>(nb::str(d[key])) : std::string();
}

// One record from a dict with keys case, unit, measured, simulated, and optionally tolerance,
// source, note and fitted.
validate::Record record_of(const std::string& target, const nb::handle& h) {
  if (!nb::isinstance<nb::dict>(h))
    throw InputError("validate", target, "a target must return a list of dicts");
  const nb::dict d = nb::borrow<nb::dict>(h);
  for (const char* key : {"case", "unit", "measured", "simulated"})
    if (!d.contains(key))
      throw InputError("validate", target, std::string("a record lacks '") + key + "'");
  validate::Record r;
  r.target = target;
  r.case_name = text(d, "case");
  r.unit = text(d, "unit");
  r.measured = nb::cast<double>(d["measured"]);
  r.simulated = nb::cast<double>(d["simulated"]);
  if (d.contains("tolerance")) r.tolerance = nb::cast<double>(d["tolerance"]);
  r.source = text(d, "source");
  r.note = text(d, "note");
  r.fitted = text(d, "fitted");
  return r;
}

}  // namespace

void bind_cli(nb::module_& m) {
  m.def(
      "add_validate_target",
      [](const std::string& name, const std::string& doc, nb::callable fn) {
        validate::add_target({name, doc, [name, fn]() {
                                nb::gil_scoped_acquire gil;
                                std::vector<validate::Record> out;
                                for (nb::handle h : fn()) out.push_back(record_of(name, h));
                                return out;
                              }});
      },
      nb::arg("name"), nb::arg("doc"), nb::arg("fn"),
      "Adds a `trnsim validate` target: `fn()` returns a list of dicts (case, unit, measured, "
      "simulated; optional tolerance, source, note, fitted).");
  m.def("clear_validate_targets", &validate::clear_added_targets,
        "Drops the added validate targets (their functions are Python objects).");

  m.def(
      "cli_main",
      [](const std::vector<nb::bytes>& raw) {
        // Arguments come as the bytes the OS gave (os.fsencode): a file name that is not UTF-8
        // stays the exact name instead of failing to convert.
        std::vector<std::string> args;
        args.reserve(raw.size());
        for (const nb::bytes& b : raw) args.emplace_back(b.c_str(), b.size());
        const SigintScope sigint(on_main_thread());
        const int rc = cli::run(args, std::cout, std::cerr);
        std::cout.flush();
        return rc;
      },
      nb::arg("args"),
      "Run the trnsim command line with `args` (bytes, no program name); returns the exit code. "
      "Ctrl-C during the call stops it with exit code 130.");
}

}  // namespace trnsim::bindings
