// The fused LSTM cell step: torch.ops.<OPERATOR_NAMESPACE>.lstm_cell_ (built by models/fused_cell.py, one
// namespace per CPU variant, so that the variants can be loaded side by side).
//
// With the gate pre-activations z^T = [z_i; z_j; z_f; z_o] (4D, cols; its rows may lie further apart than
// cols, as columns of a wider product do), plus b (4D, one value per row) when given, and the cell state c^T
// (D, cols), one pass over memory computes, column by column:
//
//     c <- clip(sigmoid(z_f) * c + sigmoid(z_i) * tanh(z_j), +-cell_clip)      (in place)
//     h  = sigmoid(z_o) * tanh(c)                                              (rounded to h's dtype)
//
// with sigmoid(x) = 1 / (1 + exp(-x)) and tanh(x) = sign(x) (1 - e) / (1 + e), e = exp(-2|x|), and each
// product sigmoid(a) tanh(b) taken as one fraction: 3 divisions and 5 exponentials per element, where
// torch's operations take 5 and 5 and a dozen passes over memory. float32 gates stay within a few 1e-7 of
// torch's operations. z may be float32 or the weights' bf16/fp16 product (widened here); c is float32.

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <type_traits>

namespace {

using Vec = at::vec::Vectorized<float>;
constexpr int64_t kWidth = Vec::size();
constexpr int64_t kGrainElements = 8192;  // the least work a thread is given

// exp(x): Sleef's to 1 ulp (what torch.exp and torch.sigmoid use) for float32 gates; for bf16/fp16 gates,
// whose inputs are rounded to 2^-8, torch's polynomial exp_u20 (20 ulp, about 1.2e-6), twice as fast.
template <bool precise>
inline Vec exp(const Vec& x) {
  if constexpr (precise) {
    return x.exp();
  } else {
    return x.exp_u20();
  }
}

// sigmoid(y) * tanh(z) with one division: sign(z) (1 - e_z) / ((1 + e_y)(1 + e_z)), e_y = exp(-y),
// e_z = exp(-2|z|) (in (0, 1], so nothing overflows but 1 + e_y, and then the result is 0 as it should be).
template <bool precise>
inline Vec sigmoid_tanh(const Vec& y, const Vec& z) {
  const Vec e_y = exp<precise>(Vec(0.f) - y), e_z = exp<precise>(z.abs() * Vec(-2.f));
  const Vec magnitude = (Vec(1.f) - e_z) / ((Vec(1.f) + e_y) * (Vec(1.f) + e_z));
  return Vec::blendv(magnitude, Vec(0.f) - magnitude, z < Vec(0.f));
}

template <typename scalar_t>
inline Vec load(const scalar_t* data, int64_t count) {
  if constexpr (std::is_same_v<scalar_t, float>) {
    return Vec::loadu(data, count);
  } else {
    Vec out;
    if (count == kWidth) {
      at::vec::load_to_float(data, out);
    } else {
      scalar_t part[kWidth] = {};
      std::copy(data, data + count, part);
      at::vec::load_to_float(part, out);
    }
    return out;
  }
}

template <typename scalar_t>
inline void store(scalar_t* data, const Vec& values, int64_t count) {
  if constexpr (std::is_same_v<scalar_t, float>) {
    values.store(data, count);
  } else {
    at::vec::convert_from_float<scalar_t>(values, values).store(data, count);
  }
}

template <typename gate_t, typename out_t, bool precise = std::is_same_v<gate_t, float>>
void cell_step(const gate_t* z, int64_t z_row, const float* bias, float* c, out_t* h, int64_t D, int64_t cols,
               std::optional<float> clip) {
  const int64_t n = D * z_row;  // one gate's block of z; z_row: from one row of z to the next
  const int64_t grain = std::max<int64_t>(1, kGrainElements / std::max<int64_t>(cols, 1));
  at::parallel_for(0, D, grain, [&](int64_t begin, int64_t end) {
    for (int64_t d = begin; d < end; ++d) {
      const Vec b_i(bias ? bias[d] : 0.f), b_j(bias ? bias[D + d] : 0.f);
      const Vec b_f(bias ? bias[2 * D + d] : 0.f), b_o(bias ? bias[3 * D + d] : 0.f);
      const gate_t* z_d = z + d * z_row;
      for (int64_t col = 0; col < cols; col += kWidth) {
        const int64_t count = std::min(kWidth, cols - col), k = d * cols + col;
        Vec z_i = load(z_d + col, count), z_j = load(z_d + n + col, count);
        Vec z_f = load(z_d + 2 * n + col, count), z_o = load(z_d + 3 * n + col, count);
        if (bias) {
          z_i = z_i + b_i, z_j = z_j + b_j, z_f = z_f + b_f, z_o = z_o + b_o;
        }
        Vec c_t = Vec::loadu(c + k, count) / (Vec(1.f) + exp<precise>(Vec(0.f) - z_f)) +
                  sigmoid_tanh<precise>(z_i, z_j);
        if (clip) {
          c_t = at::vec::clamp(c_t, Vec(-*clip), Vec(*clip));
        }
        c_t.store(c + k, count);
        store(h + k, sigmoid_tanh<precise>(z_o, c_t), count);
      }
    }
  });
}

void lstm_cell_(const at::Tensor& gates, const std::optional<at::Tensor>& bias, const at::Tensor& c,
                std::optional<double> cell_clip, const at::Tensor& h) {
  TORCH_CHECK(c.dim() == 2 && c.is_contiguous() && c.scalar_type() == at::kFloat, "c: a contiguous float32 (D, cols)");
  const int64_t D = c.size(0), cols = c.size(1);
  TORCH_CHECK(gates.dim() == 2 && gates.size(0) == 4 * D && gates.size(1) == cols &&
                  (gates.stride(1) == 1 || cols == 1) && gates.stride(0) >= cols,
              "gates: (4D, cols), each row contiguous");
  TORCH_CHECK(h.is_contiguous() && h.sizes() == c.sizes(), "h: contiguous (D, cols)");
  TORCH_CHECK(!bias || (bias->is_contiguous() && bias->numel() == 4 * D && bias->scalar_type() == at::kFloat),
              "bias: 4D float32 values");
  TORCH_CHECK(gates.scalar_type() == h.scalar_type(), "gates and h: one dtype");
  const float* b = bias ? bias->data_ptr<float>() : nullptr;
  const std::optional<float> clip = cell_clip ? std::optional<float>(static_cast<float>(*cell_clip)) : std::nullopt;
  float* state = c.data_ptr<float>();
  const int64_t row = gates.stride(0);
  switch (gates.scalar_type()) {
    case at::kFloat:
      return cell_step(gates.data_ptr<float>(), row, b, state, h.data_ptr<float>(), D, cols, clip);
    case at::kBFloat16:
      return cell_step(gates.data_ptr<at::BFloat16>(), row, b, state, h.data_ptr<at::BFloat16>(), D, cols, clip);
    case at::kHalf:
      return cell_step(gates.data_ptr<at::Half>(), row, b, state, h.data_ptr<at::Half>(), D, cols, clip);
    default:
      TORCH_CHECK(false, "gates: float32, bfloat16 or float16, not ", gates.scalar_type());
  }
}

}  // namespace

#ifndef OPERATOR_NAMESPACE
#error "OPERATOR_NAMESPACE: the namespace the operator registers in (-DOPERATOR_NAMESPACE=name)"
#endif
#define OPERATOR_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)  // expands OPERATOR_NAMESPACE before TORCH_LIBRARY pastes it

OPERATOR_LIBRARY(OPERATOR_NAMESPACE, m) {
  m.def("lstm_cell_(Tensor gates, Tensor? bias, Tensor(a!) c, float? cell_clip, Tensor(b!) h) -> ()");
  m.impl("lstm_cell_", c10::DispatchKey::CPU, &lstm_cell_);
}
