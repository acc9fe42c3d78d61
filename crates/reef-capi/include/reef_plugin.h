/*
 * reef_plugin.h — writing a reef plugin in C: a filter, a sink or an
 * analysis that every reef front end loads (docs/plugins.md).
 *
 * A plugin is a shared object that exports one function,
 * reef_plugin_describe(), returning a static description of what it does.
 * It reads each event with the functions of reef_reader.h, given a handle
 * on the host's current message: the host (the reef command) provides
 * those functions itself, so build the plugin without linking anything:
 *
 *     cc -shared -fPIC -O2 -I$(reef_include) my_plugin.c -o my_plugin.so
 *
 * A plugin runs inside reef's process: a plugin that crashes takes reef
 * with it. Everything else it does wrong — a wrong ABI version, a missing
 * function, a failing status, malformed results — is reported by reef
 * with the plugin's name and a non-zero exit.
 */
#ifndef REEF_PLUGIN_H
#define REEF_PLUGIN_H

#include "reef_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface. A host loads plugins built for its own
 * version and refuses others, saying which version each side has. */
#define REEF_PLUGIN_ABI 1

/* What a plugin does (reef_plugin.kinds, any combination). */
#define REEF_PLUGIN_FILTER 1u   /* keeps or drops events: `filter` */
#define REEF_PLUGIN_SINK 2u     /* consumes the messages: `consume`, `finish` */
#define REEF_PLUGIN_ANALYSIS 4u /* consumes them and gives LAMI tables */

typedef struct reef_plugin {
	/* REEF_PLUGIN_ABI, and sizeof(reef_plugin) as the plugin saw it. */
	uint32_t abi;
	uint32_t size;
	/* Its name on the command line: letters, digits, '-' and '_'. */
	const char *name;
	/* Its own version and a one-line description, for `reef plugins`. */
	const char *version;
	const char *description;
	/* REEF_PLUGIN_FILTER | REEF_PLUGIN_SINK | REEF_PLUGIN_ANALYSIS. */
	uint32_t kinds;

	/* Makes the state of one reading (NULL: the state is NULL). `args`
	 * is the text after `=` on the command line (`--plugin-filter
	 * NAME=ARGS`), or NULL. A status other than REEF_OK refuses to run;
	 * `error` then says why, given the state set so far (maybe NULL). */
	reef_status (*init)(const char *args, void **state);
	/* Frees the state (NULL: nothing to free). Called once per `init`
	 * that succeeded, whatever happened in between. */
	void (*fini)(void *state);
	/* The message of the last failing call ("" or NULL: none). */
	const char *(*error)(void *state);

	/* Filters: 1 keeps `event`, 0 drops it, a negative reef_status stops
	 * the reading with `error`'s message. Called for events only, in time
	 * order, after `--filter`; notices are always kept. */
	int (*filter)(void *state, const reef_reader *event);

	/* Sinks and analyses: every message in time order (events and
	 * notices; `kind` says which). A status other than REEF_OK stops the
	 * reading. */
	reef_status (*consume)(void *state, const reef_reader *message,
			       reef_message_kind kind);
	/* Sinks and analyses: the reading ended (`status`: REEF_END, or the
	 * reading's error, REEF_ERR_READ, when the traces are damaged: what
	 * came before was given). An analysis sets `*lami` to its results, a
	 * LAMI 1.0 results document (JSON, UTF-8, NUL-terminated) that stays
	 * valid until `fini`; a sink leaves it. */
	reef_status (*finish)(void *state, reef_status status, const char **lami);
	/* An analysis: its LAMI 1.0 metadata document (title, table classes),
	 * static. NULL for other kinds. */
	const char *(*metadata)(void);
} reef_plugin;

/* The one function a plugin exports. */
const reef_plugin *reef_plugin_describe(void);

#ifdef __cplusplus
}
#endif

#endif /* REEF_PLUGIN_H */
