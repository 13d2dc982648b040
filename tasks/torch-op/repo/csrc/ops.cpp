// torchop._C: a fused bias + GELU (tanh approximation) with its backward, for CPU and CUDA.
//
// Built with torch.utils.cpp_extension, so the module links against the libtorch of the
// torch it was compiled with: it must be built against the torch installed at run time.
#include <torch/extension.h>

#include <cmath>

namespace {

constexpr double kAlpha = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kBeta = 0.044715;

template <typename T>
T gelu(T v) {
  T inner = T(kAlpha) * (v + T(kBeta) * v * v * v);
  return T(0.5) * v * (T(1) + std::tanh(inner));
}

template <typename T>
T gelu_grad(T v) {
  T inner = T(kAlpha) * (v + T(kBeta) * v * v * v);
  T t = std::tanh(inner);
  T d_inner = T(kAlpha) * (T(1) + T(3) * T(kBeta) * v * v);
  return T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * d_inner;
}

void check_inputs(const torch::Tensor& x, const torch::Tensor& bias) {
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows, features)");
  TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(1), "bias must have x.size(1) entries");
  TORCH_CHECK(x.device() == bias.device(), "x and bias must be on the same device");
  TORCH_CHECK(x.scalar_type() == bias.scalar_type(), "x and bias must have the same dtype");
}

torch::Tensor forward_cpu(const torch::Tensor& x_in, const torch::Tensor& bias_in) {
  auto x = x_in.contiguous();
  auto bias = bias_in.contiguous();
  auto out = torch::empty_like(x);
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu_cpu", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* bp = bias.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t c = 0; c < cols; ++c) op[r * cols + c] = gelu(xp[r * cols + c] + bp[c]);
    });
  });
  return out;
}

torch::Tensor backward_cpu(const torch::Tensor& grad_in, const torch::Tensor& x_in,
                           const torch::Tensor& bias_in) {
  auto grad = grad_in.contiguous();
  auto x = x_in.contiguous();
  auto bias = bias_in.contiguous();
  auto dx = torch::empty_like(x);
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu_backward_cpu", [&] {
    const scalar_t* gp = grad.data_ptr<scalar_t>();
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* bp = bias.data_ptr<scalar_t>();
    scalar_t* dp = dx.data_ptr<scalar_t>();
    at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const int64_t i = r * cols + c;
          dp[i] = gp[i] * gelu_grad(xp[i] + bp[c]);
        }
    });
  });
  return dx;
}

}  // namespace

#ifdef WITH_CUDA
torch::Tensor forward_cuda(const torch::Tensor& x, const torch::Tensor& bias);
torch::Tensor backward_cuda(const torch::Tensor& grad, const torch::Tensor& x,
                            const torch::Tensor& bias);
#endif

torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& bias) {
  check_inputs(x, bias);
  if (x.is_cuda()) {
#ifdef WITH_CUDA
    return forward_cuda(x, bias);
#else
    TORCH_CHECK(false, "torchop was built without CUDA support");
#endif
  }
  return forward_cpu(x, bias);
}

torch::Tensor backward(const torch::Tensor& grad, const torch::Tensor& x,
                       const torch::Tensor& bias) {
  check_inputs(x, bias);
  if (x.is_cuda()) {
#ifdef WITH_CUDA
    return backward_cuda(grad, x, bias);
#else
    TORCH_CHECK(false, "torchop was built without CUDA support");
#endif
  }
  return backward_cpu(grad, x, bias);
}

bool has_cuda() {
#ifdef WITH_CUDA
  return true;
#else
  return false;
#endif
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "gelu(x + bias), tanh approximation");
  m.def("backward", &backward, "d gelu(x + bias) / dx times grad");
  m.def("has_cuda", &has_cuda, "whether this build holds the CUDA kernels");
}
