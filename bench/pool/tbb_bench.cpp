// bench/pool/tbb_bench.cpp: the oneTBB side of the pool benchmark.
//
// The rows of bench/pool/rows.h, written the way a oneTBB user would write them, in a
// process of their own: bench_pool (the C side) runs this program as a child with
// --machine-readable and reads its medians, so that oneTBB's threads and jschedd's never
// compete for the two cores.  Run alone, it prints the same figures for a human.
//
// How each row maps onto oneTBB (all in one tbb::task_arena of --threads slots, the same
// number of threads as jschedd's pool):
//   round_trip    task_arena::enqueue() from the main thread, which is outside the arena;
//                 the task sets a flag the main thread spins on.  Spinning without limit
//                 is oneTBB's best case: the worker, having just finished, is still in its
//                 short search for work when the next task comes.  With a bounded spin
//                 (20 us, then a futex, as jschedd's outside waiter does) the two settle
//                 into waking each other every time: 20-40 us per round trip here.
//   tasks         task_group::run() per task, then task_group::wait()
//   tasks_batch   oneTBB has no batch submission: the same code as `tasks`
//   fork_join     recursive task_group (run the left half, recurse on the right, wait)
//   parallel_for  tbb::parallel_for over blocked_range, default (auto) partitioner
//   blocking      task_group::run() per task; a waiting task holds its thread until the
//                 releaser fires (spin 20 us, then a futex): oneTBB cannot suspend a task,
//                 that is the point of the row
//   dag           tbb::flow::graph of continue_node<continue_msg>, built every run
// Rows 2-6 run inside task_arena::execute(), so the main thread is one of the arena's
// threads, as it is in any oneTBB program; the time of a run is taken inside execute().
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#include <oneapi/tbb/version.h>

#include "bench/pool/kernels.h"
#include "bench/pool/releaser.h"
#include "bench/pool/rows.h"

namespace {

struct Options {
	int runs = 5;
	bool quick = false;
	bool machine = false;
	int threads = 0;
};

// A one-shot flag a thread can wait on: spin for up to spin_ns, then sleep in a futex.
class Flag {
public:
	void set()
	{
		v_.store(1, std::memory_order_seq_cst);
		if (waiters_.load(std::memory_order_seq_cst))
			futex(FUTEX_WAKE_PRIVATE, INT32_MAX);
	}
	void wait(uint64_t spin_ns)
	{
		uint64_t until = rows_now_ns() + spin_ns;
		for (unsigned i = 1; !v_.load(std::memory_order_acquire); i++) {
			if (i % 64 == 0 && spin_ns != kSpinForever && rows_now_ns() > until)
				goto block;
			rows_cpu_relax();
		}
		return;
	block:
		waiters_.fetch_add(1, std::memory_order_seq_cst);
		while (!v_.load(std::memory_order_seq_cst))
			futex(FUTEX_WAIT_PRIVATE, 0);
		waiters_.fetch_sub(1, std::memory_order_seq_cst);
	}
	void reset() { v_.store(0, std::memory_order_relaxed); }

	static constexpr uint64_t kSpinForever = UINT64_MAX;
	// 20 us: as long as jschedd's pool spins before it blocks a waiting thread
	// (jd_pool_config.wait_spin_ns).
	static constexpr uint64_t kSpinDefault = 20000;

private:
	void futex(int op, int val)
	{
		syscall(SYS_futex, reinterpret_cast<uint32_t *>(&v_), op, val, nullptr, nullptr, 0);
	}
	std::atomic<uint32_t> v_{0};
	std::atomic<uint32_t> waiters_{0};
};

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word");

// The flags live as long as the process: the thread that sets a flag may still be inside
// set() (about to wake a waiter) when the waiter has already seen it and moved on.
Flag round_trip_flag;
Flag block_flags[BLOCK_BATCH];

double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

int scaled(int n, const Options &o)
{
	return o.quick ? std::max(1, n / QUICK_DIV) : n;
}

// Run `run` once untimed, then opt.runs times; each returns its own figure.
template <class F> double measure(const Options &opt, F run)
{
	run();
	std::vector<double> v;
	for (int i = 0; i < opt.runs; i++)
		v.push_back(run());
	return median(v);
}

// ---- the rows --------------------------------------------------------------------------

double round_trip(tbb::task_arena &arena, const Options &opt)
{
	int chunks = scaled(ROUND_TRIP_REPS, opt) / ROUND_TRIP_CHUNK;
	return measure(opt, [&] {
		Flag &flag = round_trip_flag;
		std::vector<double> v;
		for (int k = 0; k < chunks; k++) {
			uint64_t t0 = rows_now_ns();
			for (int i = 0; i < ROUND_TRIP_CHUNK; i++) {
				flag.reset();
				arena.enqueue([&flag] { flag.set(); });
				flag.wait(Flag::kSpinForever);
			}
			v.push_back((double)(rows_now_ns() - t0) / ROUND_TRIP_CHUNK / 1e3);
		}
		return median(v);
	});
}

double tasks(tbb::task_arena &arena, const Options &opt)
{
	int n = scaled(TASKS_N, opt);
	return measure(opt, [&] {
		std::atomic<int> ran{0};
		uint64_t dt = 0;
		arena.execute([&] {
			tbb::task_group tg;
			uint64_t t0 = rows_now_ns();
			for (int i = 0; i < n; i++)
				tg.run([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
			tg.wait();
			dt = rows_now_ns() - t0;
		});
		if (ran.load() != n)
			std::abort();
		return (double)dt / n;
	});
}

const uint32_t *fj_data;

uint64_t fj_sum(size_t lo, size_t hi)
{
	if (hi - lo <= FJ_LEAF)
		return kernel_sum(fj_data, lo, hi);
	size_t mid = lo + (hi - lo) / 2;
	uint64_t left = 0;
	tbb::task_group tg;
	tg.run([&] { left = fj_sum(lo, mid); });
	uint64_t right = fj_sum(mid, hi);
	tg.wait();
	return left + right;
}

double fork_join(tbb::task_arena &arena, const Options &opt)
{
	size_t n = (size_t)scaled(FJ_N, opt);
	int reps = scaled(FJ_REPS, opt);
	std::vector<uint32_t> data(n);
	if (fj_fill(data.data(), n) != fj_expected(n))
		std::abort();
	fj_data = data.data();
	return measure(opt, [&] {
		uint64_t dt = 0;
		arena.execute([&] {
			uint64_t t0 = rows_now_ns();
			for (int r = 0; r < reps; r++)
				if (fj_sum(0, n) != fj_expected(n))
					std::abort();
			dt = rows_now_ns() - t0;
		});
		return (double)dt / reps / 1e6;
	});
}

double parallel_for(tbb::task_arena &arena, const Options &opt)
{
	int n = PFOR_N;
	int reps = scaled(PFOR_REPS, opt);
	std::vector<double> out(n);
	return measure(opt, [&] {
		uint64_t dt = 0;
		arena.execute([&] {
			uint64_t t0 = rows_now_ns();
			for (int r = 0; r < reps; r++)
				tbb::parallel_for(tbb::blocked_range<int>(0, n),
						  [&](const tbb::blocked_range<int> &br) {
							  kernel_sqrt(out.data(), (size_t)br.begin(),
								      (size_t)br.end());
						  });
			dt = rows_now_ns() - t0;
		});
		if (out[n - 1] != std::sqrt((double)(n - 1)))
			std::abort();
		return (double)dt / reps / 1e6;
	});
}

void fire_flag(void *arg)
{
	static_cast<Flag *>(arg)->set();
}

double blocking(tbb::task_arena &arena, struct releaser *rel, int wait_us, const Options &opt)
{
	int batches = scaled(BLOCK_BATCHES, opt);
	return measure(opt, [&] {
		uint64_t dt = 0;
		arena.execute([&] {
			uint64_t t0 = rows_now_ns();
			for (int b = 0; b < batches; b++) {
				tbb::task_group tg;
				for (int i = 0; i < BLOCK_BATCH; i++) {
					if (i % BLOCK_EVERY == 0) {
						Flag *f = &block_flags[i];
						f->reset();
						tg.run([f, rel, wait_us] {
							uint64_t when = rows_now_ns() + (uint64_t)wait_us * 1000;
							if (releaser_after(rel, when, fire_flag, f) != 0)
								std::abort();
							f->wait(Flag::kSpinDefault);
						});
					} else {
						tg.run([] { busy_work(BLOCK_WORK_NS); });
					}
				}
				tg.wait();
			}
			dt = rows_now_ns() - t0;
		});
		return (double)dt / 1e6;
	});
}

// One DAG, built, run and waited; `ran` counts the nodes.
void dag_once(std::atomic<int> &ran)
{
	namespace flow = tbb::flow;
	flow::graph g;
	auto body = [&ran](const flow::continue_msg &) {
		ran.fetch_add(1, std::memory_order_relaxed);
	};
	flow::continue_node<flow::continue_msg> a(g, body), b(g, body), c(g, body), d(g, body),
		e(g, body), f(g, body);
	flow::make_edge(a, b);
	flow::make_edge(a, c);
	flow::make_edge(a, d);
	flow::make_edge(b, e);
	flow::make_edge(c, e);
	flow::make_edge(d, e);
	flow::make_edge(e, f);
	a.try_put(flow::continue_msg());
	g.wait_for_all();
}

double dag(tbb::task_arena &arena, const Options &opt)
{
	int chunks = scaled(DAG_REPS, opt) / DAG_CHUNK;
	return measure(opt, [&] {
		std::atomic<int> ran{0};
		std::vector<double> v;
		arena.execute([&] {
			for (int k = 0; k < chunks; k++) {
				uint64_t t0 = rows_now_ns();
				for (int r = 0; r < DAG_CHUNK; r++)
					dag_once(ran);
				v.push_back((double)(rows_now_ns() - t0) / DAG_CHUNK / 1e3);
			}
		});
		if (ran.load() != 6 * DAG_CHUNK * chunks)
			std::abort();
		return median(v);
	});
}

// ---- main ------------------------------------------------------------------------------

void usage(FILE *out)
{
	std::fprintf(out,
		     "usage: tbb_bench [--runs N] [--quick] [--threads N] [--machine-readable]\n"
		     "  the oneTBB rows of bench/pool (see bench/pool/rows.h); normally run by\n"
		     "  bench_pool, which reads the --machine-readable lines \"key value unit\"\n");
}

bool parse(int argc, char **argv, Options &o)
{
	for (int i = 1; i < argc; i++) {
		std::string a = argv[i];
		if (a == "--quick") {
			o.quick = true;
		} else if (a == "--machine-readable") {
			o.machine = true;
		} else if ((a == "--runs" || a == "--threads") && i + 1 < argc) {
			char *end;
			long v = std::strtol(argv[++i], &end, 10);
			if (*end || v < 1 || v > 100000)
				return false;
			(a == "--runs" ? o.runs : o.threads) = (int)v;
		} else if (a == "--help" || a == "-h") {
			usage(stdout);
			std::exit(0);
		} else {
			return false;
		}
	}
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	Options opt;
	if (!parse(argc, argv, opt)) {
		usage(stderr);
		return 2;
	}
	if (opt.threads == 0)
		opt.threads = (int)std::max(1u, std::thread::hardware_concurrency());

	tbb::task_arena arena(opt.threads);
	arena.initialize();
	struct releaser *rel = releaser_start();
	if (!rel) {
		std::perror("tbb_bench: releaser");
		return 1;
	}

	const char *fmt = opt.machine ? "%s %.6g %s\n" : "  %-16s %12.3f %s\n";
	auto out = [&](const char *key, double v, const char *unit) {
		std::printf(fmt, key, v, unit);
		std::fflush(stdout);
	};
	std::printf(opt.machine ? "version oneTBB %d.%d\nthreads %d\n"
				: "oneTBB %d.%d, %d threads\n",
		    TBB_VERSION_MAJOR, TBB_VERSION_MINOR, opt.threads);

	out("round_trip", round_trip(arena, opt), "us");
	double t = tasks(arena, opt);
	out("tasks", t, "ns/task");
	out("tasks_batch", t, "ns/task");
	out("fork_join", fork_join(arena, opt), "ms");
	out("parallel_for", parallel_for(arena, opt), "ms");
	const int waits[BLOCK_NWAITS] = BLOCK_WAITS_US;
	uint64_t fired, mean, max; // the releaser's lateness over each blocking row
	for (int w : waits) {
		std::string key = "blocking_" + std::to_string(w);
		releaser_lateness(rel, &fired, &mean, &max);
		out(key.c_str(), blocking(arena, rel, w, opt), "ms");
		releaser_lateness(rel, &fired, &mean, &max);
		out(("late_mean_" + key).c_str(), (double)mean / 1e3, "us");
		out(("late_max_" + key).c_str(), (double)max / 1e3, "us");
	}
	out("dag", dag(arena, opt), "us");

	releaser_stop(rel);
	return 0;
}
