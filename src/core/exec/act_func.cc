#include "core/exec/act_func.h"

#include <cmath>
#include <numbers>

namespace trnsim::core {

namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
double phi_cdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }
double phi_pdf(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi); }

constexpr double kGeluSigmoid = 1.702;

}  // namespace

double act_eval(isa::ActFunc f, double x, double alpha) {
  using F = isa::ActFunc;
  switch (f) {
    case F::kCopy:
      return x;
    case F::kSquare:
      return x * x;
    case F::kSigmoid:
      return sigmoid(x);
    case F::kRelu:
      return x > 0 ? x : (std::isnan(x) ? x : 0.0);
    case F::kPrelu:
      return x > 0 ? x : alpha * x;
    case F::kGelu:
      return x * phi_cdf(x);
    case F::kGeluDx:
      return phi_cdf(x) + x * phi_pdf(x);
    case F::kGeluApprxTanh: {
      const double k = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
    }
    case F::kGeluApprxSigmoid:
      return x * sigmoid(kGeluSigmoid * x);
    case F::kGeluApprxSigmoidDx: {
      const double s = sigmoid(kGeluSigmoid * x);
      return s + kGeluSigmoid * x * s * (1.0 - s);
    }
    case F::kSilu:
      return x * sigmoid(x);
    case F::kSiluDx: {
      const double s = sigmoid(x);
      return s * (1.0 + x * (1.0 - s));
    }
    case F::kTanh:
      return std::tanh(x);
    case F::kSoftplus:
      return softplus(x);
    case F::kMish:
      return x * std::tanh(softplus(x));
    case F::kErf:
      return std::erf(x);
    case F::kErfDx:
      return 2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x);
    case F::kExp:
      return std::exp(x);
    case F::kLog:
      return std::log(x);
    case F::kSin:
      return std::sin(x);
    case F::kArctan:
      return std::atan(x);
    case F::kSqrt:
      return std::sqrt(x);
    case F::kRsqrt:
      return 1.0 / std::sqrt(x);
    case F::kReciprocal:
      return 1.0 / x;
    case F::kSign:
      return std::isnan(x) ? x : (x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0));
    case F::kAbs:
      return std::fabs(x);
  }
  return x;
}

}  // namespace trnsim::core
