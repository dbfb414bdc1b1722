// Write-bandwidth probe (bench/RESULTS.md, 2026-11-29 twenty-fourth session): 512 MiB of zeros in the
// patterns a one-word quotient could use, against cudaMemset. Run on a GPU machine:
//   nvcc -O3 -arch=sm_90 -std=c++17 bench/probes/write_bandwidth.cu -o /tmp/wb && /tmp/wb
#include <cstdio>
#include <cuda_runtime.h>
typedef unsigned long long u64;
// Pattern 1: one warp per 32 instances of H 16-byte words; lanes side by side (as bf_warp_zeros).
template <int H>
__global__ void __launch_bounds__(128, 1) warp_rows(ulonglong2* out, u64 n) {
  u64 inst0 = ((u64)blockIdx.x * 128 + threadIdx.x) & ~31ull;
  if (inst0 >= n) return;
  ulonglong2* q2 = out + inst0 * H;
  unsigned lane = threadIdx.x & 31;
#pragma unroll 4
  for (unsigned x = lane; x < 32u * H; x += 32u) q2[x] = make_ulonglong2(0ull, 0ull);
}
template <int H>
__global__ void __launch_bounds__(128, 1) warp_rows_cs(ulonglong2* out, u64 n) {
  u64 inst0 = ((u64)blockIdx.x * 128 + threadIdx.x) & ~31ull;
  if (inst0 >= n) return;
  ulonglong2* q2 = out + inst0 * H;
  unsigned lane = threadIdx.x & 31;
#pragma unroll 4
  for (unsigned x = lane; x < 32u * H; x += 32u) __stcs(&q2[x], make_ulonglong2(0ull, 0ull));
}
// Pattern 2: grid-stride over all 16-byte words, T threads.
__global__ void stride(ulonglong2* out, u64 words) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x, s = (u64)gridDim.x * blockDim.x;
  for (; i < words; i += s) out[i] = make_ulonglong2(0ull, 0ull);
}
// Pattern 3: a block's threads per instance (128 threads write one instance's H words).
template <int H>
__global__ void block_rows(ulonglong2* out, u64 n) {
  ulonglong2* q2 = out + (u64)blockIdx.x * H;
  for (unsigned x = threadIdx.x; x < H; x += blockDim.x) q2[x] = make_ulonglong2(0ull, 0ull);
}
int main() {
  const u64 bytes = 512ull << 20;
  ulonglong2* d;
  cudaMalloc(&d, bytes);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  auto time = [&](const char* name, auto launch) {
    launch();
    cudaDeviceSynchronize();
    float best = 1e9f;
    for (int r = 0; r < 10; ++r) {
      cudaEventRecord(a);
      launch();
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      if (ms < best) best = ms;
    }
    printf("%-44s %8.1f us %7.0f GB/s  %s\n", name, best * 1e3, bytes / (best * 1e-3) / 1e9,
           cudaGetErrorString(cudaGetLastError()));
  };
  // 32768 bits: H = 256 words of 16 bytes, n = 2^17; 65536 bits: H = 512, n = 2^16.
  time("memset", [&] { cudaMemsetAsync(d, 0, bytes); });
  time("warp_rows 32768 (n=2^17)", [&] { warp_rows<256><<<1024, 128>>>(d, 1ull << 17); });
  time("warp_rows_cs 32768", [&] { warp_rows_cs<256><<<1024, 128>>>(d, 1ull << 17); });
  time("warp_rows 65536 (n=2^16)", [&] { warp_rows<512><<<512, 128>>>(d, 1ull << 16); });
  time("warp_rows 4096 (n=2^20)", [&] { warp_rows<32><<<8192, 128>>>(d, 1ull << 20); });
  time("block_rows 32768 (2^17 blocks of 128)", [&] { block_rows<256><<<1 << 17, 128>>>(d, 1ull << 17); });
  time("block_rows 65536 (2^16 blocks of 256)", [&] { block_rows<512><<<1 << 16, 256>>>(d, 1ull << 16); });
  for (int t : {1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 22})
    for (int bs : {128, 256, 512}) {
      char name[64];
      snprintf(name, 64, "stride %d threads, block %d", t, bs);
      time(name, [&] { stride<<<t / bs, bs>>>(d, bytes / 16); });
    }
  return 0;
}
