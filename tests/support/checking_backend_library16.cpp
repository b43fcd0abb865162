// The checking backend's model of a 16-bit convolution library (CheckingBackend::
// offerConvolution16, checking_backend.h): cuDNN's three passes on 16-bit patterns as the
// CUDA backend runs them under telemetry sampled, written as the definitions of the
// convolutions (sums in double), so that the layers' library paths run, and are checked,
// on any CPU.
#include "checking_backend.h"

#include "numerics/format.h"
#include "numerics/storage_convert.h"

#include <string>

namespace plab::testing {

using HostAccess = TrackingAllocator::HostAccess;

void CheckingBackend::convolutionForward16(const ConvGeometry& g, std::int64_t outChannels, const std::uint16_t* x,
                                           std::int64_t n0, std::int64_t count, const std::uint16_t* w, float* y,
                                           GemmPrecision p)
{
    const std::int64_t C = g.channels, H = g.height, W = g.width, hw = g.planeSize(), k = g.kernel;
    need16(x, C * g.batch * hw, "convolutionForward16 x");
    need16(w, outChannels * C * k * k, "convolutionForward16 w");
    need(y, outChannels * count * hw, "convolutionForward16 y");
    if (!acceptConvolution16(BackendOp::convolution16, p, "convolutionForward16")) return;
    const HostAccess access(device_);
    // y[o][(n - n0) hw + i W + j] = the sum over c, a, b of w[o][c][a][b] x[c][n][i + a - pad][j + b - pad].
    for (std::int64_t o = 0; o < outChannels; ++o)
        for (std::int64_t n = n0; n < n0 + count; ++n)
            for (std::int64_t i = 0; i < H; ++i)
                for (std::int64_t j = 0; j < W; ++j) {
                    double sum = 0.0;
                    for (std::int64_t c = 0; c < C; ++c)
                        for (std::int64_t a = 0; a < k; ++a)
                            for (std::int64_t b = 0; b < k; ++b) {
                                const std::int64_t r = i + a - g.pad, s = j + b - g.pad;
                                if (r < 0 || r >= H || s < 0 || s >= W) continue;
                                sum += static_cast<double>(widenBits(p.compute, w[((o * C + c) * k + a) * k + b])) *
                                       widenBits(p.compute, x[(c * g.batch + n) * hw + r * W + s]);
                            }
                    y[o * count * hw + (n - n0) * hw + i * W + j] = roundDoubleTo(p.compute, sum);
                }
}

bool CheckingBackend::acceptConvolution16(BackendOp op, const GemmPrecision& p, const char* name)
{
    if (!supports(op, p)) {
        device_.report(std::string(name) + " called where supports() says no");
        return false;
    }
    ++convolution16Calls_;
    return true;
}

void CheckingBackend::convolutionBackwardData16(const ConvGeometry& g, std::int64_t outChannels,
                                                const std::uint16_t* dy, std::int64_t n0, std::int64_t count,
                                                const std::uint16_t* w, float* dx, GemmPrecision p)
{
    const std::int64_t C = g.channels, H = g.height, W = g.width, hw = g.planeSize(), k = g.kernel;
    need16(dy, outChannels * g.batch * hw, "convolutionBackwardData16 dy");
    need16(w, outChannels * C * k * k, "convolutionBackwardData16 w");
    need(dx, C * count * hw, "convolutionBackwardData16 dx");
    if (!acceptConvolution16(BackendOp::convolutionData16, p, "convolutionBackwardData16")) return;
    const HostAccess access(device_);
    // dx[c][(n - n0) hw + i W + j] = the sum over o, a, b of w[o][c][a][b] dy[o][n][i - a + pad][j - b + pad]
    // (the forward pass's y[o][r][s] took x[c][r + a - pad][s + b - pad]).
    for (std::int64_t c = 0; c < C; ++c)
        for (std::int64_t n = n0; n < n0 + count; ++n)
            for (std::int64_t i = 0; i < H; ++i)
                for (std::int64_t j = 0; j < W; ++j) {
                    double sum = 0.0;
                    for (std::int64_t o = 0; o < outChannels; ++o)
                        for (std::int64_t a = 0; a < k; ++a)
                            for (std::int64_t b = 0; b < k; ++b) {
                                const std::int64_t r = i - a + g.pad, s = j - b + g.pad;
                                if (r < 0 || r >= H || s < 0 || s >= W) continue;
                                sum += static_cast<double>(widenBits(p.compute, w[((o * C + c) * k + a) * k + b])) *
                                       widenBits(p.compute, dy[(o * g.batch + n) * hw + r * W + s]);
                            }
                    dx[c * count * hw + (n - n0) * hw + i * W + j] = roundDoubleTo(p.compute, sum);
                }
}

void CheckingBackend::convolutionBackwardFilter16(const ConvGeometry& g, std::int64_t outChannels,
                                                  const std::uint16_t* x, const std::uint16_t* dy, std::int64_t n0,
                                                  std::int64_t count, float beta, float* dw, GemmPrecision p)
{
    const std::int64_t C = g.channels, H = g.height, W = g.width, hw = g.planeSize(), k = g.kernel;
    need16(x, C * g.batch * hw, "convolutionBackwardFilter16 x");
    need16(dy, outChannels * g.batch * hw, "convolutionBackwardFilter16 dy");
    need(dw, outChannels * C * k * k, "convolutionBackwardFilter16 dw");
    if (!acceptConvolution16(BackendOp::convolutionFilter16, p, "convolutionBackwardFilter16")) return;
    const HostAccess access(device_);
    // dw[o][c][a][b] = beta dw + the sum over n, r, s of dy[o][n][r][s] x[c][n][r + a - pad][s + b - pad], in fp32.
    for (std::int64_t o = 0; o < outChannels; ++o)
        for (std::int64_t c = 0; c < C; ++c)
            for (std::int64_t a = 0; a < k; ++a)
                for (std::int64_t b = 0; b < k; ++b) {
                    double sum = 0.0;
                    for (std::int64_t n = n0; n < n0 + count; ++n)
                        for (std::int64_t r = 0; r < H; ++r)
                            for (std::int64_t s = 0; s < W; ++s) {
                                const std::int64_t u = r + a - g.pad, v = s + b - g.pad;
                                if (u < 0 || u >= H || v < 0 || v >= W) continue;
                                sum += static_cast<double>(widenBits(p.compute, dy[(o * g.batch + n) * hw + r * W + s])) *
                                       widenBits(p.compute, x[(c * g.batch + n) * hw + u * W + v]);
                            }
                    float& out = dw[((o * C + c) * k + a) * k + b];
                    out = (beta != 0.0f ? out : 0.0f) + static_cast<float>(sum);
                }
}

}  // namespace plab::testing
