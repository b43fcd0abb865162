// Tests the CPU backend's thread pool: every index of a loop runs exactly once over many
// back-to-back loops (a worker that woke late used to join a loop whose caller had already
// returned, and then read the next loop's counter with the old chunk size: indices were
// skipped or ran twice, and CPU runs were not reproducible); the first exception
// is rethrown; a loop too small to split runs on the caller.
// links: plab_backend_cpu plab_test_support
#include "backend/cpu/thread_pool.h"

#include <QTest>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

using plab::cpu::ThreadPool;

class TestThreadPool : public QObject {
    Q_OBJECT

private slots:
    // Short loops of changing sizes back to back: where a late worker meets the next loop
    // (reading one loop's chunk size and the next one's counter gives overlapping chunks).
    // Before the fix about 1 loop in 1,000 lost or repeated indices on 2 cores.
    void everyIndexOnceAcrossManyShortLoops()
    {
        ThreadPool pool(4);
        constexpr int kLoops = 60'000;
        constexpr std::int64_t kSizes[] = {4000, 7, 130};
        std::vector<std::atomic<int>> hits(4000);
        int wrongLoops = 0;
        for (int loop = 0; loop < kLoops; ++loop) {
            const std::int64_t n = kSizes[loop % 3];
            for (std::int64_t i = 0; i < n; ++i) hits[static_cast<std::size_t>(i)].store(0, std::memory_order_relaxed);
            pool.parallelFor(n, 1, [&hits](std::int64_t begin, std::int64_t end) {
                for (std::int64_t i = begin; i < end; ++i)
                    hits[static_cast<std::size_t>(i)].fetch_add(1, std::memory_order_relaxed);
            });
            for (std::int64_t i = 0; i < n; ++i)
                if (const int h = hits[static_cast<std::size_t>(i)].load(); h != 1) {
                    if (wrongLoops < 5)
                        qWarning("loop %d (n %lld): index %lld ran %d times", loop, static_cast<long long>(n),
                                 static_cast<long long>(i), h);
                    ++wrongLoops;
                    break;
                }
        }
        QCOMPARE(wrongLoops, 0);
    }

    void largeLoopCoversTheRangeOnce()
    {
        ThreadPool pool(3);
        constexpr std::int64_t kN = 1'000'003;
        std::vector<std::uint8_t> seen(kN, 0);
        std::atomic<std::int64_t> total{0};
        pool.parallelFor(kN, 1000, [&](std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin; i < end; ++i) ++seen[static_cast<std::size_t>(i)];
            total.fetch_add(end - begin);
        });
        QCOMPARE(total.load(), kN);
        QVERIFY(std::all_of(seen.begin(), seen.end(), [](std::uint8_t s) { return s == 1; }));
    }

    void firstExceptionIsRethrownAfterTheLoop()
    {
        ThreadPool pool(2);
        std::atomic<std::int64_t> done{0};
        QVERIFY_THROWS_EXCEPTION(std::runtime_error, pool.parallelFor(1000, 10, [&](std::int64_t begin, std::int64_t end) {
            done.fetch_add(end - begin);
            if (begin == 0) throw std::runtime_error("chunk 0");
        }));
        QCOMPARE(done.load(), std::int64_t(1000));   // the other chunks still ran: the loop drained
        pool.parallelFor(100, 10, [](std::int64_t, std::int64_t) {});   // and the pool still works
    }

    void smallLoopRunsOnTheCaller()
    {
        ThreadPool pool(4);
        const auto caller = std::this_thread::get_id();
        bool onCaller = false;
        pool.parallelFor(3, 2, [&](std::int64_t begin, std::int64_t end) {
            onCaller = begin == 0 && end == 3 && std::this_thread::get_id() == caller;
        });
        QVERIFY(onCaller);
    }
};

QTEST_GUILESS_MAIN(TestThreadPool)
#include "tst_thread_pool.moc"
