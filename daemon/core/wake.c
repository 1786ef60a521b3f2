/* daemon/core/wake.c: the loop's wake-up by an eventfd of its own (wake.h says why). */
#include "daemon/core/wake.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void readable_cb(uv_poll_t *h, int status, int events)
{
	struct jd_wake *w = h->data;
	uint64_t count;

	(void)status;
	(void)events;
	/* Read first, then call back: a send after the read wakes the loop again, so the
	 * callback never misses work that a consumed count announced. */
	while (read(w->fd, &count, sizeof(count)) < 0 && errno == EINTR)
		;
	w->cb(w);
}

static void closed_cb(uv_handle_t *h)
{
	struct jd_wake *w = h->data;

	close(w->fd);
	w->fd = -1;
}

int jd_wake_init(uv_loop_t *loop, struct jd_wake *w, void (*cb)(struct jd_wake *w))
{
	int rc;

	w->cb = cb;
	w->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->fd < 0)
		return -errno;
	if ((rc = uv_poll_init(loop, &w->poll, w->fd)) < 0) {
		close(w->fd);
		w->fd = -1;
		return rc;
	}
	w->poll.data = w;
	if ((rc = uv_poll_start(&w->poll, UV_READABLE, readable_cb)) < 0) {
		uv_close((uv_handle_t *)&w->poll, closed_cb); /* closes the fd after */
		return rc;
	}
	return 0;
}

void jd_wake_send(struct jd_wake *w)
{
	uint64_t one = 1;

	/* EAGAIN only at a count of 2^64 - 2, which the loop's reads never let build up;
	 * EINTR: try again. */
	while (write(w->fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

void jd_wake_close(struct jd_wake *w)
{
	if (w->fd < 0 || uv_is_closing((uv_handle_t *)&w->poll))
		return;
	uv_close((uv_handle_t *)&w->poll, closed_cb);
}
