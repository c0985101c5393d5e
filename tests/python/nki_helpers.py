"""Shared by the NKI tests: numpy references of the activation functions and ALU ops
(float64, then rounded to fp32 once: the reference rounds once, as ScalarE / VectorE do)."""

import math

import numpy as np

_erf = np.vectorize(math.erf)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def phi(x):
    return 0.5 * (1 + _erf(x / math.sqrt(2)))


ACT_REF = {
    "exp": np.exp, "log": np.log, "tanh": np.tanh, "sigmoid": sigmoid,
    "relu": lambda x: np.maximum(x, 0), "gelu": lambda x: x * phi(x),
    "gelu_dx": lambda x: phi(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi),
    "gelu_apprx_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) *
                                                        (x + 0.044715 * x ** 3))),
    "gelu_apprx_sigmoid": lambda x: x * sigmoid(1.702 * x),
    "gelu_apprx_sigmoid_dx": lambda x: sigmoid(1.702 * x) * (1 + 1.702 * x *
                                                             (1 - sigmoid(1.702 * x))),
    "silu": lambda x: x * sigmoid(x),
    "silu_dx": lambda x: sigmoid(x) * (1 + x * (1 - sigmoid(x))),
    "softplus": softplus, "mish": lambda x: x * np.tanh(softplus(x)), "erf": _erf,
    "erf_dx": lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), "sin": np.sin,
    "arctan": np.arctan, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "reciprocal": lambda x: 1 / x, "sign": np.sign, "square": np.square, "abs": np.abs,
    "identity": lambda x: x,
}
POSITIVE_ONLY = {"log", "sqrt", "rsqrt"}

ALU_REF = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "maximum": np.maximum, "minimum": np.minimum, "power": np.power,
    "equal": lambda a, b: (a == b).astype(np.float32),
    "not_equal": lambda a, b: (a != b).astype(np.float32),
    "greater": lambda a, b: (a > b).astype(np.float32),
    "greater_equal": lambda a, b: (a >= b).astype(np.float32),
    "less": lambda a, b: (a < b).astype(np.float32),
    "less_equal": lambda a, b: (a <= b).astype(np.float32),
    "abs_max": lambda a, b: np.maximum(np.abs(a), np.abs(b)),
    "abs_min": lambda a, b: np.minimum(np.abs(a), np.abs(b)),
    "logical_and": lambda a, b: ((a != 0) & (b != 0)).astype(np.float32),
    "logical_or": lambda a, b: ((a != 0) | (b != 0)).astype(np.float32),
    "logical_xor": lambda a, b: ((a != 0) ^ (b != 0)).astype(np.float32),
}


def ref32(f, *xs):
    return f(*(x.astype(np.float64) for x in xs)).astype(np.float32)
