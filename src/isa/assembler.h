// Programs from text: the line-oriented syntax of docs/isa.md. The assembler checks syntax
// and the op table (mnemonic, operand structure, parameter names and values, tensors, labels);
// hardware rules (partitions, banks, dtypes per generation) are validation's (isa/validate.h).
// Every error is an InputError whose where() is "file:line" and key() the offending token.
#pragma once

#include <filesystem>
#include <string_view>

#include "isa/program.h"

namespace trnsim::isa {

Program assemble(std::string_view text, std::string_view file_name = "<program>");
Program assemble_file(const std::filesystem::path& path);

}  // namespace trnsim::isa
