// ScalarE activation functions (HARDWARE.md s2.4), evaluated in double precision.
//
// Precision assumption: the hardware evaluates piecewise polynomials whose tables are not
// public (s11 item 3), so bit-exact activations are impossible from public data. trnsim
// computes func in double from the exact input and rounds once to FP32: the result is within
// one FP32 ulp of the true value and is the correctly rounded one except when the true value
// lies within a few double ulps of an FP32 rounding boundary. Out-of-range behaviour of the
// hardware's polynomials (sin without range reduction, log below 2^-64, ...) is NOT modelled:
// trnsim returns the mathematical function everywhere.
//
// Definitions (x = input, a = Params::alpha):
//   copy x; square x^2; relu max(x, 0); prelu x > 0 ? x : a*x; sigmoid 1/(1+e^-x);
//   gelu x*Phi(x) with Phi(x) = (1+erf(x/sqrt2))/2; gelu_dx Phi(x) + x*phi(x);
//   gelu_apprx_tanh x/2*(1+tanh(sqrt(2/pi)*(x+0.044715x^3)));
//   gelu_apprx_sigmoid x*sigmoid(1.702x), and its derivative;
//   silu x*sigmoid(x); silu_dx sigmoid(x)*(1+x*(1-sigmoid(x))); tanh; softplus ln(1+e^x);
//   mish x*tanh(softplus(x)); erf; erf_dx 2/sqrt(pi)*e^(-x^2); exp; log; sin; arctan; sqrt;
//   rsqrt 1/sqrt(x); reciprocal 1/x; sign (-1, 0 or +1; NaN stays NaN); abs.
#pragma once

#include "isa/instruction.h"

namespace trnsim::core {

double act_eval(isa::ActFunc f, double x, double alpha);

}  // namespace trnsim::core
