/* tests/arch/test_ctx.c: the context switch of arch/ctx.h, whichever implementation this
 * build links (x86-64 or AArch64 assembly, or the ucontext fallback).
 *
 * What a switch promises, each checked by a test below: fn(arg) runs with its arg; every
 * callee-saved register survives a switch on both sides (loaded with known patterns by
 * tests/arch/probe.S, which C cannot do); the FP control state (rounding mode and
 * exception masks; x87 CW and MXCSR, or FPCR) is per context and a new context inherits
 * its creator's; the stack is 16-byte aligned at fiber entry for any stack size; a
 * million switches keep an exact count; contexts in a ring each keep their own stack;
 * a context may be resumed on another thread; contexts can be made again on the same
 * stack; and a fn that returns aborts with a message instead of running off its stack.
 *
 * Every loop is bounded by a count; nothing here depends on timing.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fenv.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arch/ctx.h"

#if defined(__x86_64__) || defined(__aarch64__)
#define HAVE_PROBES 1
void probe_switch(struct jd_ctx *from, struct jd_ctx *to, const uint64_t *in, uint64_t *out);
uintptr_t probe_sp(void);
#endif

#if defined(__x86_64__)
#define NREGS 6 /* rbx, rbp, r12-r15 */
#elif defined(__aarch64__)
#define NREGS 19 /* x19-x29, d8-d15 */
#else
#define NREGS 1
#endif

enum { STACK_SIZE = 64 * 1024 };

/* Under ASan, exercise the fake stacks that jd_ctx_switch hands over on every switch
 * (detect_stack_use_after_return moves locals off the machine stack). */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_stack_use_after_return=1";
}
#endif

/* A stack from mmap, as the pool gets them (page-aligned, not touched before use). */
static void *stack_new(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static void stack_free(void *p, size_t size)
{
	assert_int_equal(munmap(p, size), 0);
}

/* ---- fn(arg) -------------------------------------------------------------------- */

struct simple {
	struct jd_ctx main, fiber;
	int seen;
	void *arg_seen;
};

static void simple_fn(void *arg)
{
	struct simple *s = arg;

	s->arg_seen = arg;
	s->seen++;
	jd_ctx_switch_final(&s->fiber, &s->main);
}

static void test_fn_receives_arg(void **state)
{
	(void)state;
	struct simple s = { .seen = 0 };
	void *stack = stack_new(STACK_SIZE);

	jd_ctx_init_thread(&s.main);
	jd_ctx_make(&s.fiber, stack, STACK_SIZE, simple_fn, &s);
	jd_ctx_switch(&s.main, &s.fiber);
	assert_int_equal(s.seen, 1);
	assert_ptr_equal(s.arg_seen, &s);
	jd_ctx_destroy(&s.fiber);
	jd_ctx_destroy(&s.main);
	stack_free(stack, STACK_SIZE);
}

static void test_name(void **state)
{
	(void)state;
	const char *n = jd_ctx_name();

#if defined(JD_CTX_UCONTEXT)
	assert_string_equal(n, "ucontext");
#elif defined(__x86_64__)
	assert_string_equal(n, "x86_64");
#elif defined(__aarch64__)
	assert_string_equal(n, "aarch64");
#else
	assert_string_equal(n, "ucontext");
#endif
}

/* ---- callee-saved registers ------------------------------------------------------ */

#ifdef HAVE_PROBES
struct regs {
	struct jd_ctx main, fiber;
	int rounds;
	int fiber_checked;	/* switches back into the fiber whose registers were checked */
	int fiber_bad;		/* ... and found changed */
};

static void pattern(uint64_t *v, uint64_t seed)
{
	for (int i = 0; i < NREGS; i++)
		v[i] = seed * 0x9e3779b97f4a7c15u + (uint64_t)i * 0x0101010101010101u;
}

static void regs_fn(void *arg)
{
	struct regs *r = arg;

	uint64_t in[NREGS], out[NREGS];

	for (int i = 0; i < r->rounds; i++) {
		pattern(in, 1000 + (uint64_t)i);
		memset(out, 0, sizeof(out));
		probe_switch(&r->fiber, &r->main, in, out);
		r->fiber_checked++;
		if (memcmp(in, out, sizeof(in)) != 0)
			r->fiber_bad++;
	}
	jd_ctx_switch_final(&r->fiber, &r->main);
}
#endif

static void test_callee_saved_registers(void **state)
{
	(void)state;
#ifdef HAVE_PROBES
	struct regs r = { .rounds = 8 };
	uint64_t in[NREGS], out[NREGS];
	void *stack = stack_new(STACK_SIZE);

	jd_ctx_init_thread(&r.main);
	jd_ctx_make(&r.fiber, stack, STACK_SIZE, regs_fn, &r);
	for (int i = 0; i <= r.rounds; i++) {
		/* The thread loads its own pattern, switches; the fiber loads a different
		 * one before switching back: each side must get its own values back. */
		pattern(in, 1 + (uint64_t)i);
		memset(out, 0, sizeof(out));
		probe_switch(&r.main, &r.fiber, in, out);
		assert_memory_equal(in, out, sizeof(in));
		assert_int_equal(r.fiber_checked, i);
	}
	assert_int_equal(r.fiber_bad, 0);
	jd_ctx_destroy(&r.fiber);
	jd_ctx_destroy(&r.main);
	stack_free(stack, STACK_SIZE);
#else
	fprintf(stderr, "skipped: no register probe for this CPU (x86-64 and AArch64 have one)\n");
	skip();
#endif
}

/* ---- floating-point control state ----------------------------------------------- */

/* The whole FP control state, read straight from the registers. */
struct fpctl {
	uint64_t a, b;
};

static struct fpctl fpctl_get(void)
{
	struct fpctl f = { 0, 0 };
#if defined(__x86_64__)
	uint32_t mxcsr;
	uint16_t cw;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	f.a = mxcsr & 0xffc0u; /* control bits only: the low 6 are sticky status flags */
	f.b = cw;
#elif defined(__aarch64__)
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	f.a = fpcr;
#endif
	f.b = f.b * 16 + (uint64_t)fegetround();
	return f;
}

/* Rounding mode `mode` for SSE and x87 (fesetround), plus a non-default bit that
 * fesetround does not touch: flush-to-zero (MXCSR bit 15, FPCR bit 24) and, on x86, the
 * x87 precision control (single precision). */
static void fpctl_set(int mode, int odd)
{
	assert_int_equal(fesetround(mode), 0);
#if defined(__x86_64__)
	uint32_t mxcsr;
	uint16_t cw;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	mxcsr = odd ? (mxcsr | 0x8000u) : (mxcsr & ~0x8000u);
	__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	cw = (uint16_t)(odd ? (cw & ~0x0300u) : (cw | 0x0300u));
	__asm__ volatile("fldcw %0" : : "m"(cw));
#elif defined(__aarch64__)
	uint64_t fpcr;
	__asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
	fpcr = odd ? (fpcr | (1u << 24)) : (fpcr & ~(uint64_t)(1u << 24));
	__asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#else
	(void)odd;
#endif
}

static int fp_equal(struct fpctl x, struct fpctl y)
{
	return x.a == y.a && x.b == y.b;
}

struct fp {
	struct jd_ctx main, fiber;
	struct fpctl inherited;	/* what the fiber found at its start */
	struct fpctl mine;	/* what it set */
	int rounds;
	int kept;		/* rounds in which the fiber found its own state again */
};

static void fp_fn(void *arg)
{
	struct fp *f = arg;

	f->inherited = fpctl_get();
	fpctl_set(FE_TOWARDZERO, 1);
	f->mine = fpctl_get();
	for (int i = 0; i < f->rounds; i++) {
		jd_ctx_switch(&f->fiber, &f->main);
		if (fp_equal(fpctl_get(), f->mine))
			f->kept++;
	}
	fpctl_set(FE_TONEAREST, 0);
	jd_ctx_switch_final(&f->fiber, &f->main);
}

static void test_fp_control_per_context(void **state)
{
	(void)state;
	struct fp f = { .rounds = 10 };
	void *stack = stack_new(STACK_SIZE);
	fenv_t saved;

	assert_int_equal(fegetenv(&saved), 0);
	/* The creator's state at jd_ctx_make is what the new context starts with. */
	fpctl_set(FE_UPWARD, 0);
	struct fpctl creator = fpctl_get();
	jd_ctx_init_thread(&f.main);
	jd_ctx_make(&f.fiber, stack, STACK_SIZE, fp_fn, &f);

	fpctl_set(FE_DOWNWARD, 0);
	struct fpctl thread = fpctl_get();
	assert_false(fp_equal(thread, creator));

	for (int i = 0; i <= f.rounds; i++) {
		jd_ctx_switch(&f.main, &f.fiber);
		assert_true(fp_equal(fpctl_get(), thread));
	}
	assert_true(fp_equal(f.inherited, creator));
	assert_false(fp_equal(f.mine, thread));
	assert_int_equal(f.kept, f.rounds);

	assert_int_equal(fesetenv(&saved), 0);
	jd_ctx_destroy(&f.fiber);
	jd_ctx_destroy(&f.main);
	stack_free(stack, STACK_SIZE);
}

/* ---- a million switches ------------------------------------------------------------ */

enum { MILLION = 1000000 };

struct pingpong {
	struct jd_ctx main, fiber;
	long counter;
	long limit;
};

static void pingpong_fn(void *arg)
{
	struct pingpong *p = arg;

	while (p->counter < p->limit) {
		p->counter++;
		jd_ctx_switch(&p->fiber, &p->main);
	}
	jd_ctx_switch_final(&p->fiber, &p->main);
}

static void test_million_switches(void **state)
{
	(void)state;
	struct pingpong p = { .counter = 0, .limit = MILLION };
	void *stack = stack_new(STACK_SIZE);
	long mismatches = 0;

	jd_ctx_init_thread(&p.main);
	jd_ctx_make(&p.fiber, stack, STACK_SIZE, pingpong_fn, &p);
	for (long i = 1; i <= MILLION; i++) {
		jd_ctx_switch(&p.main, &p.fiber);
		mismatches += p.counter != i;
	}
	jd_ctx_switch(&p.main, &p.fiber); /* let it finish */
	assert_int_equal(mismatches, 0);
	assert_int_equal(p.counter, MILLION);
	jd_ctx_destroy(&p.fiber);
	jd_ctx_destroy(&p.main);
	stack_free(stack, STACK_SIZE);
}

/* ---- stack alignment at entry ------------------------------------------------------- */

struct align {
	struct jd_ctx main, fiber;
	uintptr_t sp;
	uintptr_t local;
};

static void align_fn(void *arg)
{
	struct align *a = arg;

#ifdef HAVE_PROBES
	a->sp = probe_sp();
#endif
	/* The frame itself, not a local's address: ASan may put locals on a fake stack. */
	a->local = (uintptr_t)__builtin_frame_address(0);
	jd_ctx_switch_final(&a->fiber, &a->main);
}

static void test_stack_alignment(void **state)
{
	(void)state;
	/* Sizes whose top is aligned to 16 and to 8 only, and odd ones. */
	static const size_t sizes[] = { STACK_SIZE, STACK_SIZE - 8, STACK_SIZE - 24,
					STACK_SIZE - 1, 16 * 1024 + 40 };
	void *stack = stack_new(STACK_SIZE);

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct align a = { .sp = 0 };

		jd_ctx_init_thread(&a.main);
		jd_ctx_make(&a.fiber, stack, sizes[i], align_fn, &a);
		jd_ctx_switch(&a.main, &a.fiber);
		/* It ran on the given stack, below its top... */
		assert_true(a.local >= (uintptr_t)stack);
		assert_true(a.local < (uintptr_t)stack + sizes[i]);
#ifdef HAVE_PROBES
		/* ...and calls from it see the ABI's 16-byte alignment. */
		assert_int_equal(a.sp % 16, 0);
		assert_true(a.sp > (uintptr_t)stack && a.sp <= (uintptr_t)stack + sizes[i]);
#endif
		jd_ctx_destroy(&a.fiber);
		jd_ctx_destroy(&a.main);
	}
	stack_free(stack, STACK_SIZE);
}

/* ---- many contexts in a ring ------------------------------------------------------- */

enum { RING = 64, LAPS = 100 };

struct ring;
struct ring_member {
	struct ring *ring;
	int index;
};

struct ring {
	struct jd_ctx main;
	struct jd_ctx ctx[RING];
	struct ring_member member[RING];
	int order[RING * LAPS];	/* who ran, in order */
	int n;
	int finished;
};

static void ring_fn(void *arg)
{
	struct ring_member *m = arg;
	struct ring *r = m->ring;
	const int me = m->index;
	int laps = 0;	/* on this fiber's own stack */
	uint64_t sum = 0;

	for (int lap = 0; lap < LAPS; lap++) {
		r->order[r->n++] = me;
		laps++;
		sum += (uint64_t)me;
		if (me < RING - 1)
			jd_ctx_switch(&r->ctx[me], &r->ctx[me + 1]);
		else
			jd_ctx_switch(&r->ctx[me], &r->main);
	}
	if (laps == LAPS && sum == (uint64_t)me * LAPS)
		r->finished++;
	jd_ctx_switch_final(&r->ctx[me], me < RING - 1 ? &r->ctx[me + 1] : &r->main);
}

static void test_ring(void **state)
{
	(void)state;
	struct ring *r = calloc(1, sizeof(*r));
	char *stacks = stack_new((size_t)RING * STACK_SIZE);

	assert_non_null(r);
	jd_ctx_init_thread(&r->main);
	for (int i = 0; i < RING; i++) {
		r->member[i] = (struct ring_member){ r, i };
		jd_ctx_make(&r->ctx[i], stacks + (size_t)i * STACK_SIZE, STACK_SIZE, ring_fn,
			    &r->member[i]);
	}
	/* Each lap: main -> 0 -> 1 -> ... -> RING-1 -> main. */
	for (int lap = 0; lap < LAPS; lap++) {
		jd_ctx_switch(&r->main, &r->ctx[0]);
		assert_int_equal(r->n, (lap + 1) * RING);
	}
	jd_ctx_switch(&r->main, &r->ctx[0]); /* each one finishes, passing it on */
	assert_int_equal(r->finished, RING);
	for (int i = 0; i < RING * LAPS; i++)
		assert_int_equal(r->order[i], i % RING);
	for (int i = 0; i < RING; i++)
		jd_ctx_destroy(&r->ctx[i]);
	jd_ctx_destroy(&r->main);
	stack_free(stacks, (size_t)RING * STACK_SIZE);
	free(r);
}

/* ---- resumed on another thread ------------------------------------------------------ */

enum { HOPS = 200 };

/* Which thread this is, 1..HOPS (0: the test's main thread).  Read through a function
 * the compiler may not inline or analyse, so that the fiber really reads the TLS of the
 * thread it runs on now, not an address computed before it was suspended (the hazard
 * arch/README.md describes). */
static _Thread_local volatile int thread_id;

#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noipa))
#endif
static int
current_thread_id(void)
{
	return thread_id;
}

struct hop {
	struct jd_ctx fiber;
	struct jd_ctx *back;	/* the context of the thread that resumed the fiber */
	int hops;
	int wrong_thread;	/* resumptions that did not run on the resuming thread */
};

static void hop_fn(void *arg)
{
	struct hop *h = arg;

	for (;;) {
		h->hops++;
		if (current_thread_id() != h->hops)
			h->wrong_thread++;
		if (h->hops == HOPS)
			jd_ctx_switch_final(&h->fiber, h->back);
		jd_ctx_switch(&h->fiber, h->back);
	}
}

struct hop_arg {
	struct hop *hop;
	int id;
};

/* Resumes the fiber once from a new thread; the threads run one at a time. */
static void *hop_thread(void *arg)
{
	struct hop_arg *a = arg;
	struct jd_ctx me;

	thread_id = a->id;
	jd_ctx_init_thread(&me);
	a->hop->back = &me;
	jd_ctx_switch(&me, &a->hop->fiber);
	jd_ctx_destroy(&me);
	return NULL;
}

static void test_resume_on_other_thread(void **state)
{
	(void)state;
	struct hop h = { .hops = 0 };
	void *stack = stack_new(STACK_SIZE);

	jd_ctx_make(&h.fiber, stack, STACK_SIZE, hop_fn, &h);
	for (int i = 0; i < HOPS; i++) {
		struct hop_arg a = { &h, i + 1 };
		pthread_t t;

		assert_int_equal(pthread_create(&t, NULL, hop_thread, &a), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
		assert_int_equal(h.hops, i + 1);
	}
	assert_int_equal(h.wrong_thread, 0);
	jd_ctx_destroy(&h.fiber);
	stack_free(stack, STACK_SIZE);
}

/* ---- a suspended context's locals stay alive --------------------------------------- */

/* A suspended fiber's locals (on ASan's fake stack in ASan builds, where this test
 * turns detect_stack_use_after_return on) stay valid while the thread runs deep call
 * chains of its own, and can be read and written from the thread meanwhile. */
enum { LOCALS = 256, DEPTH = 40 };

struct locals {
	struct jd_ctx main, fiber;
	volatile int *fiber_buf;	/* a local array of the suspended fiber */
	int fiber_ok;
};

static void locals_fn(void *arg)
{
	struct locals *l = arg;
	volatile int buf[LOCALS];

	for (int i = 0; i < LOCALS; i++)
		buf[i] = i * 7;
	l->fiber_buf = buf;
	jd_ctx_switch(&l->fiber, &l->main);
	l->fiber_ok = 1;
	for (int i = 0; i < LOCALS; i++)
		if (buf[i] != i * 7 + 1)
			l->fiber_ok = 0;
	jd_ctx_switch_final(&l->fiber, &l->main);
}

/* Deep calls with arrays on the thread's stack (each frame gets a fake frame). */
static int churn(int depth)
{
	volatile int mine[32];

	for (int i = 0; i < 32; i++)
		mine[i] = depth + i;
	return depth == 0 ? mine[5] : churn(depth - 1) + mine[depth % 32];
}

static void test_suspended_locals_alive(void **state)
{
	(void)state;
	struct locals l = { .fiber_ok = 0 };
	void *stack = stack_new(STACK_SIZE);
	int total = 0;

	jd_ctx_init_thread(&l.main);
	jd_ctx_make(&l.fiber, stack, STACK_SIZE, locals_fn, &l);
	jd_ctx_switch(&l.main, &l.fiber);
	for (int round = 0; round < 100; round++)
		total += churn(DEPTH);
	for (int i = 0; i < LOCALS; i++) {
		assert_int_equal(l.fiber_buf[i], i * 7);
		l.fiber_buf[i] += 1;
	}
	jd_ctx_switch(&l.main, &l.fiber);
	assert_int_equal(l.fiber_ok, 1);
	assert_true(total > 0);
	jd_ctx_destroy(&l.fiber);
	jd_ctx_destroy(&l.main);
	stack_free(stack, STACK_SIZE);
}

/* ---- made again on the same stack ---------------------------------------------------- */

struct remake {
	struct jd_ctx main, fiber;
	int runs;
	int sum;
};

static void remake_fn(void *arg)
{
	struct remake *r = arg;
	volatile char scratch[512]; /* a frame with a buffer (ASan redzones around it) */

	for (size_t i = 0; i < sizeof(scratch); i++)
		scratch[i] = (char)i;
	r->sum += scratch[r->runs % 128];
	r->runs++;
	jd_ctx_switch_final(&r->fiber, &r->main);
}

static void test_remake(void **state)
{
	(void)state;
	enum { TIMES = 1000 };
	struct remake r = { .runs = 0 };
	void *stack = stack_new(STACK_SIZE);
	int want = 0;

	jd_ctx_init_thread(&r.main);
	for (int i = 0; i < TIMES; i++) {
		/* Half the time destroyed first, half the time made again directly. */
		if (i % 2)
			jd_ctx_destroy(&r.fiber);
		jd_ctx_make(&r.fiber, stack, STACK_SIZE - (size_t)(i % 4) * 8, remake_fn, &r);
		jd_ctx_switch(&r.main, &r.fiber);
		want += i % 128;
	}
	assert_int_equal(r.runs, TIMES);
	assert_int_equal(r.sum, want);
	jd_ctx_destroy(&r.fiber);
	jd_ctx_destroy(&r.fiber); /* twice is harmless */
	jd_ctx_destroy(&r.main);
	stack_free(stack, STACK_SIZE);
}

/* ---- in a child process: fn returning, longjmp inside a fiber ---------------------- */

/* Runs child() in a forked process with its stderr captured into buf (NUL-terminated);
 * returns the wait status. */
static int run_child(void (*child)(void), char *buf, size_t size)
{
	int fds[2];
	size_t len = 0;
	int status = 0;

	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		child();
		_exit(0);
	}
	close(fds[1]);
	for (int i = 0; i < 64 && len < size - 1; i++) { /* bounded; EOF ends it */
		ssize_t n = read(fds[0], buf + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static struct jd_ctx child_main, child_fiber;

static void returning_fn(void *arg)
{
	(void)arg;
}

static void child_fn_returns(void)
{
	void *stack = stack_new(STACK_SIZE);

	jd_ctx_init_thread(&child_main);
	jd_ctx_make(&child_fiber, stack, STACK_SIZE, returning_fn, NULL);
	jd_ctx_switch(&child_main, &child_fiber);
	/* not reached if the trap works: exits 0 */
}

/* A fn that returns must abort with a message naming the mistake. */
static void test_fn_return_aborts(void **state)
{
	(void)state;
	char buf[2048];
	int status = run_child(child_fn_returns, buf, sizeof(buf));

	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	assert_non_null(strstr(buf, "returned"));
	assert_non_null(strstr(buf, "jd_ctx_switch_final"));
}

static jmp_buf child_jmp;
static volatile int child_unwound;
static volatile int jump = 1;
static volatile int sink;

static void __attribute__((noinline)) deep_longjmp(int depth)
{
	char frame[128];

	memset(frame, depth, sizeof(frame));
	sink += frame[depth % 128];
	if (depth > 0)
		deep_longjmp(depth - 1);
	else if (jump)
		longjmp(child_jmp, 1);
}

static void longjmp_fn(void *arg)
{
	(void)arg;
	char before[1024];

	memset(before, 1, sizeof(before));
	sink += before[5];
	if (setjmp(child_jmp) == 0)
		deep_longjmp(10);
	else
		child_unwound = 1;
	jd_ctx_switch_final(&child_fiber, &child_main);
}

static void child_longjmp(void)
{
	void *stack = stack_new(STACK_SIZE);

	jd_ctx_init_thread(&child_main);
	jd_ctx_make(&child_fiber, stack, STACK_SIZE, longjmp_fn, NULL);
	jd_ctx_switch(&child_main, &child_fiber);
	_exit(child_unwound ? 0 : 3);
}

/* longjmp inside a fiber works, and ASan knows which stack it unwinds: without the fiber
 * hooks it warns "ASan is ignoring requested __asan_handle_no_return ... False positive
 * error reports may follow", because the fiber's stack is not the thread's. */
static void test_longjmp_in_fiber(void **state)
{
	(void)state;
	char buf[4096];
	int status = run_child(child_longjmp, buf, sizeof(buf));

	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_null(strstr(buf, "ASan is ignoring"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_name),
		cmocka_unit_test(test_fn_receives_arg),
		cmocka_unit_test(test_callee_saved_registers),
		cmocka_unit_test(test_fp_control_per_context),
		cmocka_unit_test(test_million_switches),
		cmocka_unit_test(test_stack_alignment),
		cmocka_unit_test(test_ring),
		cmocka_unit_test(test_resume_on_other_thread),
		cmocka_unit_test(test_suspended_locals_alive),
		cmocka_unit_test(test_remake),
		cmocka_unit_test(test_fn_return_aborts),
		cmocka_unit_test(test_longjmp_in_fiber),
	};

	printf("context switch: %s\n", jd_ctx_name());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
