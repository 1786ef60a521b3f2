/* example.c: submit a call job to jschedd, wait for it, print its result. */
#include <stdio.h>

#include <jsched/jsched.h>

int main(void)
{
	struct jsched_conn *conn;
	char why[256];
	/* NULL: the default socket ($JSCHED_SOCKET, $XDG_RUNTIME_DIR/jschedd.sock, ...) */
	if (jsched_connect_error(NULL, "example", &conn, why, sizeof why) < 0) {
		fprintf(stderr, "example: %s\n", why);
		return 1;
	}
	struct jsched_spec *spec = NULL;
	struct jsched_result *res = NULL;
	uint64_t id = 0;
	int r = jsched_spec_call("echo", "{\"hello\": \"world\"}", &spec);
	if (r == 0)
		r = jsched_submit(conn, spec, &id);
	if (r == 0)
		r = jsched_wait(conn, id, -1, &res); /* -1: no time limit */
	int status = 1;
	if (r == 0) {
		printf("job %llu %s: %s\n", (unsigned long long)id, res->state_name,
		       res->value_json != NULL ? res->value_json : "(no value)");
		status = res->state == JSCHED_STATE_SUCCEEDED ? 0 : 1;
	} else {
		fprintf(stderr, "example: %s (%s)\n", jsched_strerror(r), jsched_error_message(conn));
	}
	jsched_result_free(res);
	jsched_spec_free(spec);
	jsched_close(conn);
	return status;
}
