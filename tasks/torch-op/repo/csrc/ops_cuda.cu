// CUDA kernels of torchop._C (compiled only when nvcc and CUDA_HOME are found at build time).
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

namespace {

template <typename T>
__device__ T gelu_dev(T v) {
  const T inner = T(0.7978845608028654) * (v + T(0.044715) * v * v * v);
  return T(0.5) * v * (T(1) + tanh(inner));
}

template <typename T>
__device__ T gelu_grad_dev(T v) {
  const T inner = T(0.7978845608028654) * (v + T(0.044715) * v * v * v);
  const T t = tanh(inner);
  const T d_inner = T(0.7978845608028654) * (T(1) + T(3) * T(0.044715) * v * v);
  return T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * d_inner;
}

template <typename T>
__global__ void forward_kernel(const T* x, const T* bias, T* out, int64_t n, int64_t cols) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = gelu_dev(x[i] + bias[i % cols]);
}

template <typename T>
__global__ void backward_kernel(const T* grad, const T* x, const T* bias, T* dx, int64_t n,
                                int64_t cols) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dx[i] = grad[i] * gelu_grad_dev(x[i] + bias[i % cols]);
}

}  // namespace

torch::Tensor forward_cuda(const torch::Tensor& x_in, const torch::Tensor& bias_in) {
  auto x = x_in.contiguous();
  auto bias = bias_in.contiguous();
  auto out = torch::empty_like(x);
  const int64_t n = x.numel(), cols = x.size(1);
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu_cuda", [&] {
    forward_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n, cols);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

torch::Tensor backward_cuda(const torch::Tensor& grad_in, const torch::Tensor& x_in,
                            const torch::Tensor& bias_in) {
  auto grad = grad_in.contiguous();
  auto x = x_in.contiguous();
  auto bias = bias_in.contiguous();
  auto dx = torch::empty_like(x);
  const int64_t n = x.numel(), cols = x.size(1);
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu_backward_cuda", [&] {
    backward_kernel<scalar_t><<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        grad.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), bias.data_ptr<scalar_t>(),
        dx.data_ptr<scalar_t>(), n, cols);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return dx;
}
