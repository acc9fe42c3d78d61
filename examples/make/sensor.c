/*
 * sensor.c — the Make example: readings of a few sensors, traced with
 * libreef. The events are declared in sensor.reef; the Makefile runs
 * `reef gen` on it before compiling this file.
 *
 *   REEF_OUTPUT=trace build/sensor [READINGS]    then    reef print trace
 */
#include <stdio.h>
#include <stdlib.h>

#include "sensor.h"

#define CHANNELS 3
#define THRESHOLD 80.0

int main(int argc, char **argv)
{
	unsigned readings = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 50;
	unsigned i, ch, events = 0;

	for (i = 0; i < readings; i++) {
		for (ch = 0; ch < CHANNELS; ch++) {
			double celsius = 20.0 + (double)((i * 7 + ch * 13) % 70) + ch * 0.25;
			reef_sensor_read(ch, celsius);
			events++;
			if (celsius > THRESHOLD) {
				reef_sensor_alarm(ch, celsius, "too hot");
				events++;
			}
		}
	}
	reef_shutdown(); /* writes the trace now rather than at exit */
	printf("sensor: %u readings, %u events, trace in %s\n", readings * CHANNELS, events,
	       reef_trace_dir());
	return 0;
}
