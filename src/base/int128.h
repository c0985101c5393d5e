// 128-bit integers for exact intermediate products (GCC/Clang extension, named once here).
#pragma once

namespace trnsim {
__extension__ typedef unsigned __int128 uint128;
__extension__ typedef __int128 int128;
}  // namespace trnsim
