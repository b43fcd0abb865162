// Gradient checks shared by the layer suites: a weighted sum of a layer's output as the loss,
// and central differences of it against an analytic gradient.
#pragma once

#include "tensor/tensor.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <functional>

namespace plab::testing {

// L = sum(r * forward(x)) in double, for a fixed r.
inline double weightedSum(const Tensor& out, const Tensor& r)
{
    double s = 0;
    for (std::int64_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * r[i];
    return s;
}

// Central differences of L with respect to each element of `target` (perturbed in place),
// against `analytic`; relative to the largest analytic entry.
inline void checkGradient(Tensor& target, const Tensor& analytic, const std::function<double()>& loss, float eps,
                          double tol, const char* what)
{
    double maxAbs = 1e-6;
    for (std::int64_t i = 0; i < analytic.size(); ++i) maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(analytic[i])));
    for (std::int64_t i = 0; i < target.size(); ++i) {
        const float saved = target[i];
        target[i] = saved + eps;
        const double up = loss();
        target[i] = saved - eps;
        const double down = loss();
        target[i] = saved;
        const double numeric = (up - down) / (2.0 * static_cast<double>(eps));
        QVERIFY2(std::fabs(numeric - analytic[i]) <= tol * maxAbs,
                 qPrintable(QString("%1[%2]: numeric %3, analytic %4").arg(what).arg(i).arg(numeric).arg(analytic[i])));
    }
}

}  // namespace plab::testing
