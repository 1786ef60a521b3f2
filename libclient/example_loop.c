/* example_loop.c: libjsched in event-loop mode: submit 10 call jobs without waiting for
 * each reply (pipelined), with the program's own poll() loop, then wait for all of them. */
#include <poll.h>
#include <stdio.h>

#include <jsched/jsched.h>

enum { N = 10 };

struct state {
	int replies, failures;
	uint64_t ids[N];
};

static void submitted(struct jsched_conn *conn, int status, const struct jsched_reply *reply, void *arg)
{
	struct state *st = arg;
	const uint64_t *ids;
	size_t n;
	if (status == 0 && jsched_reply_ids(reply, &ids, &n) == 0) {
		st->ids[st->replies] = ids[0];
	} else {
		fprintf(stderr, "submit: %s\n", jsched_error_message(conn));
		st->failures++;
	}
	st->replies++;
}

int main(void)
{
	struct jsched_conn *conn;
	char why[256];
	if (jsched_connect_error(NULL, "example-loop", &conn, why, sizeof why) < 0) {
		fprintf(stderr, "example_loop: %s\n", why);
		return 1;
	}
	struct jsched_spec *spec = NULL;
	struct state st = { 0 };
	int sent = 0;
	if (jsched_spec_call("echo", "\"hi\"", &spec) == 0)
		for (; sent < N; sent++)
			if (jsched_submit_async(conn, spec, submitted, &st) < 0)
				break;
	/* The program's own loop: poll the connection's fd, let the library process it. */
	while (st.replies < sent) {
		struct pollfd pfd = { .fd = jsched_fd(conn), .events = POLLIN };
		if (jsched_want_write(conn))
			pfd.events |= POLLOUT;
		if (poll(&pfd, 1, 10000) <= 0 || jsched_process(conn) < 0)
			break;
	}
	struct jsched_results *done = NULL;
	int final = st.replies == N && st.failures == 0
			    ? jsched_wait_many(conn, st.ids, N, JSCHED_WAIT_ALL, 30000, &done)
			    : -1;
	printf("%d jobs submitted, %d final\n", st.replies - st.failures, final);
	jsched_results_free(done);
	jsched_spec_free(spec);
	jsched_close(conn);
	return final == N ? 0 : 1;
}
