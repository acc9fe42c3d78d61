/*
 * jobs.c — the CMake example: jobs through a queue, traced with libreef.
 * The events are declared in jobs.reef; reef_add_schema() (CMakeLists.txt)
 * generates jobs.h from it at build time.
 *
 *   REEF_OUTPUT=trace build/jobs [JOBS]    then    reef print trace
 */
#include <stdio.h>
#include <stdlib.h>

#include "jobs.h"

int main(int argc, char **argv)
{
	unsigned jobs = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 100;
	uint64_t total = 0;
	char name[32];
	unsigned i;

	for (i = 0; i < jobs; i++) {
		uint32_t cost = (i * 37u) % 101u;
		snprintf(name, sizeof(name), "job-%u", i);
		reef_job_submit(i, cost, name);
		total += cost;
		reef_job_done(i, cost > 90 ? TRACE_ENUM_OUTCOME_RETRIED : TRACE_ENUM_OUTCOME_OK, total);
	}
	reef_queue_drained(jobs, total);
	reef_shutdown(); /* writes the trace now rather than at exit */
	printf("jobs: %u jobs, %u events, trace in %s\n", jobs, 2 * jobs + 1, reef_trace_dir());
	return 0;
}
