/*
 * trivial.c — the cheapest filter and sink possible, for bench/plugins:
 * what the host's call per event costs, with nothing done in it.
 * -DSINK builds the sink (each message consumed, nothing kept), else the
 * filter (every event kept).
 */
#include "reef_plugin.h"

__attribute__((unused)) static int keep_all(void *state, const reef_reader *ev)
{
	(void)state;
	(void)ev;
	return 1;
}

__attribute__((unused)) static reef_status consume(void *state, const reef_reader *m, reef_message_kind kind)
{
	(void)state;
	(void)m;
	(void)kind;
	return REEF_OK;
}

__attribute__((unused)) static reef_status finish(void *state, reef_status status, const char **lami)
{
	(void)state;
	(void)status;
	(void)lami;
	return REEF_OK;
}

static const reef_plugin plugin = {
	.abi = REEF_PLUGIN_ABI,
	.size = sizeof(reef_plugin),
#ifdef SINK
	.name = "nothing",
	.description = "consumes every message and does nothing",
	.kinds = REEF_PLUGIN_SINK,
	.consume = consume,
	.finish = finish,
#else
	.name = "all",
	.description = "keeps every event",
	.kinds = REEF_PLUGIN_FILTER,
	.filter = keep_all,
#endif
	.version = "0",
};

const reef_plugin *reef_plugin_describe(void)
{
	return &plugin;
}
