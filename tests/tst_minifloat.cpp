// Tests the formats below 16 bits (issue 15): every pattern of E4M3, E5M2, FP6 E2M3,
// FP6 E3M2 and FP4 E2M1 decoded against the definitions (OFP8 1.0, OCP MX 1.0), and the
// rounding of fp32 values against a slow reference that picks the nearest representable
// value from the list of all of them (ties to the even pattern), written apart from the
// code under test; every tie and boundary named by the issue (448 and 464 in E4M3,
// 61440 in E5M2, saturation, the smallest subnormal and half of it); OCP MX blocks and
// NVFP4 blocks against references that round by search.
// links: plab_numerics plab_test_support
#include "numerics/minifloat.h"

#include "test_support.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <vector>

using namespace plab;
Q_DECLARE_METATYPE(plab::MiniFormat)

namespace {

struct Definition {   // from the specifications' tables, not from minifloat.cpp
    int e, m, bias;
    bool ieeeSpecials;   // E5M2: exponent all ones is inf (mantissa 0) or NaN
    bool oneNaN;         // E4M3: only S.1111.111 is NaN
};

Definition definition(MiniFormat f)
{
    switch (f) {
    case MiniFormat::e4m3: return {4, 3, 7, false, true};
    case MiniFormat::e5m2: return {5, 2, 15, true, false};
    case MiniFormat::e2m3: return {2, 3, 1, false, false};
    case MiniFormat::e3m2: return {3, 2, 3, false, false};
    case MiniFormat::e2m1: return {2, 1, 1, false, false};
    }
    return {};
}

// (-1)^S * 2^(E - bias) * (1 + M / 2^m), or 2^(1 - bias) * (M / 2^m) when E = 0.
double referenceValue(MiniFormat f, unsigned bits)
{
    const Definition d = definition(f);
    const unsigned S = (bits >> (d.e + d.m)) & 1u, E = (bits >> d.m) & ((1u << d.e) - 1u), M = bits & ((1u << d.m) - 1u);
    const unsigned top = (1u << d.e) - 1u;
    double v = 0;
    if (d.ieeeSpecials && E == top) v = M == 0 ? INFINITY : NAN;
    else if (d.oneNaN && E == top && M == (1u << d.m) - 1u) v = NAN;
    else if (E == 0) v = std::pow(2.0, 1 - d.bias) * (M / std::pow(2.0, d.m));
    else v = std::pow(2.0, int(E) - d.bias) * (1 + M / std::pow(2.0, d.m));
    return S ? -v : v;
}

struct Candidate {
    double value;
    bool even;       // its mantissa's last bit is 0
    bool overflow;   // the value one step above the largest finite: past the range
};

// The positive finite values, and the first value above the largest finite (in a format
// with the same precision and one more binade), where rounding past the range lands.
std::vector<Candidate> candidates(MiniFormat f)
{
    const Definition d = definition(f);
    std::vector<Candidate> out;
    double largest = 0;
    for (unsigned b = 0; b < (1u << (d.e + d.m)); ++b) {
        const double v = referenceValue(f, b);
        if (!std::isfinite(v)) continue;
        out.push_back({v, (b & 1u) == 0, false});
        largest = std::max(largest, v);
    }
    int e = 0;
    std::frexp(largest, &e);
    const double next = largest + std::ldexp(1.0, e - 1 - d.m);
    int ne = 0;
    const double fraction = std::frexp(next, &ne);   // a power of two has mantissa 0 (even)
    const auto mantissa = static_cast<long long>(std::ldexp(fraction, d.m + 1));
    out.push_back({next, (mantissa & 1) == 0, true});
    return out;
}

// Round-to-nearest-even by search; nullopt: past the range.
std::optional<double> referenceRound(const std::vector<Candidate>& cands, double a)
{
    if (a >= cands.back().value) return std::nullopt;   // at or past the step above the range
    const Candidate* best = nullptr;
    for (const Candidate& c : cands) {
        if (!best) {
            best = &c;
            continue;
        }
        const double dc = std::fabs(c.value - a), db = std::fabs(best->value - a);
        if (dc < db || (dc == db && c.even && !best->even)) best = &c;
    }
    if (best->overflow) return std::nullopt;
    return best->value;
}

constexpr MiniFormat kAll[] = {MiniFormat::e4m3, MiniFormat::e5m2, MiniFormat::e2m3, MiniFormat::e3m2, MiniFormat::e2m1};

}  // namespace

class TestMinifloat : public QObject {
    Q_OBJECT

private slots:
    void everyPatternDecodesAsDefined()
    {
        for (MiniFormat f : kAll) {
            const MiniFormatInfo& i = miniFormatInfo(f);
            QCOMPARE(i.bits(), definition(f).e + definition(f).m + 1);
            double largest = 0;
            for (unsigned b = 0; b < (1u << i.bits()); ++b) {
                const double want = referenceValue(f, b);
                const float got = decodeMini(f, static_cast<std::uint8_t>(b));
                if (std::isnan(want)) {
                    QVERIFY2(std::isnan(got), qPrintable(QString("%1 0x%2").arg(i.name.data()).arg(b, 0, 16)));
                    continue;
                }
                QCOMPARE(double(got), want);
                QCOMPARE(std::signbit(got), std::signbit(want));
                if (std::isfinite(want)) largest = std::max(largest, want);
                // Every pattern but NaN comes back from its own value (saturating or not).
                QCOMPARE(encodeMini(f, got, Overflow::nonFinite), std::optional<std::uint8_t>(std::uint8_t(b)));
            }
            QCOMPARE(largest, i.maxFinite);
        }
        // The table of the issue.
        QCOMPARE(miniFormatInfo(MiniFormat::e4m3).maxFinite, 448.0);
        QCOMPARE(miniFormatInfo(MiniFormat::e5m2).maxFinite, 57344.0);
        QCOMPARE(decodeMini(MiniFormat::e4m3, 0x01), std::ldexp(1.0f, -9));
        QCOMPARE(decodeMini(MiniFormat::e5m2, 0x01), std::ldexp(1.0f, -16));
        QVERIFY(std::isinf(decodeMini(MiniFormat::e5m2, 0x7c)) && std::isnan(decodeMini(MiniFormat::e4m3, 0x7f)));
        QVERIFY(!std::isnan(decodeMini(MiniFormat::e4m3, 0x7e)));   // 448
    }

    // Every pattern's value, the midpoints between neighbours, one fp32 step either side of
    // them, and 20,000 random magnitudes over the whole range: the reference's choice.
    void roundingMatchesTheReference()
    {
        testing::SplitMix64 rng(15);
        for (MiniFormat f : kAll) {
            const MiniFormatInfo& i = miniFormatInfo(f);
            const auto cands = candidates(f);
            std::vector<double> probes;
            for (std::size_t a = 0; a < cands.size(); ++a) {
                probes.push_back(cands[a].value);
                for (std::size_t b = 0; b < cands.size(); ++b)
                    if (cands[b].value > cands[a].value) {
                        double next = cands[b].value;
                        for (const auto& c : cands)
                            if (c.value > cands[a].value && c.value < next) next = c.value;
                        const float mid = static_cast<float>((cands[a].value + next) / 2);
                        probes.push_back(mid);
                        probes.push_back(std::nextafter(mid, 0.0f));
                        probes.push_back(std::nextafter(mid, INFINITY));
                        break;
                    }
            }
            // Binades from two below the smallest subnormal to two above the largest finite.
            const int span = static_cast<int>(std::log2(i.maxFinite)) - i.minSubnormalLog2 + 4;
            for (int k = 0; k < 20000; ++k)
                probes.push_back(static_cast<float>(
                    std::ldexp(1.0 + rng.uniform(), i.minSubnormalLog2 - 2 + static_cast<int>(rng.uniform() * span))));
            probes.push_back(1e30);
            for (double a : probes) {
                for (const double sign : {1.0, -1.0}) {
                    const float x = static_cast<float>(sign * a);
                    const auto want = referenceRound(cands, a);
                    for (Overflow o : {Overflow::saturate, Overflow::nonFinite}) {
                        const float got = roundToMini(f, x, o);
                        const QString where = QString("%1 %2 %3").arg(i.name.data()).arg(double(x), 0, 'g', 9)
                                                  .arg(o == Overflow::saturate ? "saturating" : "non-saturating");
                        if (want) {
                            QVERIFY2(double(got) == sign * *want && std::signbit(got) == std::signbit(x), qPrintable(where));
                        } else if (o == Overflow::saturate || (!i.hasInf && !i.hasNaN)) {
                            QVERIFY2(double(got) == sign * i.maxFinite, qPrintable(where));
                        } else if (i.hasInf) {
                            QVERIFY2(std::isinf(got) && std::signbit(got) == std::signbit(x), qPrintable(where));
                        } else {
                            QVERIFY2(std::isnan(got), qPrintable(where));
                        }
                    }
                }
            }
        }
    }

    void tiesAndBoundaries()
    {
        const auto e4m3 = [](float x, Overflow o = Overflow::nonFinite) { return roundToMini(MiniFormat::e4m3, x, o); };
        const auto e5m2 = [](float x, Overflow o = Overflow::nonFinite) { return roundToMini(MiniFormat::e5m2, x, o); };
        QCOMPARE(e4m3(448.0f), 448.0f);
        QCOMPARE(e4m3(464.0f), 448.0f);                              // the tie goes to the even 1.110
        QVERIFY(std::isnan(e4m3(std::nextafter(464.0f, 1e9f))));     // past it: NaN (no inf in E4M3)
        QCOMPARE(e4m3(std::nextafter(464.0f, 1e9f), Overflow::saturate), 448.0f);
        QCOMPARE(e4m3(INFINITY, Overflow::saturate), 448.0f);
        QVERIFY(std::isnan(e4m3(-INFINITY)));
        QCOMPARE(e4m3(std::ldexp(1.0f, -9)), std::ldexp(1.0f, -9));   // smallest subnormal
        QCOMPARE(e4m3(std::ldexp(1.0f, -10)), 0.0f);                  // half of it: tie to even 0
        QCOMPARE(e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)), std::ldexp(1.0f, -9));
        QVERIFY(std::signbit(e4m3(-std::ldexp(1.0f, -11))));          // -0 keeps its sign
        QCOMPARE(e5m2(57344.0f), 57344.0f);
        QVERIFY(std::isinf(e5m2(61440.0f)));                          // the tie goes up to the even 2^16: inf
        QCOMPARE(e5m2(std::nextafter(61440.0f, 0.0f)), 57344.0f);
        QCOMPARE(e5m2(61440.0f, Overflow::saturate), 57344.0f);
        QCOMPARE(e5m2(-INFINITY), -INFINITY);
        QCOMPARE(e5m2(std::ldexp(1.0f, -17)), 0.0f);
        QCOMPARE(roundToMini(MiniFormat::e2m1, 5.0f, Overflow::nonFinite), 4.0f);   // 4 and 6: tie to even 4 (1.0 x 2^2)
        QCOMPARE(roundToMini(MiniFormat::e2m1, 100.0f, Overflow::nonFinite), 6.0f);  // FP4 always saturates
        QCOMPARE(roundToMini(MiniFormat::e2m1, 0.25f, Overflow::nonFinite), 0.0f);   // half the smallest subnormal
        QVERIFY(!encodeMini(MiniFormat::e2m3, NAN, Overflow::saturate));             // FP6 holds no NaN
        QCOMPARE(encodeMini(MiniFormat::e4m3, -NAN, Overflow::saturate), std::optional<std::uint8_t>(0xff));
    }

    // MX v1.0 (section 6.3): random blocks of 32 (magnitudes over 2^-30..2^30, some zeros,
    // some blocks of zeros) against a reference: the shared exponent found by halving and
    // doubling in double, emax from the specification's table, each element the nearest
    // value by search (ties to even), saturating.
    void mxBlocksMatchTheReference()
    {
        const std::map<MiniFormat, int> emax{{MiniFormat::e4m3, 8}, {MiniFormat::e5m2, 15}, {MiniFormat::e2m3, 2},
                                             {MiniFormat::e3m2, 4}, {MiniFormat::e2m1, 2}};
        // The largest finite values (OFP8 and MX v1.0 tables).
        const std::map<MiniFormat, double> largestFinite{{MiniFormat::e4m3, 448.0}, {MiniFormat::e5m2, 57344.0},
                                                         {MiniFormat::e2m3, 7.5}, {MiniFormat::e3m2, 28.0},
                                                         {MiniFormat::e2m1, 6.0}};
        testing::SplitMix64 rng(32);
        for (MiniFormat f : kAll) {
            QCOMPARE(mxElementEmax(f), emax.at(f));
            const auto cands = candidates(f);
            for (int trial = 0; trial < 300; ++trial) {
                std::vector<float> v(kMxBlockSize);
                const int centre = -30 + static_cast<int>(rng.uniform() * 60);
                for (auto& x : v) {
                    const double r = rng.uniform();
                    x = r < 0.1 || trial % 50 == 0 ? 0.0f
                                                    : static_cast<float>((rng.uniform() < 0.5 ? -1 : 1) *
                                                                         std::ldexp(1.0 + rng.uniform(), centre - int(r * 12)));
                }
                const MxBlock b = mxQuantize(f, v.data(), v.size());
                double largest = 0;
                for (float x : v) largest = std::max(largest, std::fabs(double(x)));
                int floorLog2 = 0;
                if (largest > 0) {
                    double p = 1.0;
                    while (p > largest) p /= 2, --floorLog2;
                    while (p * 2 <= largest) p *= 2, ++floorLog2;
                }
                const int want = largest > 0 ? std::clamp(floorLog2 - emax.at(f), -127, 127) : -127;
                QCOMPARE(b.scaleExponent, want);
                QVERIFY(!b.nanScale);
                QCOMPARE(int(b.scaleBits()), want + 127);
                for (std::size_t i = 0; i < v.size(); ++i) {
                    const double scaled = std::ldexp(std::fabs(double(v[i])), -want);
                    const auto r = referenceRound(cands, scaled);
                    const double element = (std::signbit(v[i]) ? -1 : 1) * (r ? *r : miniFormatInfo(f).maxFinite);
                    QCOMPARE(double(b.elements[i]), element);
                    QCOMPARE(double(b.value(i)), std::ldexp(element, want));
                }
                // Rounded up (Transformer Engine's MXFP8, issue 38): the smallest exponent whose
                // scale keeps the largest value within the element's largest finite, taken here
                // from the specifications' table; then no element saturates.
                const MxBlock c = mxQuantize(f, v.data(), v.size(), MxScaleRounding::ceil);
                int wantUp = largest > 0 ? floorLog2 - emax.at(f) : -127;
                while (largest > 0 && std::ldexp(largest, -wantUp) > largestFinite.at(f)) ++wantUp;
                wantUp = std::clamp(wantUp, -127, 127);
                QCOMPARE(c.scaleExponent, wantUp);
                QVERIFY(c.scaleExponent == want || c.scaleExponent == want + 1);
                for (std::size_t i = 0; i < v.size(); ++i) {
                    const double scaled = std::ldexp(std::fabs(double(v[i])), -wantUp);
                    QVERIFY(scaled <= largestFinite.at(f));
                    const auto r = referenceRound(cands, scaled);
                    QVERIFY(r.has_value());   // never past the largest finite: no saturation
                    QCOMPARE(double(c.elements[i]), (std::signbit(v[i]) ? -1 : 1) * *r);
                }
            }
        }
        // A NaN or an infinity makes the scale NaN (E8M0 0xff) and every element NaN.
        std::vector<float> v(8, 1.0f);
        v[3] = INFINITY;
        const MxBlock b = mxQuantize(MiniFormat::e4m3, v.data(), v.size());
        QVERIFY(b.nanScale && b.scaleBits() == 0xff && std::isnan(b.value(0)));
        // The largest element of a block lands in [2^emax, 2^(emax+1)): above E4M3's 448 it saturates.
        const float big[2] = {500.0f, 1.0f};   // floor(log2 500) = 8: X = 1, 500 -> 448
        const MxBlock s = mxQuantize(MiniFormat::e4m3, big, 2);
        QCOMPARE(s.scaleExponent, 0);
        QCOMPARE(s.elements[0], 448.0f);
        // Rounded up, 500 takes X = 2: 250 rounds to E4M3's 256 (240 and 256 are neighbours), 512.
        const MxBlock up = mxQuantize(MiniFormat::e4m3, big, 2, MxScaleRounding::ceil);
        QCOMPARE(up.scaleExponent, 1);
        QCOMPARE(up.elements[0], 256.0f);
        QCOMPARE(up.value(0), 512.0f);
        // 448 itself fits: the same exponent either way.
        const float fits[1] = {448.0f};
        QCOMPARE(mxQuantize(MiniFormat::e4m3, fits, 1, MxScaleRounding::ceil).scaleExponent, 0);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, mxQuantize(MiniFormat::e4m3, std::vector<float>(33).data(), 33));
    }

    // NVFP4: random blocks of 16 of tensors whose amax is up to 2^24 times the block's,
    // against a reference that follows Transformer Engine's fp32 steps with the roundings
    // done by search over every E4M3 and E2M1 value (ties to even, saturating); cases worked
    // by hand; the tensor scale's special cases; NaN and infinite blocks.
    void nvfp4BlocksMatchTheReference()
    {
        const auto e4m3 = candidates(MiniFormat::e4m3);
        const auto e2m1 = candidates(MiniFormat::e2m1);
        auto nearest = [](const std::vector<Candidate>& cands, double a, double largest) {
            const auto r = referenceRound(cands, a);
            return r ? *r : largest;
        };
        testing::SplitMix64 rng(16);
        int zeroScales = 0, saturations = 0;
        for (int trial = 0; trial < 3000; ++trial) {
            std::vector<float> v(kNvfp4BlockSize);
            const int centre = -20 + static_cast<int>(rng.uniform() * 40);
            float largest = 0.0f;
            for (auto& x : v) {
                const double r = rng.uniform();
                x = r < 0.1 ? 0.0f
                            : static_cast<float>((rng.uniform() < 0.5 ? -1 : 1) *
                                                 std::ldexp(1.0 + rng.uniform(), centre - int(r * 6)));
                largest = std::max(largest, std::fabs(x));
            }
            const float tensorAmax = trial % 7 == 0 ? largest : largest * static_cast<float>(std::exp2(rng.uniform() * 24));
            const float sEnc = nvfp4TensorScale(tensorAmax);
            if (largest > 0.0f) QVERIFY(std::fabs(double(sEnc) - 2688.0 / tensorAmax) <= std::ldexp(2688.0 / tensorAmax, -24));
            const Nvfp4Block b = nvfp4Quantize(v.data(), v.size(), sEnc);
            QVERIFY(!b.nanScale);
            const float wanted = largest * (sEnc * (1.0f / 6.0f));   // TE's order of the fp32 steps
            const double sB = nearest(e4m3, wanted, 448.0);
            QCOMPARE(double(b.blockScale), sB);
            QCOMPARE(double(decodeMini(MiniFormat::e4m3, b.scaleBits)), sB);
            zeroScales += sB == 0.0;
            const float elementScale = std::min(1.0f / (static_cast<float>(sB) * (1.0f / sEnc)),
                                                std::numeric_limits<float>::max());
            for (std::size_t i = 0; i < v.size(); ++i) {
                const double a = std::fabs(double(v[i] * elementScale));
                const double p = sB == 0.0 ? 0.0 : (std::signbit(v[i]) ? -1 : 1) * nearest(e2m1, a, 6.0);
                saturations += sB != 0.0 && a > 6.0;
                QCOMPARE(double(b.elements[i]), p);
                QCOMPARE(b.value(i), static_cast<float>(p * sB / sEnc));   // p * sB is exact in double
            }
        }
        QVERIFY(zeroScales > 0 && saturations > 0);   // both edges were reached

        // By hand. A block that holds the tensor's amax gets S_b = 448 (0x7e): 6 0.3 1 -2.5 of a
        // tensor of amax 6 (S_enc = 448) are 6, 0.5, 1 and -2 (2.5 ties to the even 2).
        const float own[4] = {6.0f, 0.3f, 1.0f, -2.5f};
        const Nvfp4Block a = nvfp4Quantize(own, 4, nvfp4TensorScale(6.0f));
        QCOMPARE(a.tensorScale, 448.0f);
        QCOMPARE(int(a.scaleBits), 0x7e);
        QCOMPARE(a.elements, (std::vector<float>{6.0f, 0.5f, 1.0f, -2.0f}));
        QCOMPARE(a.value(0), 6.0f);
        // 0.001 and 0.0002 of a tensor of amax 100: S_enc = 26.88; 0.001 * 26.88 / 6 = 0.00448
        // is E4M3 subnormal 2 x 2^-9 = 0.00390625 (0x02), rounded down, so 0.001 * 26.88 /
        // 0.00390625 = 6.88 saturates to 6; 0.0002 gives 1.376 -> 1.5.
        const float small[2] = {0.001f, 0.0002f};
        const Nvfp4Block c = nvfp4Quantize(small, 2, nvfp4TensorScale(100.0f));
        QCOMPARE(int(c.scaleBits), 0x02);
        QCOMPARE(c.elements, (std::vector<float>{6.0f, 1.5f}));
        // Of a tensor of amax 2688 (S_enc = 1), a block of amax 0.001: 0.001 / 6 is below half
        // of E4M3's smallest subnormal 2^-9, so S_b = 0 and the block is lost.
        const float lost[2] = {0.001f, -0.0005f};
        const Nvfp4Block d = nvfp4Quantize(lost, 2, nvfp4TensorScale(2688.0f));
        QCOMPARE(d.tensorScale, 1.0f);
        QCOMPARE(d.blockScale, 0.0f);
        QCOMPARE(d.value(0), 0.0f);
        QCOMPARE(d.value(1), 0.0f);
        // The tensor scale: 1 for a tensor that tells nothing, fp32's largest where 2688 / amax overflows.
        QCOMPARE(nvfp4TensorScale(0.0f), 1.0f);
        QCOMPARE(nvfp4TensorScale(INFINITY), 1.0f);
        QCOMPARE(nvfp4TensorScale(std::numeric_limits<float>::quiet_NaN()), 1.0f);
        QCOMPARE(nvfp4TensorScale(1e-38f), std::numeric_limits<float>::max());
        // A NaN or an infinity: E4M3's NaN as the block scale, every value NaN.
        const float bad[3] = {1.0f, -INFINITY, 2.0f};
        const Nvfp4Block e = nvfp4Quantize(bad, 3, 1.0f);
        QVERIFY(e.nanScale && e.scaleBits == 0x7f && std::isnan(e.value(0)) && std::isnan(e.decodeScale()));
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument, nvfp4Quantize(std::vector<float>(17).data(), 17, 1.0f));
    }

    void names()
    {
        for (MiniFormat f : kAll) QCOMPARE(parseMiniFormat(miniFormatInfo(f).name), std::optional<MiniFormat>(f));
        QVERIFY(!parseMiniFormat("fp8"));
    }
};

QTEST_GUILESS_MAIN(TestMinifloat)
#include "tst_minifloat.moc"
