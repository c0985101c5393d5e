// The NeuronCore's instruction streams: four compute engines and the Sync engine (SP), each
// with its own sequencer and in-order queue (HARDWARE.md s2). DMA transfers are started from
// a stream and run on the DMA engines' queues (isa/instruction.h: DmaParams).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace trnsim::isa {

enum class Engine : uint8_t { kTensor, kVector, kScalar, kGpSimd, kSync };
inline constexpr int kNumEngines = 5;

inline constexpr std::array<Engine, kNumEngines> kAllEngines{
    Engine::kTensor, Engine::kVector, Engine::kScalar, Engine::kGpSimd, Engine::kSync};

// KLR / profiler names: pe, dve, act, pool, sp.
constexpr std::string_view engine_name(Engine e) {
  constexpr std::array<std::string_view, kNumEngines> kNames{"pe", "dve", "act", "pool", "sp"};
  return kNames[static_cast<size_t>(e)];
}

// A set of engines, for the op table ("this op may run on Vector or GpSimd").
struct EngineSet {
  uint8_t bits = 0;
  constexpr EngineSet() = default;
  constexpr EngineSet(std::initializer_list<Engine> es) {
    for (Engine e : es) bits |= static_cast<uint8_t>(1u << static_cast<unsigned>(e));
  }
  constexpr bool has(Engine e) const { return (bits >> static_cast<unsigned>(e)) & 1u; }
};

}  // namespace trnsim::isa
